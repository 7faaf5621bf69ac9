package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestHomeMaskSet: a path is masked when it or where it leads lies at or
// beneath a mask, or beneath where a masked link leads (a mask follows
// links); a sibling with a common prefix is not.
func TestHomeMaskSet(t *testing.T) {
	home := t.TempDir()
	for _, d := range []string{".aws", "dotfiles", ".config/app", ".gnupg-real"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".aws/credentials", "dotfiles/npmrc", ".gnupg-real/key"} {
		if err := os.WriteFile(filepath.Join(home, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		if err := os.Symlink(filepath.Join(home, target), filepath.Join(home, name)); err != nil {
			t.Fatal(err)
		}
	}
	link("dotfiles/npmrc", ".npmrc")              // a masked name that is a link
	link(".aws/credentials", ".config/app/creds") // a link to a masked file
	link(".gnupg-real", ".gnupg")                 // a masked directory that is a link
	m := newMaskSet([]string{filepath.Join(home, ".aws/credentials"), filepath.Join(home, ".npmrc"), filepath.Join(home, ".gnupg")})
	for rel, want := range map[string]bool{
		".aws/credentials":  true,
		".aws/credentials2": false,
		".aws":              false,
		".npmrc":            true,
		"dotfiles/npmrc":    true, // where the masked link leads
		".config/app/creds": true,
		".gnupg-real/key":   true,
		".gnupg/key":        true,
		".config/app/other": false,
	} {
		if got := m.covers(filepath.Join(home, rel)); got != want {
			t.Errorf("covers(~/%s) = %v, want %v", rel, got, want)
		}
	}
}
