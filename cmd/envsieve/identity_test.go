//go:build unix

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestRuleProgramIdentity plays an agent (an unprivileged user) that wants
// the token a rule grants to gh: it makes a link named gh to printenv, or
// copies printenv under the name gh, in a directory of its own, and runs
// it, through envsieve run and through a shell under the shim. A rule
// grants only to a program whose real file the tree cannot have written,
// named as an administrator named it; neither gets the token. The control,
// a root-owned gh in a root-owned directory, still gets it.
func TestRuleProgramIdentity(t *testing.T) {
	t.Parallel()
	exe, home := unprivilegedCopy(t, "envsieve")
	dir := filepath.Dir(exe)
	printenv, err := exec.LookPath("printenv")
	if err != nil {
		t.Fatal(err)
	}
	// The agent's own directory.
	own := filepath.Join(home, "x")
	if err := os.Mkdir(own, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(printenv, filepath.Join(own, "gh")); err != nil {
		t.Fatal(err)
	}
	copied := filepath.Join(home, "y")
	os.Mkdir(copied, 0o755)
	copyFile(t, printenv, filepath.Join(copied, "gh"))
	// The administrator's gh, for the control.
	sys := filepath.Join(dir, "sys")
	os.Mkdir(sys, 0o755)
	copyFile(t, printenv, filepath.Join(sys, "gh"))
	if os.Getuid() == 0 {
		for _, p := range []string{own, filepath.Join(own, "gh"), copied, filepath.Join(copied, "gh")} {
			os.Lchown(p, 65534, 65534)
		}
	}
	pol := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nredact: {enabled: false, entropy: false}\nrules:\n  - name: gh\n    match: {command: gh}\n    allow: [GITHUB_TOKEN]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	token := "tok-for-gh-only-7d1e"
	lib := shimtest.Lib(t)
	shimFlag := "--no-shim"
	run := func(pathDir string, argv ...string) string {
		cmd := exec.Command(exe, append([]string{"run", shimFlag, "--policy", pol, "--"}, argv...)...)
		cmd.Env = []string{"PATH=" + pathDir + ":/usr/bin:/bin", "HOME=" + home, "GITHUB_TOKEN=" + token, "ENVSIEVE_SHIM=" + lib}
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	for _, tc := range []struct{ name, dir string }{{"a link named gh", own}, {"a copy named gh", copied}} {
		if out := run(tc.dir, "gh", "GITHUB_TOKEN"); strings.Contains(out, token) {
			t.Errorf("%s got the rule's token", tc.name)
		}
	}
	if out := run(sys, "gh", "GITHUB_TOKEN"); !strings.Contains(out, token) {
		t.Errorf("control: the administrator's gh did not get the token: %q", strings.ReplaceAll(out, token, "<token>"))
	}
	// The same through a shell, where the shim asks for the grant at the
	// exec of gh.
	shimFlag = "--policy=" + pol
	for _, tc := range []struct{ name, dir string }{{"a link named gh, under the shim", own}, {"a copy named gh, under the shim", copied}} {
		if out := run(tc.dir, "bash", "-c", "gh GITHUB_TOKEN; true"); strings.Contains(out, token) {
			t.Errorf("%s got the rule's token", tc.name)
		}
	}
	if out := run(sys, "bash", "-c", "gh GITHUB_TOKEN; true"); !strings.Contains(out, token) {
		t.Errorf("control: the administrator's gh did not get the token under the shim: %q", strings.ReplaceAll(out, token, "<token>"))
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}
