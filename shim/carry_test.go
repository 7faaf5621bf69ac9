//go:build linux

package shim_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/internal/shimwire"
	"github.com/envsieve/envsieve/shim"
)

// staticPrinterC prints the hidden key through getenv. Built static, it
// cannot load the shim.
const staticPrinterC = `#include <stdio.h>
#include <stdlib.h>
int main(void) { const char *v = getenv("SHIMTEST_API_KEY"); puts(v ? v : "unset"); return 0; }
`

// evilPreloadC is a library an attacker preloads beside (or instead of)
// the shim: its constructor prints the hidden key.
const evilPreloadC = `#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void evil(void) {
	const char *v = getenv("SHIMTEST_API_KEY");
	fprintf(stderr, "evil=%s\n", v ? v : "unset");
}
`

// runAny runs argv and returns its combined output whatever its status.
// It fails the test, without printing anything, when the output holds the
// hidden value.
func runAny(t *testing.T, env []string, cred *syscall.SysProcAttr, argv ...string) string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = cred
	cmd.Dir = os.TempDir()
	out, _ := cmd.CombinedOutput()
	if strings.Contains(string(out), hiddenVal) {
		t.Fatalf("the hidden value reached the output of %s", strings.Join(argv, " "))
	}
	return strings.TrimSpace(string(out))
}

