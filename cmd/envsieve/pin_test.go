//go:build linux

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestPinnedProgram: a rule that pins a program's bytes (match: {path,
// sha256}) grants to it in a place the agent's tree can write (~/bin), as
// the launch's first program and at an exec under the shim, script and
// ELF alike, sealed or not; and what runs is the sealed copy envsieve
// hashed ($0 of the script is /proc/self/fd/N); not a pinned script whose
// #! interpreter the agent could replace. Once the agent rewrites
// the file, it gets nothing, and explain and the audit log say why. A rule
// that names the same kind of file by path without a pin grants nothing.
func TestPinnedProgram(t *testing.T) {
	t.Parallel()
	exe, home := unprivilegedCopy(t, "envsieve")
	dir := filepath.Dir(exe)
	bin := filepath.Join(home, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nprintf 'ran=%s token=%s\\n' \"$0\" \"${GITHUB_TOKEN:-none}\"\n"
	tool, other := filepath.Join(bin, "tool"), filepath.Join(bin, "other")
	for _, p := range []string{tool, other} {
		if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A pinned script whose interpreter is the agent's to replace.
	mysh := filepath.Join(bin, "mysh")
	copyFile(t, "/bin/sh", mysh)
	viaOwn := filepath.Join(bin, "viaown")
	ownScript := "#!" + mysh + "\nprintf 'ran=%s token=%s\\n' \"$0\" \"${GITHUB_TOKEN:-none}\"\n"
	if err := os.WriteFile(viaOwn, []byte(ownScript), 0o755); err != nil {
		t.Fatal(err)
	}
	printenv, err := exec.LookPath("printenv")
	if err != nil {
		t.Fatal(err)
	}
	penv := filepath.Join(bin, "penv")
	copyFile(t, printenv, penv)
	elf, err := os.ReadFile(penv)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		for _, p := range []string{bin, tool, other, penv, mysh, viaOwn} {
			os.Lchown(p, 65534, 65534)
		}
	}
	real := func(p string) string {
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	pol := filepath.Join(dir, "p.yaml")
	audit := filepath.Join(dir, "audit.jsonl")
	if err := os.WriteFile(pol, fmt.Appendf(nil, `version: 1
redact: {enabled: false, entropy: false}
audit: {path: %s}
rules:
  - name: tool
    match: {path: %s, sha256: %s}
    allow: [GITHUB_TOKEN]
  - name: penv
    match: {path: %s, sha256: %s}
    allow: [GITHUB_TOKEN]
  - name: other
    match: {path: %s}
    allow: [GITHUB_TOKEN]
  - name: viaown
    match: {path: %s, sha256: %s}
    allow: [GITHUB_TOKEN]
`, audit, real(tool), sum([]byte(script)), real(penv), sum(elf), real(other), real(viaOwn), sum([]byte(ownScript))), 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(audit, nil, 0o666)
	os.Chmod(audit, 0o666)
	noNS := filepath.Join(dir, "nouserns")
	copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
	token := "tok-pinned-5b2c"
	lib := shimtest.Lib(t)
	run := func(wrap bool, args ...string) string {
		argv := append([]string{exe}, args...)
		if wrap {
			argv = append([]string{noNS}, argv...)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + home, "GITHUB_TOKEN=" + token, "ENVSIEVE_SHIM=" + lib}
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		out, _ := cmd.CombinedOutput()
		return strings.ReplaceAll(string(out), token, "<token>")
	}
	type tc struct {
		name  string
		wrap  bool // namespaces refused: the seal is Landlock's
		args  []string
		token bool
	}
	granted := []tc{
		{"first program, script", false, []string{"run", "--no-shim", "--policy", pol, "--", "tool"}, true},
		{"first program, script, resident with the shim", false, []string{"run", "--policy", pol, "--", "tool"}, true},
		{"first program, ELF", false, []string{"run", "--no-shim", "--policy", pol, "--", "penv", "GITHUB_TOKEN"}, true},
		{"first program, sealed by namespaces", false, []string{"run", "--seal", "--no-shim", "--policy", pol, "--", "tool"}, true},
		{"first program, sealed by Landlock", true, []string{"run", "--seal", "--no-shim", "--policy", pol, "--", "tool"}, true},
		{"at exec, script", false, []string{"run", "--policy", pol, "--", "bash", "-c", "tool; true"}, true},
		{"at exec, ELF", false, []string{"run", "--policy", pol, "--", "bash", "-c", "penv GITHUB_TOKEN; true"}, true},
		{"at exec, sealed by Landlock", true, []string{"run", "--seal", "--policy", pol, "--", "bash", "-c", "tool; true"}, true},
		{"a pinned script with the agent's interpreter, first program", false, []string{"run", "--no-shim", "--policy", pol, "--", "viaown"}, false},
		{"a pinned script with the agent's interpreter, at exec", false, []string{"run", "--policy", pol, "--", "bash", "-c", "viaown; true"}, false},
		{"a path rule without a pin, first program", false, []string{"run", "--no-shim", "--policy", pol, "--", "other"}, false},
		{"a path rule without a pin, at exec", false, []string{"run", "--policy", pol, "--", "bash", "-c", "other; true"}, false},
	}
	for _, c := range granted {
		out := run(c.wrap, c.args...)
		t.Logf("%s: %s", c.name, out)
		if got := strings.Contains(out, "<token>"); got != c.token {
			t.Errorf("%s: got the token %v, want %v:\n%s", c.name, got, c.token, out)
		}
		if c.token && strings.Contains(out, "ran=") && !strings.Contains(out, "ran=/proc/self/fd/") {
			t.Errorf("%s: the script ran from its file, not from the sealed copy:\n%s", c.name, out)
		}
	}
	// The agent rewrites the pinned programs: they get nothing any more.
	if err := os.WriteFile(tool, []byte(script+"echo planted\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []tc{
		{"rewritten, first program", false, []string{"run", "--no-shim", "--policy", pol, "--", "tool"}, false},
		{"rewritten, at exec", false, []string{"run", "--policy", pol, "--", "bash", "-c", "tool; true"}, false},
	} {
		out := run(c.wrap, c.args...)
		if strings.Contains(out, "<token>") || !strings.Contains(out, "planted") {
			t.Errorf("%s: want the planted program to run without the token:\n%s", c.name, out)
		}
	}
	out := run(false, "explain", "--policy", pol, "--", "tool")
	if !strings.Contains(out, "the sha256 of "+real(tool)+" is ") || !strings.Contains(out, "pins "+sum([]byte(script))) {
		t.Errorf("explain does not say the program is not the pinned one:\n%s", out)
	}
	b, _ := os.ReadFile(audit)
	if !strings.Contains(string(b), "rule tool") || !strings.Contains(string(b), "pins "+sum([]byte(script))) {
		t.Errorf("the audit log does not say why the rewritten program got no grant:\n%s", b)
	}
	os.WriteFile(tool, []byte(script), 0o755)
	if out := run(false, "explain", "--policy", pol, "--", "tool"); !strings.Contains(out, "pinned:  sha256 "+sum([]byte(script))) {
		t.Errorf("explain does not show the pin:\n%s", out)
	}
}
