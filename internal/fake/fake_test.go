package fake

import (
	"strings"
	"testing"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// FuzzFake: a fake keeps the real value's length, known prefix and the
// alphabet of each character, and is never the real value.
func FuzzFake(f *testing.F) {
	for _, s := range []string{"ghp_" + strings.Repeat("R3alT0ken", 4), "sk-ant-api03-abcDEF123_-xyz", "AKIAIOSFODNN7EXAMPLE", "0123456789abcdef0123456789abcdef", "x", ""} {
		f.Add(s, "NAME")
	}
	f.Fuzz(func(t *testing.T, real, name string) {
		fake := Of(testKey, name, real)
		if len(fake) != len(real) {
			t.Fatalf("length %d, want %d", len(fake), len(real))
		}
		if real != "" && fake == real && strings.ContainsAny(real, lower+upper+digits) {
			t.Fatal("the fake is the real value")
		}
		p := prefixOf(real)
		if !strings.HasPrefix(fake, p) {
			t.Fatalf("prefix %q lost", p)
		}
		for i := len(p); i < len(real); i++ {
			r, c := real[i], fake[i]
			same := func(set string) bool { return strings.IndexByte(set, r) >= 0 == (strings.IndexByte(set, c) >= 0) }
			if !isHex(real[len(p):], hexLow) && !isHex(real[len(p):], hexHigh) && (!same(lower) || !same(upper) || !same(digits)) {
				t.Fatalf("byte %d changed class", i)
			}
			if strings.IndexByte(lower+upper+digits, r) < 0 && r != c {
				t.Fatalf("byte %d (not alphanumeric) changed", i)
			}
		}
		if Of(testKey, name, real) != fake {
			t.Fatal("not stable")
		}
	})
}
