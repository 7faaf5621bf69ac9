//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestDaemonGrant: a command of a daemon session, as an unprivileged user,
// gets exec-time grants as one of `envsieve run` does: gh (a root-owned
// program in a root-owned directory) gets the token the rule grants it,
// through bash and through a shell that may not create a unix socket (the
// launcher's door); the shell around it does not; and the command runs in
// the daemon's Landlock scope, which keeps it from reading the environ of
// any process outside it, such as another client's.
func TestDaemonGrant(t *testing.T) {
	exe, home := unprivilegedInstall(t)
	dir := filepath.Dir(exe)
	sys := filepath.Join(dir, "sys")
	if err := os.Mkdir(sys, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sys, "gh"), []byte("#!/bin/sh\necho \"gh: token-length=${#GITHUB_TOKEN}\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	noUnix := filepath.Join(dir, "nounixsock")
	copyFile(t, shimtest.Program(t, "nounixsock", shimtest.NoUnixSock), noUnix)
	pol := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nredact: {enabled: false, entropy: false}\nrules:\n  - name: gh\n    match: {command: gh}\n    allow: [GITHUB_TOKEN]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	token := "tok-daemon-gh-" + strings.Repeat("7e", 6)
	sock := filepath.Join(home, "d.sock")
	env := []string{"PATH=" + sys + ":/usr/bin:/bin", "HOME=" + home, "ENVSIEVE_SHIM=" + shimtest.Lib(t)}
	dErr := startDaemonAs(t, exe, sock, pol, home, env)
	run := func(shell string) string {
		t.Helper()
		c := exec.Command(exe, "client", "run", "--socket", sock, "-c", shell)
		c.Env = append(append([]string{}, env...), "GITHUB_TOKEN="+token)
		c.Dir = home
		c.SysProcAttr = asUnprivileged()
		out, err := c.CombinedOutput()
		if err != nil {
			t.Fatalf("client run %q: %v\n%s\ndaemon: %s", shell, err, strings.ReplaceAll(string(out), token, "<token>"), dErr.String())
		}
		if strings.Contains(string(out), token) {
			t.Fatalf("the token reached the output of %q", shell)
		}
		return string(out)
	}
	want := "gh: token-length=" + strconv.Itoa(len(token))
	if out := run(`gh; echo "shell: ${GITHUB_TOKEN:+holds it}"`); !strings.Contains(out, want) || strings.Contains(out, "holds it") {
		t.Errorf("through the shell: %q; want %q, and the shell without it", out, want)
	}
	if out := run(noUnix + ` /bin/sh -c gh`); !strings.Contains(out, want) {
		t.Errorf("through a shell that may not create a unix socket: %q; want %q", out, want)
	}
	// While a process of the user holds the token in its environment (the
	// user's shell, say), a command of the daemon looks for it in every
	// environ it can read: readable by the same user (the control, run
	// outside the daemon), but not from the daemon's scope.
	holder := exec.Command("sleep", "5")
	holder.Env = []string{"PATH=/usr/bin:/bin", "GITHUB_TOKEN=" + token}
	holder.Dir = home
	holder.SysProcAttr = asUnprivileged()
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { holder.Process.Kill(); holder.Wait() }()
	time.Sleep(500 * time.Millisecond)
	probe := `n=0; for p in /proc/[0-9]*; do { tr '\0' '\n' < $p/environ | grep -q '^GITHUB_TOKEN='; } 2>/dev/null && n=$((n+1)); done; echo found=$n`
	control := exec.Command("/bin/sh", "-c", probe)
	control.Env = []string{"PATH=/usr/bin:/bin"}
	control.SysProcAttr = asUnprivileged()
	if out, _ := control.CombinedOutput(); strings.Contains(string(out), "found=0") {
		t.Fatalf("control: outside the daemon the waiting client's environ should be readable: %q", out)
	}
	if out := run(probe); !strings.Contains(out, "found=0") {
		t.Errorf("a command of the daemon read an environ holding the token: %q", out)
	}
}

// startDaemonAs starts `envsieve daemon` at exe as the unprivileged user,
// serving sock under the policy pol with env, in home, and waits until it
// accepts; it is killed when the test ends. The daemon's stderr is kept.
func startDaemonAs(t *testing.T, exe, sock, pol, home string, env []string) *strings.Builder {
	t.Helper()
	d := exec.Command(exe, "daemon", "--socket", sock, "--policy", pol)
	d.Env = env
	d.Dir = home
	d.SysProcAttr = asUnprivileged()
	dErr := &strings.Builder{}
	d.Stderr = dErr
	if err := d.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Process.Kill(); d.Wait() })
	for deadline := time.Now().Add(10 * time.Second); !listening(sock); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not listen: %s", dErr.String())
		}
	}
	return dErr
}
