package audit_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/envsieve/envsieve/internal/audit"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
)

func TestLog(t *testing.T) {
	home := t.TempDir()
	a, err := audit.Open("~/state/envsieve/audit.jsonl", home)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse("p.yaml", []byte("version: 1\nallow: [\"MYAPP_*\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	res, err := sieve.Build(sieve.Input{Parent: []string{"MYAPP_A=1", "GITHUB_TOKEN=x"}, Policy: p})
	if err != nil {
		t.Fatal(err)
	}
	a.Launch([]string{"gh", "pr"}, p, res)
	a.Decisions(res)
	a.Injected("GITHUB_TOKEN", "env", "env", "0123abcd")
	a.Exit(3, nil)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(home, "state", "envsieve", "audit.jsonl")
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("log file: %v, mode %v", err, fi.Mode().Perm())
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Errorf("log directory mode %v", di.Mode().Perm())
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var msgs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev map[string]any
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("not JSON: %v", err)
		}
		if ev["launch"] != a.ID() {
			t.Errorf("event %v lacks the launch id %s", ev["msg"], a.ID())
		}
		msgs = append(msgs, ev["msg"].(string))
	}
	want := []string{"launch", "decision", "decision", "inject", "exit"}
	if len(msgs) != len(want) {
		t.Fatalf("events %v, want %v", msgs, want)
	}
	for i := range want {
		if msgs[i] != want[i] {
			t.Errorf("event %d is %s, want %s", i, msgs[i], want[i])
		}
	}
}

// TestNilLog: a nil log discards everything without failing.
func TestNilLog(t *testing.T) {
	var a *audit.Log
	a.Exit(0, errors.New("y"))
	a.Injected("A", "env", "env", "00000000")
	if a.ID() != "" || a.Close() != nil {
		t.Fatal("a nil log is not inert")
	}
}

func TestOpenNeedsHome(t *testing.T) {
	if _, err := audit.Open("~/x.jsonl", ""); err == nil {
		t.Fatal("~/ without a home directory was accepted")
	}
}
