package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestGoInstallHint: the hint envsieve gives when envsieve-daemon is
// missing is a command that works: 'go install MODULE/cmd/...@latest'
// (a version, as go install outside a module needs), and what it does,
// both programs in one GOBIN, gives an envsieve that finds its daemon.
// The install is made from this tree (./cmd/...), the network being out
// of reach.
func TestGoInstallHint(t *testing.T) {
	_, err := findDaemonProgram() // the test binary has no envsieve-daemon beside it
	if err == nil {
		t.Fatal("an envsieve-daemon lies beside the test binary: the hint for a missing one cannot be checked here")
	}
	m := regexp.MustCompile(`'go install ([^' ]+)'`).FindStringSubmatch(err.Error())
	if m == nil {
		t.Fatalf("no go install hint in %q", err)
	}
	mod, err := os.ReadFile(filepath.Join("..", "..", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	path := strings.TrimPrefix(strings.SplitN(string(mod), "\n", 2)[0], "module ")
	if want := path + "/cmd/...@latest"; m[1] != want {
		t.Fatalf("hint installs %q, want %q", m[1], want)
	}
	gobin := t.TempDir()
	cmd := exec.Command("go", "install", "./cmd/...")
	cmd.Dir = filepath.Join("..", "..")
	cmd.Env = append(os.Environ(), "GOBIN="+gobin, "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(gobin, "envsieve"), "client", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "client speaks to 'envsieve daemon'") {
		t.Errorf("the go-installed envsieve does not find envsieve-daemon: %v\n%s", err, out)
	}
}
