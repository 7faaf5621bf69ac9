package proc_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/envsieve/envsieve/internal/proc"
)

func writeExe(t *testing.T, dir, name, body string, mode os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLookPath(t *testing.T) {
	dir := t.TempDir()
	exe := writeExe(t, dir, "tool", "#!/bin/sh\n", 0o755)
	writeExe(t, dir, "plain", "x", 0o644)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		file    string
		env     []string
		want    string
		notFnd  bool
		notExec bool
	}{
		{"found in the child's PATH", "tool", []string{"PATH=/nonexistent:" + dir}, exe, false, false},
		{"the first PATH wins", "tool", []string{"PATH=" + dir, "PATH=/nonexistent"}, exe, false, false},
		{"not in PATH", "tool", []string{"PATH=/nonexistent"}, "", true, false},
		{"no PATH at all", "tool", []string{}, "", true, false},
		{"relative entries are skipped", "tool", []string{"PATH=.:" + filepath.Base(dir) + "::"}, "", true, false},
		{"a path is used as it is", exe, []string{}, exe, false, false},
		{"not executable", "plain", []string{"PATH=" + dir}, "", false, true},
		{"a directory is not executable", filepath.Join(dir, "sub"), nil, "", false, true},
		{"a missing path", filepath.Join(dir, "nope"), nil, "", true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := proc.LookPath(tt.file, tt.env)
			var nf *proc.NotFoundError
			switch {
			case tt.notFnd:
				if !errors.As(err, &nf) {
					t.Fatalf("err = %v, want a *NotFoundError", err)
				}
			case tt.notExec:
				if !errors.Is(err, proc.ErrNotExecutable) {
					t.Fatalf("err = %v, want ErrNotExecutable", err)
				}
			default:
				if err != nil || got != tt.want {
					t.Fatalf("LookPath = %q, %v; want %q", got, err, tt.want)
				}
			}
		})
	}
}

// TestRelativePathNeverSearched runs in the directory that holds the program:
// "." in PATH must still not find it.
func TestRelativePathNeverSearched(t *testing.T) {
	dir := t.TempDir()
	writeExe(t, dir, "here", "#!/bin/sh\n", 0o755)
	t.Chdir(dir)
	if _, err := proc.LookPath("here", []string{"PATH=."}); err == nil {
		t.Fatal("found a program through a relative PATH entry")
	}
}

func TestNilEnvIsAnError(t *testing.T) {
	c := &proc.Cmd{Path: "/bin/true", Args: []string{"true"}}
	if err := c.Run(); !errors.Is(err, proc.ErrNilEnv) {
		t.Fatalf("Run with a nil Env: %v, want ErrNilEnv", err)
	}
	if err := proc.Exec("/bin/true", []string{"true"}, nil); !errors.Is(err, proc.ErrNilEnv) {
		t.Fatalf("Exec with a nil Env: %v, want ErrNilEnv", err)
	}
}

// TestEmptyEnvStartsEmpty: an empty, non-nil Env gives the child nothing,
// even though the test process has an environment of its own.
func TestEmptyEnvStartsEmpty(t *testing.T) {
	t.Setenv("LAUNCH_TEST_CANARY", "leaked")
	var out bytes.Buffer
	c := &proc.Cmd{Path: "/usr/bin/env", Args: []string{"env"}, Env: []string{}, Stdout: &out}
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Fatalf("child with an empty Env saw %d bytes of environment", out.Len())
	}
}
