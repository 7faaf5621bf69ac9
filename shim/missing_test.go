package shim

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLocateCompanions: a companion missing beside the shim is reported by
// its own name (not as a missing shim), and still wraps ErrNotFound; one
// that is there, executable, is found.
func TestLocateCompanions(t *testing.T) {
	dir := t.TempDir()
	lib := filepath.Join(dir, libName)
	if err := os.WriteFile(lib, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		locate func(string) (string, error)
	}{{StartName, LocateStart}, {InitName, LocateInit}} {
		_, err := tc.locate(lib)
		var me *missingError
		if !errors.Is(err, ErrNotFound) || !errors.As(err, &me) || me.Name != tc.name {
			t.Fatalf("%s missing: %v", tc.name, err)
		}
		if msg := err.Error(); !strings.HasPrefix(msg, tc.name+" is not installed") || strings.Contains(msg, libName+" not found") {
			t.Errorf("%s missing: %q", tc.name, msg)
		}
		// Not executable is not installed either.
		p := filepath.Join(dir, tc.name)
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := tc.locate(lib); !errors.Is(err, ErrNotFound) {
			t.Errorf("%s not executable: %v", tc.name, err)
		}
		os.Chmod(p, 0o755)
		if got, err := tc.locate(lib); err != nil || got != p {
			t.Errorf("%s: %q, %v", tc.name, got, err)
		}
	}
}
