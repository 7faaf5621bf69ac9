//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestNamespacesRefused: where a seccomp filter refuses user namespaces,
// doctor says so (the namespaces check fails, with the fix) and the seal
// is made by Landlock, for seal: on and required alike; where the filter
// refuses Landlock too, seal: on runs the command without the seal and
// says so, and seal: required refuses to start (exit 125).
func TestNamespacesRefused(t *testing.T) {
	t.Parallel()
	noNS := shimtest.Program(t, "nouserns", shimtest.NoUserNS)
	exe := binary(t, "envsieve")
	dir := t.TempDir()
	for name, src := range map[string]string{
		"on.yaml":       "version: 1\nseal: on\n",
		"required.yaml": "version: 1\nseal: required\n",
		"state.yaml":    "version: 1\nprofiles:\n  agent: {seal: on, state_dirs: [~/.agent, ~/.config/envsieve/sub]}\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(filter []string, args ...string) (string, int) {
		cmd := exec.Command(noNS, append(append(filter, exe), args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "ENVSIEVE_DEBUG=1"}
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	out, _ := run(nil, "doctor")
	if !strings.Contains(out, "fail   namespaces") || !strings.Contains(out, "fix: allow unprivileged user namespaces") ||
		!strings.Contains(out, "ok     landlock") {
		t.Errorf("doctor under a filter that refuses user namespaces:\n%s", out)
	}
	for _, pol := range []string{"on.yaml", "required.yaml"} {
		audit := filepath.Join(dir, pol+".jsonl")
		out, code := run(nil, "run", "--no-shim", "--policy", pol, "--audit", audit, "--", "/bin/echo", "ran")
		if code != 0 || !strings.Contains(out, "ran") || !strings.Contains(out, "sealing with Landlock") || !strings.Contains(out, "seal: landlock;") {
			t.Errorf("%s, namespaces refused: exit %d\n%s", pol, code, out)
		}
		// The audit log says which seal the tree ran under.
		if b, err := os.ReadFile(audit); err != nil || !strings.Contains(string(b), `"msg":"seal"`) ||
			!strings.Contains(string(b), `"mechanism":"landlock","why":"user namespaces refused at the start"`) {
			t.Errorf("%s: the audit log does not record the Landlock seal: %v\n%s", pol, err, b)
		}
	}
	// The profile's state dirs are made before the Landlock seal, but not
	// one in a sealed directory.
	out, code := run(nil, "run", "--no-shim", "--policy", "state.yaml", "--profile", "agent", "--", "/bin/sh", "-c", "test -d $HOME/.agent && echo made")
	if code != 0 || !strings.Contains(out, "made") || !strings.Contains(out, "state dir ~/.config/envsieve/sub is HOME or at or in a sealed path") {
		t.Errorf("state dirs under Landlock: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(dir, ".config/envsieve/sub")); err == nil {
		t.Error("a state dir in the sealed config dir was made")
	}

	out, _ = run([]string{"-L"}, "doctor")
	if !strings.Contains(out, "warn   landlock") {
		t.Errorf("doctor under a filter that refuses Landlock too:\n%s", out)
	}
	out, code = run([]string{"-L"}, "run", "--no-shim", "--policy", "on.yaml", "--", "/bin/echo", "ran")
	if code != 0 || !strings.Contains(out, "ran") || !strings.Contains(out, "seal: not available here") {
		t.Errorf("seal: on, namespaces and Landlock refused: exit %d\n%s", code, out)
	}
	out, code = run([]string{"-L"}, "run", "--no-shim", "--policy", "required.yaml", "--", "/bin/echo", "ran")
	if code != 125 || strings.Contains(out, "ran\n") {
		t.Errorf("seal: required, namespaces and Landlock refused: exit %d, want 125\n%s", code, out)
	}
}
