//go:build linux

package secret

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelperPlanted plays an agent that writes its own `pass` into a
// directory of its user that comes first in PATH (~/.local/bin): the
// launcher must run the system's helper, never the planted one, and give
// it a minimal environment. The tree's uid is nobody's (a test seam: the
// test runs as root, which may write anywhere).
func TestHelperPlanted(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the planted directory to another user; as a user, TestTrusted checks the rule")
	}
	testOnlyUID = 65534
	t.Cleanup(func() { testOnlyUID = -1 })
	root := t.TempDir()
	os.Chmod(root, 0o755)
	user := filepath.Join(root, "home", ".local", "bin")
	system := filepath.Join(root, "usr", "bin")
	for _, d := range []string{user, system} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{filepath.Join(root, "home"), filepath.Join(root, "home", ".local"), user} {
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	planted := filepath.Join(user, "pass")
	if err := os.WriteFile(planted, []byte("#!/bin/sh\necho planted-$SOME_OTHER_SECRET\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chown(planted, 65534, 65534)
	real := filepath.Join(system, "pass")
	if err := os.WriteFile(real, []byte("#!/bin/sh\necho \"real path=$PATH other=${SOME_OTHER_SECRET:-none} vault=${VAULT_ADDR:-none}\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + user + ":" + system + ":/usr/bin:/bin", "HOME=" + filepath.Join(root, "home"),
		"SOME_OTHER_SECRET=launcher-only-value", "VAULT_ADDR=http://vault"}

	c := &Command{Argv: []string{"pass", "show", "x"}, Env: env}
	v, err := c.Fetch(context.Background(), "X")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(v, "planted") {
		t.Fatal("the planted helper ran")
	}
	if strings.Contains(v, user) || strings.Contains(v, "launcher-only-value") {
		t.Errorf("the helper got a writable PATH entry or the launcher's other values: %q", v)
	}
	if !strings.Contains(v, "real path=") {
		t.Errorf("helper output %q", v)
	}

	// Only the planted one: refused, with the reason.
	os.Remove(real)
	_, err = c.Fetch(context.Background(), "X")
	if err == nil || !strings.Contains(err.Error(), "can write") {
		t.Fatalf("Fetch with only a planted helper: %v", err)
	}
	// Named by its path in a writable place: refused too.
	c.Argv = []string{planted}
	if _, err := c.Fetch(context.Background(), "X"); err == nil || !strings.Contains(err.Error(), "can write") {
		t.Fatalf("Fetch of a planted absolute path: %v", err)
	}
}

// TestTrusted: a directory of the tree's user is not trusted, nor anything
// below it; a system directory is; a sticky /tmp above a root-owned one is
// not held against it.
func TestTrusted(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "own")
	if err := os.MkdirAll(filepath.Join(own, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// As root, give it to the uid that plays the tree.
		testOnlyUID = 65534
		t.Cleanup(func() { testOnlyUID = -1 })
		for _, p := range []string{own, filepath.Join(own, "bin")} {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := trusted(filepath.Join(own, "bin")); err == nil {
		t.Errorf("a directory of the tree's user is trusted")
	}
	if err := trusted("/usr/bin"); err != nil {
		t.Errorf("/usr/bin: %v", err)
	}
	if os.Geteuid() == 0 {
		sys := filepath.Join(dir, "sys")
		os.MkdirAll(sys, 0o755)
		os.Chmod(dir, 0o755)
		if err := trusted(sys); err != nil {
			t.Errorf("a root-owned directory under /tmp: %v", err)
		}
	}
}
