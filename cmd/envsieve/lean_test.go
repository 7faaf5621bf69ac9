package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLean keeps out of envsieve the packages whose initialisers cost it
// time at every start (docs/benchmarks.md): envsieve starts for every
// command an agent runs. The daemon's JSON-RPC stack lives in
// envsieve-daemon; the ELF check is written by hand.
func TestLean(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list envsieve's packages: %v", err)
	}
	out, err := exec.Command(gotool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/envsieve/envsieve/sieve") {
		t.Fatalf("go list -deps lacks the engine: %q", deps)
	}
	for _, bad := range []string{"github.com/creachadair/jrpc2", "net/http", "expvar", "crypto/tls", "debug/elf", "debug/dwarf", "compress/flate"} {
		if slices.Contains(deps, bad) {
			t.Errorf("envsieve links %s", bad)
		}
	}
}
