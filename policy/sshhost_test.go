package policy

import (
	"strings"
	"testing"
)

// FuzzSSHHost: a host the policy accepts is accepted again as it was
// normalized, unchanged (the filter reads that form), and holds nothing
// but a host's characters.
func FuzzSSHHost(f *testing.F) {
	for _, s := range []string{"github.com", "[::1]:2222", "::1", "[Git.Corp]:22", "2001:db8::*", "10.0.0.2:2222", "[x]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		v, ok := sshHost(h)
		if !ok {
			return
		}
		if w, ok := sshHost(v); !ok || w != v {
			t.Fatalf("%q is %q, which is %q, %v", h, v, w, ok)
		}
		if strings.ContainsAny(v, " \t\n,!|") || v != strings.ToLower(v) {
			t.Fatalf("%q is %q", h, v)
		}
	})
}
