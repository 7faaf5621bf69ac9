//go:build linux

package shim_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/internal/shimwire"
)

// interpGrant is the value granted in TestInterpExec.
const interpGrant = "interp-grant-value-6b1e"

// TestInterpExec plays the launcher, which starts a granted
// `#!/usr/bin/env sh` script with ENVSIEVE_SHIM_INTERP naming sh, and the
// attacker who would use that to get the granted value into a program of
// its choice. The value reaches the interpreter the launcher checked, run
// on the script, once: not a shell the script starts, not a second env,
// not through env's options or assignments, not a sh planted earlier in
// PATH, and not when the marker names another file or name. As an
// unprivileged user when the test runs as root.
func TestInterpExec(t *testing.T) {
	lib := shimtest.Lib(t)
	dir := openDir(t)
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	bash, err := filepath.EvalSymlinks("/bin/bash")
	if err != nil {
		t.Fatal(err)
	}
	// The script says how long its grant is, whether the marker reached
	// it, and what a shell and a second env hop it starts get.
	script := filepath.Join(dir, "tool")
	if err := os.WriteFile(script, []byte("#!/usr/bin/env sh\n"+
		`echo "script:${#GRANT} marker:${ENVSIEVE_SHIM_INTERP:-none}"`+"\n"+
		`sh -c 'echo "child:${#GRANT}"'`+"\n"+
		`/usr/bin/env sh -c 'echo "again:${#GRANT}"'`+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(dir, "planted")
	if err := os.Mkdir(planted, 0o755); err != nil {
		t.Fatal(err)
	}
	copyFile(t, sh, filepath.Join(planted, "sh"))
	var cred *syscall.SysProcAttr
	if os.Getuid() == 0 {
		cred = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	env := func(path, marker, rules string) []string {
		return []string{"PATH=" + path, "GRANT=" + interpGrant, shimwire.EnvGranted + "=GRANT",
			shimwire.EnvPreload + "=" + lib, shimwire.EnvSock + "=" + filepath.Join(dir, "no-launcher"), shimwire.EnvExec + "=1",
			shimwire.EnvRules + "=" + rules, shimwire.EnvInterp + "=" + marker}
	}
	n := strconv.Itoa(len(interpGrant))
	granted := "script:" + n + " marker:none\nchild:0\nagain:0"
	refused := "script:0 marker:none\nchild:0\nagain:0"
	for _, tc := range []struct {
		name string
		env  []string
		argv []string
		want string
	}{
		{"the script", env("/usr/bin:/bin", "sh:"+sh, "no-such-tool"), []string{script}, granted},
		{"a rule that may match the interpreter", env("/usr/bin:/bin", "sh:"+sh, "sh"), []string{script}, granted},
		// env run as the kernel runs it for the script: the same exec.
		{"control: env's own argv", env("/usr/bin:/bin", "sh:"+sh, "no-such-tool"),
			[]string{"/usr/bin/env", "sh", "-c", `echo "got:${#GRANT}"`}, "got:" + n},
		{"env -u", env("/usr/bin:/bin", "sh:"+sh, "no-such-tool"),
			[]string{"/usr/bin/env", "-u", "X", "sh", "-c", `echo "got:${#GRANT}"`}, "got:0"},
		{"env -S", env("/usr/bin:/bin", "sh:"+sh, "no-such-tool"),
			[]string{"/usr/bin/env", "-S", `sh -c 'echo "got:${#GRANT}"'`}, "got:0"},
		{"env X=1", env("/usr/bin:/bin", "sh:"+sh, "no-such-tool"),
			[]string{"/usr/bin/env", "X=1", "sh", "-c", `echo "got:${#GRANT}"`}, "got:0"},
		{"a sh planted earlier in PATH", env(planted+":/usr/bin:/bin", "sh:"+sh, "no-such-tool"), []string{script}, refused},
		{"the marker names another file", env("/usr/bin:/bin", "sh:"+bash, "no-such-tool"), []string{script}, refused},
		{"the marker names another program", env("/usr/bin:/bin", "bash:"+sh, "no-such-tool"), []string{script}, refused},
		{"a relative marker path", env("/usr/bin:/bin", "sh:bin/sh", "no-such-tool"), []string{script}, refused},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(tc.argv[0], tc.argv[1:]...)
			cmd.Env = tc.env
			cmd.SysProcAttr = cred
			cmd.Dir = dir
			b, _ := cmd.CombinedOutput()
			out := strings.TrimSpace(strings.ReplaceAll(string(b), interpGrant, "<grant>"))
			if out != tc.want {
				t.Errorf("got %q, want %q", out, tc.want)
			}
		})
	}
}

// TestGrantedValueCopies: what a granted program starts gets neither a
// granted key nor a variable that holds its value under another name (npm
// passes what it expanded from ${NPM_TOKEN} in a project's .npmrc to its
// scripts as npm_config_KEY). A granted value shorter than 8 bytes is not
// looked for elsewhere. As an unprivileged user when the test runs as root.
func TestGrantedValueCopies(t *testing.T) {
	lib := shimtest.Lib(t)
	dir := openDir(t)
	var cred *syscall.SysProcAttr
	if os.Getuid() == 0 {
		cred = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	cmd := exec.Command("/bin/sh", "-c", `export COPY="pre-${GRANT}-post" SAME="$GRANT" NEAR="${GRANT%?}"; `+
		`sh -c 'echo "grant:${#GRANT} copy:${#COPY} same:${#SAME} near:${#NEAR} short:${#SHORT} other:${#OTHER}"'`)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "GRANT=" + interpGrant, "SHORT=abc", "OTHER=xabcx",
		shimwire.EnvGranted + "=GRANT,SHORT", shimwire.EnvPreload + "=" + lib, shimwire.EnvSock + "=" + filepath.Join(dir, "no-launcher"),
		shimwire.EnvExec + "=1", shimwire.EnvRules + "=no-such-tool"}
	cmd.SysProcAttr = cred
	cmd.Dir = dir
	b, _ := cmd.CombinedOutput()
	out := strings.TrimSpace(strings.ReplaceAll(string(b), interpGrant, "<grant>"))
	// NEAR is the value minus its last byte: not a copy.
	if want := "grant:0 copy:0 same:0 near:" + strconv.Itoa(len(interpGrant)-1) + " short:0 other:5"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}

// TestGrantedValueHidden: a granted key the launcher also hides still has
// its value looked for in what the program starts: the shim copies the
// granted values before hiding takes the key out of environ (init's
// keep_granted runs before keep_hidden and wipe_hidden). As an
// unprivileged user when the test runs as root.
func TestGrantedValueHidden(t *testing.T) {
	lib := shimtest.Lib(t)
	dir := openDir(t)
	var cred *syscall.SysProcAttr
	if os.Getuid() == 0 {
		cred = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	cmd := exec.Command("/bin/sh", "-c", `sh -c 'echo "grant:${#GRANT} copy:${#COPY} other:${#OTHER}"'`)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "GRANT=" + interpGrant, "COPY=pre-" + interpGrant + "-post", "OTHER=xabcx",
		shimwire.EnvGranted + "=GRANT", shimwire.EnvHide + "=GRANT", shimwire.EnvPreload + "=" + lib,
		shimwire.EnvSock + "=" + filepath.Join(dir, "no-launcher"), shimwire.EnvExec + "=1", shimwire.EnvRules + "=no-such-tool"}
	cmd.SysProcAttr = cred
	cmd.Dir = dir
	b, _ := cmd.CombinedOutput()
	out := strings.TrimSpace(strings.ReplaceAll(string(b), interpGrant, "<grant>"))
	if want := "grant:0 copy:0 other:5"; out != want {
		t.Errorf("got %q, want %q", out, want)
	}
}
