//go:build unix

package main

import (
	"encoding/json"
	"errors"
	"os/exec"
	"slices"
	"testing"
)

// TestVerifyMatrix is the leak matrix of `envsieve verify`, canary by
// channel, as an unprivileged user (nobody when the tests run as root).
// Default mode: no canary reaches the child's environment, and the launcher's
// own environ is closed (non-dumpable), but the stand-in agent's environ is
// readable by the same user, so every canary leaks there and verify exits 1.
// With --isolate nothing leaks and verify exits 0.
func TestVerifyMatrix(t *testing.T) {
	exe, home := unprivilegedCopy(t, "envsieve")
	verify := func(args ...string) (map[string][]string, int) {
		cmd := exec.Command(exe, append([]string{"verify", "--json"}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		out, err := cmd.Output()
		status := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			status = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Leaks  map[string][]string `json:"leaks"`
			Leaked bool                `json:"leaked"`
		}
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatalf("verify %v: %v\n%s", args, err, out)
		}
		return doc.Leaks, status
	}
	leaks, status := verify()
	for _, ch := range []string{"environ", "getenv", "/proc/self/environ", "/proc/PPID/environ"} {
		if len(leaks[ch]) > 0 {
			t.Errorf("default mode: %v leaked through %s", leaks[ch], ch)
		}
	}
	got := slices.Clone(leaks["/proc/*/environ"])
	slices.Sort(got)
	want := slices.Clone(canaryNames)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("default mode: /proc/*/environ leaked %v, want every canary (the agent's environ)", got)
	}
	if status != 1 {
		t.Errorf("default mode: verify exited %d, want 1", status)
	}
	leaks, status = verify("--isolate")
	if len(leaks) != 0 || status != 0 {
		t.Errorf("--isolate: leaks %v, exit %d; want none and 0", leaks, status)
	}
}
