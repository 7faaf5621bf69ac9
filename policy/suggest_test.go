package policy

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDidYouMean(t *testing.T) {
	profiles := []string{"generic", "claude", "codex", "gemini", "qwen", "aider", "amp", "copilot", "opencode"}
	for _, tc := range []struct {
		name  string
		known []string
		want  string
	}{
		{"claudee", profiles, "claude"},
		{"Claude", profiles, "claude"},
		{"cladue", profiles, "claude"},
		{"codx", profiles, "codex"},
		{"open", profiles, "opencode"},
		{"gemeni", profiles, "gemini"},
		{"xyz", profiles, ""},
		{"vim", profiles, ""},
		{"", profiles, ""},
		{"claude", profiles, ""}, // a name that is known needs no suggestion
		{"alow", []string{"allow", "deny", "groups"}, "allow"},
		{"grups", []string{"allow", "deny", "groups"}, "groups"},
		{"clod", []string{"cloud", "node", "proxy"}, "cloud"},
		{"x", []string{"y"}, "y"},
		{"ab", []string{"xy"}, ""},
	} {
		got := closest(tc.name, tc.known)
		if got != tc.want {
			t.Errorf("closest(%q) = %q, want %q", tc.name, got, tc.want)
		}
		if s := DidYouMean(tc.name, tc.known); (s == "") != (tc.want == "") || !strings.Contains(s, tc.want) {
			t.Errorf("DidYouMean(%q) = %q", tc.name, s)
		}
	}
}

func TestDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}, {"é", "e", 1}, {"abc", "abc", 0}} {
		if got := distance(tc.a, tc.b); got != tc.d {
			t.Errorf("distance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}

// FuzzDidYouMean: a suggestion is always one of the known names, never the
// name itself, and the distance is a metric (symmetric, zero only for equal
// strings, at most the longer length).
func FuzzDidYouMean(f *testing.F) {
	f.Add("claudee", "claude", "codex")
	f.Add("", "", "x")
	f.Add("ÄÖ", "äö", "\xff")
	f.Fuzz(func(t *testing.T, name, k1, k2 string) {
		known := []string{k1, k2}
		got := closest(name, known)
		if got != "" && got != k1 && got != k2 {
			t.Fatalf("closest(%q, %q) = %q: not known", name, known, got)
		}
		if got == name && got != "" {
			t.Fatalf("closest(%q) suggested the name itself", name)
		}
		if s := DidYouMean(name, known); (s == "") != (got == "") {
			t.Fatalf("DidYouMean(%q) = %q, closest %q", name, s, got)
		}
		if len(name) > 64 || len(k1) > 64 {
			return
		}
		d, e := distance(name, k1), distance(k1, name)
		if d != e || (d == 0) != (string([]rune(name)) == string([]rune(k1))) || d > max(utf8.RuneCountInString(name), utf8.RuneCountInString(k1)) {
			t.Fatalf("distance(%q, %q) = %d, reverse %d", name, k1, d, e)
		}
	})
}