// TestHiddenCarry plays the attacker who controls a shell that holds hidden
// keys (the first program of a launch with block_iteration) and execs in
// place into an image that will not hide them again. The shim carries
// hidden keys into a new image only when that image is certain to load the
// same shim: LD_PRELOAD exactly the shim's, a dynamic program of this
// machine's kind, not setuid, setgid or with file capabilities, and for a
// #! script the same of its interpreter.
func TestHiddenCarry(t *testing.T) {
	lib := shimtest.Lib(t)
	dir := openDir(t)
	static := filepath.Join(dir, "static-printer")
	cc := exec.Command("cc", "-static", "-o", static, "-x", "c", "-")
	cc.Stdin = strings.NewReader(staticPrinterC)
	if out, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("cc -static (libc6-dev provides libc.a): %v\n%s", err, out)
	}
	evil := filepath.Join(dir, "evil.so")
	cc = exec.Command("cc", "-shared", "-fPIC", "-o", evil, "-x", "c", "-")
	cc.Stdin = strings.NewReader(evilPreloadC)
	if out, err := cc.CombinedOutput(); err != nil {
		t.Fatalf("cc evil.so: %v\n%s", err, out)
	}
	printenv, err := exec.LookPath("printenv")
	if err != nil {
		t.Fatal(err)
	}
	// A setuid copy of printenv: the loader ignores LD_PRELOAD paths in a
	// secure-execution program, so the shim would not load into it.
	setuid := filepath.Join(dir, "setuid-printenv")
	copyFile(t, printenv, setuid)
	if err := os.Chmod(setuid, os.ModeSetuid|0o755); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!"+static+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	nested := filepath.Join(dir, "nested")
	if err := os.WriteFile(nested, []byte("#!"+script+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	probe := shimtest.Program(t, "probe", probeC)
	nodeScript := filepath.Join(dir, "node-script")
	if err := os.WriteFile(nodeScript, []byte("#!/usr/bin/env node\nconsole.log('byname=' + (process.env.SHIMTEST_API_KEY ? 'yes' : 'no'))\n"), 0o755); err != nil {
		t.Fatal(err)
	}

	leaks := []struct{ name, shell string }{
		{"empty LD_PRELOAD", "LD_PRELOAD= exec printenv " + hiddenKey},
		{"other LD_PRELOAD", "LD_PRELOAD=" + evil + " exec printenv " + hiddenKey},
		{"LD_PRELOAD beside the shim", `LD_PRELOAD="` + evil + `:$LD_PRELOAD" exec printenv ` + hiddenKey},
		{"unset LD_PRELOAD", "unset LD_PRELOAD; exec printenv " + hiddenKey},
		{"static program", "exec " + static},
		{"setuid program", "exec " + setuid + " " + hiddenKey},
		{"script with a static interpreter", "exec " + script},
		{"script of a script", "exec " + nested},
		{"env -u LD_PRELOAD", "exec env -u LD_PRELOAD printenv " + hiddenKey},
	}
	for _, tc := range leaks {
		t.Run(tc.name, func(t *testing.T) {
			for _, cred := range []*syscall.SysProcAttr{nil, asNobody()} {
				out := runAny(t, baseEnv(lib), cred, "bash", "-c", tc.shell)
				if strings.Contains(out, "evil=sk-") {
					t.Fatalf("evil.so read the hidden key")
				}
			}
		})
	}

	// The carry still works where the shim certainly loads again: the
	// program reads the key by name, and cannot list it.
	t.Run("dynamic program", func(t *testing.T) {
		got := run(t, baseEnv(lib), asNobody(), "bash", "-c", "exec "+probe+" "+hiddenKey)
		if want := "byname=yes listed=0 proc=0 path=1 home=1\nchild="; got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	})
	t.Run("env script", func(t *testing.T) {
		if _, err := exec.LookPath("node"); err != nil {
			t.Fatalf("node is needed: %v", err)
		}
		env := baseEnv(lib)
		env[0] = "PATH=" + os.Getenv("PATH")
		if got := run(t, env, asNobody(), "bash", "-c", "exec "+nodeScript); got != "byname=yes" {
			t.Errorf("got %q, want byname=yes", got)
		}
	})
}

// memAttackPy is what an agent's command can do where Yama does not
// restrict ptrace: read its parent's heap through /proc/PPID/mem.
const memAttackPy = `import os, re, sys
ppid = int(sys.argv[1])
want = open(sys.argv[2], "rb").read()
try:
    maps = open("/proc/%d/maps" % ppid).read().splitlines()
    mem = open("/proc/%d/mem" % ppid, "rb")
except OSError as e:
    print("denied")
    sys.exit(0)
found = False
for line in maps:
    m = re.match(r"([0-9a-f]+)-([0-9a-f]+) rw", line)
    if not m:
        continue
    lo, hi = int(m.group(1), 16), int(m.group(2), 16)
    try:
        mem.seek(lo)
        if want in mem.read(hi - lo):
            found = True
    except OSError:
        pass
print("found" if found else "searched")
`

// holderC reports whether it is dumpable and runs the attacker as its
// child (through sh, whose $PPID is the holder).
const holderC = `#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
int main(int argc, char **argv) {
	(void)argc;
	printf("dumpable=%d\n", prctl(PR_GET_DUMPABLE, 0, 0, 0, 0));
	fflush(stdout);
	return system(argv[1]);
}
`

// TestHiddenNonDumpable: a process that holds hidden keys makes itself
// non-dumpable, so a command it runs (same uid) can neither read its heap
// through /proc/PID/mem nor its /proc/PID/environ.
func TestHiddenNonDumpable(t *testing.T) {
	lib := shimtest.Lib(t)
	holder := shimtest.Program(t, "holder", holderC)
	dir := openDir(t)
	attack := filepath.Join(dir, "attack.py")
	if err := os.WriteFile(attack, []byte(memAttackPy), 0o644); err != nil {
		t.Fatal(err)
	}
	// The value to look for is in a file, so that no argv holds it.
	needle := filepath.Join(dir, "needle")
	if err := os.WriteFile(needle, []byte(hiddenVal), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := "python3 " + attack + " $PPID " + needle + "; cat /proc/$PPID/environ >/dev/null 2>&1 && echo environ=readable || echo environ=denied"
	env := baseEnv(lib)
	env[0] = "PATH=" + os.Getenv("PATH")
	got := runAny(t, env, asNobody(), holder, cmd)
	if want := "dumpable=0\ndenied\nenviron=denied"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// The control: without hidden keys the same attacker finds the value
	// in a process that holds it in its environment.
	ctl := []string{env[0], "HOME=/root", hiddenKey + "=" + hiddenVal}
	c := exec.Command(holder, cmd)
	c.Env, c.SysProcAttr = ctl, asNobody()
	out, _ := c.CombinedOutput()
	if got := string(out); !strings.Contains(got, "dumpable=1") || !strings.Contains(got, "found") {
		t.Errorf("control: the attack should find the value in a dumpable holder: %q", strings.ReplaceAll(got, hiddenVal, "<value>"))
	}
}

// openDir returns a temporary directory that an unprivileged user can
// reach (t.TempDir's parent is private to root).
func openDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "envsieve-carry-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
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

// TestHideLimits keeps MaxHide and MaxHideName in step with the C source,
// and checks that the shim drops, rather than leaves listed, the keys of a
// list longer than it can hold.
func TestHideLimits(t *testing.T) {
	src, err := os.ReadFile(shimtest.Source())
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]int{"MAX_HIDE": shim.MaxHide, "MAX_REPORT_NAME": shim.MaxHideName} {
		if !strings.Contains(string(src), fmt.Sprintf("#define %s %d ", name, want)) {
			t.Errorf("envsieve.c does not define %s as %d", name, want)
		}
	}
	keys := make([]string, shim.MaxHide+1)
	for i := range keys {
		keys[i] = fmt.Sprintf("K%02d", i)
	}
	if err := shim.CheckHide(keys[:shim.MaxHide]); err != nil {
		t.Errorf("CheckHide(%d keys): %v", shim.MaxHide, err)
	}
	if err := shim.CheckHide(keys); err == nil {
		t.Errorf("CheckHide(%d keys): no error", len(keys))
	}
	if err := shim.CheckHide([]string{strings.Repeat("K", shim.MaxHideName+1)}); err == nil {
		t.Error("CheckHide(a name too long): no error")
	}

	lib := shimtest.Lib(t)
	env := []string{"PATH=/usr/bin:/bin", shimwire.EnvPreload + "=" + lib, shimwire.EnvHide + "=" + strings.Join(keys, ",")}
	for _, k := range keys {
		env = append(env, k+"=v")
	}
	out := runAny(t, env, asNobody(), "bash", "-c", "env | grep -c '^K[0-9]*=' || true")
	if out != "0" {
		t.Errorf("%s keys of an over-long hide list are still listed, want 0", out)
	}
}
