package detect

import "testing"

// TestKindIndex: every kind this package reports has a byte of its own that
// KindAt turns back; any other kind has none.
func TestKindIndex(t *testing.T) {
	seen := map[uint8]Kind{}
	for _, k := range kinds[1:] {
		i := k.Index()
		if i == 0 || KindAt(i) != k {
			t.Errorf("%q: Index %d, KindAt %q", k, i, KindAt(i))
		}
		if other, dup := seen[i]; dup {
			t.Errorf("%q and %q share the index %d", k, other, i)
		}
		seen[i] = k
	}
	if k, ok := Value("ghp_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3z5A"); !ok || KindAt(k.Index()) != k {
		t.Errorf("a GitHub token: kind %q, index %d", k, k.Index())
	}
	for _, k := range []Kind{"", "no-such-kind"} {
		if i := k.Index(); i != 0 {
			t.Errorf("%q: Index %d, want 0", k, i)
		}
	}
	if k := KindAt(0); k != "" {
		t.Errorf("KindAt(0) = %q", k)
	}
	if k := KindAt(255); k != "" {
		t.Errorf("KindAt(255) = %q", k)
	}
}
