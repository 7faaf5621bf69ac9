//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// grantAttack is what an agent's command runs to get the token a rule
// grants to gh without being gh: it talks to the shim's socket as version 1
// did (an exec request answered with the values) and as version 2 does (a
// start request naming printenv, but calling it gh), and prints what comes
// back.
const grantAttack = `
import os, socket, sys
sock = os.environ["ENVSIEVE_SHIM_SOCK"]
def ask(packets, fds=None):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    c.connect(sock)
    c.settimeout(2)
    for i, p in enumerate(packets):
        if i == 0 and fds is not None:
            c.sendmsg([p], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(memoryview(__import__("array").array("i", fds))))])
        else:
            c.send(p)
    out = b""
    try:
        while True:
            m = c.recv(65536)
            if not m:
                break
            out += m
    except OSError:
        pass
    return out
print("v1:", ask([b"\x01X%d\x00/usr/bin/gh\x00gh\x00pr\x00" % os.getpid()]))
print("v2 exec:", ask([b"\x02X%d\x00/usr/bin/gh\x00gh\x00pr\x00" % os.getpid()]))
body = b"/usr/bin/printenv\x002\x00gh\x00GITHUB_TOKEN\x00HOME=/\x00"
d = os.open(".", os.O_RDONLY)
print("v2 start:", ask([b"\x02S%d\x00\x00%d\x00" % (os.getpid(), len(body)), b"\x02C" + body], [d]))
print("v3 start:", ask([b"\x03S%d\x00%d\x00" % (os.getpid(), len(body)), b"\x03C" + body], [d]))
# The door: one end of a pair, handed over as a sandboxed shim does.
a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
g, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
door = os.path.join(os.path.dirname(sock), "d")
g.sendmsg([b"\x03O"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(memoryview(__import__("array").array("i", [b.fileno()]))))], 0, door)
b.close()
a.sendmsg([b"\x03S%d\x00%d\x00" % (os.getpid(), len(body))], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, bytes(memoryview(__import__("array").array("i", [d]))))])
a.send(b"\x03C" + body)
a.settimeout(2)
out = b""
try:
    while True:
        m = a.recv(65536)
        if not m:
            break
        out += m
except OSError:
    pass
print("door start:", out)
`

// TestGrantChannel plays an agent, as an unprivileged user, after the
// token a rule grants to gh (a root-owned program in a root-owned
// directory). It asks the shim's socket directly, runs printenv under the
// name gh, gives gh its own LD_PRELOAD and PYTHONPATH, and reads the
// environ of every process it can see while gh runs. None of it yields the
// token; gh itself, started through bash, env, xargs, python and node,
// still gets it.
func TestGrantChannel(t *testing.T) {
	exe, home := unprivilegedCopy(t, "envsieve")
	dir := filepath.Dir(exe)
	sys := filepath.Join(dir, "sys")
	if err := os.Mkdir(sys, 0o755); err != nil {
		t.Fatal(err)
	}
	gh := "#!/bin/sh\n" +
		`echo "gh: token-length=${#GITHUB_TOKEN} preload=${LD_PRELOAD##*/} pythonpath=${PYTHONPATH:-none}"` + "\n" +
		`if [ "$1" = wait ]; then sleep 2; fi` + "\n"
	if err := os.WriteFile(filepath.Join(sys, "gh"), []byte(gh), 0o755); err != nil {
		t.Fatal(err)
	}
	pol := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nredact: {enabled: false, entropy: false}\nrules:\n  - name: gh\n    match: {command: gh}\n    allow: [GITHUB_TOKEN]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	token := "tok-for-gh-only-5c0ffee-91"
	want := "gh: token-length=" + strconv.Itoa(len(token)) + " preload=libenvsieve.so pythonpath=none"
	lib := shimtest.Lib(t)
	noUnix := filepath.Join(dir, "nounixsock")
	copyFile(t, shimtest.Program(t, "nounixsock", shimtest.NoUnixSock), noUnix)
	run := func(argv ...string) string {
		t.Helper()
		cmd := exec.Command(exe, append([]string{"run", "--policy", pol, "--"}, argv...)...)
		cmd.Env = []string{"PATH=" + sys + ":/usr/bin:/bin", "HOME=" + home, "GITHUB_TOKEN=" + token, "ENVSIEVE_SHIM=" + lib}
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"the socket, as version 1, 2 and 3, and the door", []string{"python3", "-c", grantAttack}},
		{"printenv named gh", []string{"bash", "-c", "exec -a gh printenv GITHUB_TOKEN; true"}},
		{"the caller's LD_PRELOAD and PYTHONPATH", []string{"bash", "-c", "LD_PRELOAD=" + lib + ":/nonexistent/evil.so PYTHONPATH=/evil gh"}},
		{"every environ while gh runs", []string{"bash", "-c",
			`gh wait & sleep 1; for p in /proc/[0-9]*; do tr '\0' '\n' < $p/environ 2>/dev/null | grep '^GITHUB_TOKEN=' | sed 's/./& /g'; done; wait`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := run(tc.argv...)
			spaced := strings.Join(strings.Split(token, ""), " ")
			if strings.Contains(out, token) || strings.Contains(out, spaced) {
				t.Errorf("the agent got the token: %q", strings.ReplaceAll(strings.ReplaceAll(out, token, "<token>"), spaced, "<t o k e n>"))
			}
			if strings.Contains(out, "gh: ") && !strings.Contains(out, want) {
				t.Errorf("gh ran with the caller's settings: %q", strings.ReplaceAll(out, token, "<token>"))
			}
			if strings.Contains(tc.name, "socket") && (strings.Contains(out, "+GITHUB") || !strings.Contains(out, `v1: b''`) || !strings.Contains(out, `door start: b'\x03D`) || !strings.Contains(out, `v3 start: b'\x03D`)) {
				t.Errorf("the socket answered: %q", strings.ReplaceAll(out, token, "<token>"))
			}
		})
	}
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"bash", []string{"bash", "-c", "gh; true"}},
		{"env", []string{"bash", "-c", "env gh"}},
		{"xargs", []string{"bash", "-c", "echo pr | xargs gh"}},
		{"python subprocess", []string{"python3", "-c", `import subprocess; subprocess.run(["gh"])`}},
		{"node child_process", []string{"node", "-e", `process.stdout.write(require("child_process").execFileSync("gh").toString())`}},
		// As in Claude Code's sandbox: through the door.
		{"bash that may not create a unix socket", []string{noUnix, "bash", "-c", "gh; true"}},
	} {
		t.Run("control: "+tc.name, func(t *testing.T) {
			if out := run(tc.argv...); !strings.Contains(out, want) {
				t.Errorf("gh did not get its grant: %q", strings.ReplaceAll(out, token, "<token>"))
			}
		})
	}
}

