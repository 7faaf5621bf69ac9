package redact

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
)

// testKey is the HMAC key of the tests: 32 fixed bytes.
var testKey = []byte("envsieve-redact-test-key-32bytes")

func mustCompile(t testing.TB, secrets []Secret, opt Options) *Set {
	t.Helper()
	s, err := Compile(testKey, secrets, opt)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	return s
}

// refRedact is the reference: a slow, obviously correct, whole-input redactor. It
// finds every occurrence of every pattern, merges those that overlap, and names each
// merged region after its leftmost-longest occurrence.
func refRedact(s *Set, in []byte) []byte {
	type occ struct {
		start, end int
		tok        int32
	}
	var occs []occ
	for i, p := range s.pats {
		for off := 0; ; {
			j := bytes.Index(in[off:], p)
			if j < 0 {
				break
			}
			occs = append(occs, occ{off + j, off + j + len(p), s.patToks[i]})
			off += j + 1
		}
	}
	slices.SortFunc(occs, func(a, b occ) int {
		if a.start != b.start {
			return a.start - b.start
		}
		return b.end - a.end
	})
	var out []byte
	at := 0
	for k := 0; k < len(occs); {
		r := occs[k]
		for k++; k < len(occs) && occs[k].start < r.end; k++ {
			r.end = max(r.end, occs[k].end)
		}
		out = append(out, in[at:r.start]...)
		out = append(out, s.tokens[r.tok]...)
		at = r.end
	}
	return append(out, in[at:]...)
}

// findPattern returns the position of the first pattern of s found in b, or -1.
func findPattern(s *Set, b []byte) int {
	first := -1
	for _, p := range s.pats {
		if j := bytes.Index(b, p); j >= 0 && (first < 0 || j < first) {
			first = j
		}
	}
	return first
}

// livePartial returns the length of the longest suffix of b that is a proper prefix of
// a pattern of s: the bytes a writer may hold back.
func livePartial(s *Set, b []byte) int {
	best := 0
	for _, p := range s.pats {
		for n := min(len(p)-1, len(b)); n > best; n-- {
			if bytes.Equal(b[len(b)-n:], p[:n]) {
				best = n
				break
			}
		}
	}
	return best
}

// excerpt describes b around position at for a failure message without showing a
// secret: the whole of b is masked by the reference first, and at most 32 bytes on each
// side are quoted.
func excerpt(s *Set, b []byte, at int) string {
	masked := refRedact(s, b)
	at = min(max(at, 0), len(masked))
	lo, hi := max(at-32, 0), min(at+32, len(masked))
	return fmt.Sprintf("at byte %d of %d: %q", at, len(b), masked[lo:hi])
}

// diffAt returns the first position where a and b differ, or -1.
func diffAt(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// writeChunks writes in through a new writer over s in pieces cut at cuts (sorted
// positions), closes it and returns the output.
func writeChunks(t testing.TB, s *Set, in []byte, cuts []int) []byte {
	t.Helper()
	var out bytes.Buffer
	w := newWriter(&out, s)
	prev := 0
	for _, c := range append(cuts, len(in)) {
		n, err := w.Write(in[prev:c])
		if err != nil || n != c-prev {
			t.Fatalf("Write(%d bytes) = %d, %v", c-prev, n, err)
		}
		prev = c
	}
	if err := w.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return out.Bytes()
}

// checkOutput fails the test if got differs from want or shows a pattern of s.
func checkOutput(t testing.TB, s *Set, how string, got, want []byte) {
	t.Helper()
	if d := diffAt(got, want); d >= 0 {
		t.Fatalf("%s: output differs from the reference %s (got %d bytes, want %d)", how, excerpt(s, got, d), len(got), len(want))
	}
	if j := findPattern(s, got); j >= 0 {
		t.Fatalf("%s: a pattern is visible in the output at byte %d", how, j)
	}
}
