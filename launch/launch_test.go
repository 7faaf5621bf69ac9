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
