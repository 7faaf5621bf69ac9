package launch_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
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
			got, err := launch.LookPath(tt.file, tt.env)
			var nf *launch.NotFoundError
			switch {
			case tt.notFnd:
				if !errors.As(err, &nf) {
					t.Fatalf("err = %v, want a *NotFoundError", err)
				}
			case tt.notExec:
				if !errors.Is(err, launch.ErrNotExecutable) {
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
	if _, err := launch.LookPath("here", []string{"PATH=."}); err == nil {
		t.Fatal("found a program through a relative PATH entry")
	}
}

func TestNilEnvIsAnError(t *testing.T) {
	c := &launch.Cmd{Path: "/bin/true", Args: []string{"true"}}
	if err := c.Run(); !errors.Is(err, launch.ErrNilEnv) {
		t.Fatalf("Run with a nil Env: %v, want ErrNilEnv", err)
	}
	if err := launch.Exec("/bin/true", []string{"true"}, nil); !errors.Is(err, launch.ErrNilEnv) {
		t.Fatalf("Exec with a nil Env: %v, want ErrNilEnv", err)
	}
}

// TestEmptyEnvStartsEmpty: an empty, non-nil Env gives the child nothing,
// even though the test process has an environment of its own.
func TestEmptyEnvStartsEmpty(t *testing.T) {
	t.Setenv("LAUNCH_TEST_CANARY", "leaked")
	var out bytes.Buffer
	c := &launch.Cmd{Path: "/usr/bin/env", Args: []string{"env"}, Env: []string{}, Stdout: &out}
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Fatalf("child with an empty Env saw %d bytes of environment", out.Len())
	}
}

func TestCommand(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("version: 1\nbase: minimal\nrules:\n  - {match: {command: env}, allow: [GITHUB_TOKEN]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	parent := []string{"PATH=/usr/bin:/bin", "HOME=/h", "GITHUB_TOKEN=t0k", "AWS_SECRET_ACCESS_KEY=x"}
	c, err := launch.Command(p, parent, sieve.Request{}, nil, "env")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	c.Stdout = &out
	if err := c.Run(); err != nil {
		t.Fatal(err)
	}
	got := strings.Fields(out.String())
	want := []string{"GITHUB_TOKEN=t0k", "HOME=/h", "PATH=/usr/bin:/bin"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("child env keys %d, want exactly GITHUB_TOKEN HOME PATH", len(got))
	}
	if c.Result == nil || c.Result.Rule == nil {
		t.Error("Command did not record the rule it chose")
	}
	if c.ProcessState() == nil || c.ProcessState().ExitCode() != 0 {
		t.Error("no exit status")
	}
}

func TestCommandNotFound(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("version: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = launch.Command(p, []string{"PATH=/nonexistent"}, sieve.Request{}, nil, "env")
	var nf *launch.NotFoundError
	if !errors.As(err, &nf) || nf.Name != "env" {
		t.Fatalf("err = %v, want NotFoundError for env", err)
	}
}

// TestPathRuleRechecked: a rule chosen for one binary must not apply when the
// child's PATH finds another one.
func TestPathRuleRechecked(t *testing.T) {
	good, evil := t.TempDir(), t.TempDir()
	writeExe(t, good, "gh", "#!/bin/sh\n", 0o755)
	writeExe(t, evil, "gh", "#!/bin/sh\n", 0o755)
	src := "version: 1\nbase: none\nallow: [PATH]\nrules:\n  - {match: {command: \"" + good + "/gh\"}, allow: [GITHUB_TOKEN], set: {PATH: \"" + evil + "\"}}\n"
	p, err := policy.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	_, err = launch.Command(p, []string{"PATH=" + good, "GITHUB_TOKEN=t"}, sieve.Request{}, nil, "gh")
	if err == nil || !strings.Contains(err.Error(), "but the child's PATH finds "+evil+"/gh") {
		t.Fatalf("err = %v, want the rule re-check to refuse", err)
	}
}