// TestFirstProgramGrant plays an agent that launches the program a rule
// grants to and tells it to run its own command: `git push
// --receive-pack=...` under a `git push` rule, as an unprivileged user.
// The launch's first program is granted like any the shim hands over: git
// gets the token, and the command git runs for --receive-pack does not.
// The control, without the shim, shows the canary finds the token where
// nothing marks it.
func TestFirstProgramGrant(t *testing.T) {
	exe, home := unprivilegedCopy(t, "envsieve")
	dir := filepath.Dir(exe)
	pol := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nredact: {enabled: false, entropy: false}\nrules:\n"+
		"  - name: git-push\n    match: {command: git, args: [push]}\n    allow: [GITHUB_TOKEN]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	token := "tok-for-git-push-only-7e1"
	lib := shimtest.Lib(t)
	remote := filepath.Join(home, "remote.git")
	git := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
		cmd.SysProcAttr = asUnprivileged()
		cmd.Dir = home
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "--bare", remote)
	git("init", "-q", filepath.Join(home, "work"))
	git("-C", filepath.Join(home, "work"), "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "x")
	// The canary: the token reversed, so no redaction could mask it, and
	// the rule's own program, git, saying it holds the token.
	push := func(flags ...string) string {
		args := append(append([]string{"run", "--policy", pol}, flags...), "--", "git", "push",
			"--receive-pack=printenv GITHUB_TOKEN | rev >&2; echo receive-pack-ran >&2; false", remote, "HEAD")
		cmd := exec.Command(exe, args...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "GITHUB_TOKEN=" + token, "ENVSIEVE_SHIM=" + lib}
		cmd.SysProcAttr = asUnprivileged()
		cmd.Dir = filepath.Join(home, "work")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	reversed := []rune(token)
	for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
		reversed[i], reversed[j] = reversed[j], reversed[i]
	}
	if out := push("--no-shim"); !strings.Contains(out, string(reversed)) {
		t.Fatalf("control: without the shim, git's --receive-pack should print the token: %q", strings.ReplaceAll(out, token, "<token>"))
	}
	out := push()
	if !strings.Contains(out, "receive-pack-ran") {
		t.Fatalf("git did not run the receive-pack command: %q", out)
	}
	if strings.Contains(out, string(reversed)) || strings.Contains(out, token) {
		t.Errorf("the command git ran for --receive-pack got the token granted to git")
	}
}
