//go:build linux

package main

import (
	"os"
	"path/filepath"
	"testing"
)

// sysDir makes dir/sys, a directory the unprivileged tree cannot write
// (the test runs as root), holding each program of progs (name -> its
// script, mode 0755): programs a rule may grant to. It returns the path.
func sysDir(t *testing.T, dir string, progs map[string]string) string {
	t.Helper()
	sys := filepath.Join(dir, "sys")
	if err := os.Mkdir(sys, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, script := range progs {
		if err := os.WriteFile(filepath.Join(sys, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return sys
}

// writePolicy writes text as dir/p.yaml (0644) and returns its path.
func writePolicy(t *testing.T, dir, text string) string {
	t.Helper()
	pol := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(pol, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return pol
}
