package shim_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/shim"
)

func TestStatic(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "script")
	os.WriteFile(script, []byte("#!/bin/sh\n"), 0o755)
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/bin/sh", false},
		{script, false},
		{shimtest.Program(t, "static", "int main(void) { return 0; }\n", "-static"), true},
		{shimtest.Program(t, "dynamic", "int main(void) { return 0; }\n"), false},
	} {
		got, err := shim.Static(tc.path)
		if err != nil {
			t.Fatalf("Static(%s): %v", tc.path, err)
		}
		if got != tc.want {
			t.Errorf("Static(%s) = %v, want %v", tc.path, got, tc.want)
		}
	}
	if _, err := shim.Static(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing file is not an error")
	}
}

func TestLocate(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "bin", "envsieve")
	lib := filepath.Join(dir, "lib", "envsieve", "libenvsieve.so")
	os.MkdirAll(filepath.Dir(exe), 0o755)
	os.MkdirAll(filepath.Dir(lib), 0o755)
	if _, err := shim.Locate("", exe); !errors.Is(err, shim.ErrNotFound) {
		t.Fatalf("nothing installed: %v", err)
	}
	os.WriteFile(lib, nil, 0o644)
	if got, err := shim.Locate("", exe); err != nil || got != lib {
		t.Errorf("../lib/envsieve: %q, %v", got, err)
	}
	next := filepath.Join(dir, "bin", "libenvsieve.so")
	os.WriteFile(next, nil, 0o644)
	if got, err := shim.Locate("", exe); err != nil || got != next {
		t.Errorf("next to the binary: %q, %v", got, err)
	}
	if _, err := shim.Locate(filepath.Join(dir, "nope.so"), exe); !errors.Is(err, shim.ErrNotFound) {
		t.Errorf("a missing override falls back: %v", err)
	}
	if got := shim.Preload("/l.so", []string{"LD_PRELOAD=/other.so"}); got != "/l.so:/other.so" {
		t.Errorf("Preload = %q", got)
	}
}
