package sieve

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/compiled"
	"github.com/envsieve/envsieve/policy"
)

// TestSortKept checks the kept entries' merge sort against sorting the
// texts with compareKeys, for sizes around its run length and keys that
// share long prefixes.
func TestSortKept(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	stems := []string{"A", "AB", "ABCDEFG", "ABCDEFGH", "ABCDEFGHIJKLMNOP", "ABCDEFGHIJKLMNOPQ", "MYAPP_SETTING_", "Z", "_", "a"}
	for _, n := range []int{0, 1, 2, 7, 8, 9, 15, 16, 17, 33, 100, 301} {
		seen := map[string]bool{}
		var texts []string
		for len(texts) < n {
			key := stems[r.IntN(len(stems))]
			for range r.IntN(4) {
				key += string("09AZaz_"[r.IntN(7)])
			}
			if !seen[key] {
				seen[key] = true
				texts = append(texts, key+"="+strings.Repeat("v", r.IntN(3)))
			}
		}
		kept := make([]keptEntry, len(texts))
		for i, kv := range texts {
			eq := strings.IndexByte(kv, '=')
			p0, p1 := keyPrefix(kv, eq)
			kept[i] = keptEntry{p0: p0, p1: p1, ref: int32(i)}
		}
		text := func(e keptEntry) string { return texts[e.ref] }
		var got []string
		for _, e := range sortKept(kept, make([]keptEntry, len(kept)), text) {
			got = append(got, text(e))
		}
		want := slices.Clone(texts)
		slices.SortFunc(want, compareKeys)
		if !slices.Equal(got, want) {
			t.Errorf("n=%d:\n got %q\nwant %q", n, got, want)
		}
	}
}

// TestScanKey checks scanKey against the definitions it folds together:
// the first '=', ValidName and HashName.
func TestScanKey(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	alphabet := "AZaz09_=-. \x00\x80\xff"
	for i := range 200000 {
		var b strings.Builder
		for range r.IntN(24) {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		kv := b.String()
		if i%3 == 0 { // mostly valid keys
			kv = fmt.Sprintf("K%d_%s", i, kv)
		}
		h, eq, ok := scanKey(kv)
		wantEq := strings.IndexByte(kv, '=')
		if eq != wantEq {
			t.Fatalf("scanKey(%q): eq %d, want %d", kv, eq, wantEq)
		}
		wantOK := eq > 0 && policy.ValidName(kv[:eq])
		if ok != wantOK {
			t.Fatalf("scanKey(%q): ok %v, want %v", kv, ok, wantOK)
		}
		if ok && h != compiled.HashName(kv[:eq]) {
			t.Fatalf("scanKey(%q): hash %#x, want HashName %#x", kv, h, compiled.HashName(kv[:eq]))
		}
	}
}
