//go:build linux

package shim_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/internal/shimwire"
	"github.com/envsieve/envsieve/shim"
)

// execC starts "sh -c 'echo VIA:${GRANT:-none}${OLD:+ old}; exit 7'"
// through every exec and spawn function the shim intercepts, one per fork,
// and prints how each ended ("VIA=7", "VIA=sig15").
const execC = `#define _GNU_SOURCE
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
static char *script(const char *via) {
	static char buf[160];
	snprintf(buf, sizeof buf, "echo %s:${GRANT:-none}${OLD:+ old}; eval \"${THEN:-exit 7}\"", via);
	return buf;
}
static void status(const char *via, int st) {
	if (WIFEXITED(st)) printf("%s=%d\n", via, WEXITSTATUS(st));
	else if (WIFSIGNALED(st)) printf("%s=sig%d\n", via, WTERMSIG(st));
	fflush(stdout);
}
int main(void) {
	const char *vias[] = {"execve", "execv", "execvp", "execvpe", "execl", "execlp", "execle", "fexecve"};
	setvbuf(stdout, NULL, _IONBF, 0);
	for (int i = 0; i < 8; i++) {
		const char *via = vias[i];
		pid_t pid = fork();
		if (pid == 0) {
			char *argv[] = {"sh", "-c", script(via), NULL};
			if (!strcmp(via, "execve")) execve("/bin/sh", argv, environ);
			if (!strcmp(via, "execv")) execv("/bin/sh", argv);
			if (!strcmp(via, "execvp")) execvp("sh", argv);
			if (!strcmp(via, "execvpe")) execvpe("sh", argv, environ);
			if (!strcmp(via, "execl")) execl("/bin/sh", "sh", "-c", script(via), (char *)NULL);
			if (!strcmp(via, "execlp")) execlp("sh", "sh", "-c", script(via), (char *)NULL);
			if (!strcmp(via, "execle")) execle("/bin/sh", "sh", "-c", script(via), (char *)NULL, environ);
			if (!strcmp(via, "fexecve")) {
				int fd = open("/bin/sh", O_RDONLY | O_CLOEXEC);
				fexecve(fd, argv, environ);
			}
			_exit(127);
		}
		int st;
		waitpid(pid, &st, 0);
		status(via, st);
	}
	const char *spawns[] = {"posix_spawn", "posix_spawnp"};
	for (int i = 0; i < 2; i++) {
		char *argv[] = {"sh", "-c", script(spawns[i]), NULL};
		pid_t pid;
		if (i == 0) posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ);
		else posix_spawnp(&pid, "sh", NULL, NULL, argv, environ);
		int st;
		waitpid(pid, &st, 0);
		status(spawns[i], st);
	}
	return 0;
}
`

var vias = []string{"execve", "execv", "execvp", "execvpe", "execl", "execlp", "execle", "fexecve", "posix_spawn", "posix_spawnp"}

// testProc is a program a test's handler started, as the launcher would.
type testProc struct {
	p    *os.Process
	once sync.Once
	code int
	sig  int
}

func (p *testProc) Joined() bool              { return false }
func (p *testProc) Signal(sig syscall.Signal) { p.p.Signal(sig) }
func (p *testProc) Kill()                     { p.p.Kill() }
func (p *testProc) Wait() (int, int) {
	p.once.Do(func() {
		st, err := p.p.Wait()
		if err != nil {
			p.code = 125
			return
		}
		ws := st.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			p.sig = int(ws.Signal())
		} else {
			p.code = ws.ExitStatus()
		}
	})
	return p.code, p.sig
}

// startWith starts the request's program with env, its descriptors and
// working directory: what the launcher does, minus the policy.
func startWith(r *shimwire.StartRequest, env []string) (shimwire.Process, string) {
	if err := r.AskStdio(); err != nil {
		return nil, err.Error()
	}
	if r.Gone() {
		return nil, "the caller gave up waiting"
	}
	files := []*os.File{r.Stdio[0], r.Stdio[1], r.Stdio[2]}
	for i, f := range files {
		if f == nil {
			files[i], _ = os.Open(os.DevNull)
		}
	}
	p, err := os.StartProcess(r.Path, r.Argv, &os.ProcAttr{Env: env, Files: files,
		Dir: "/proc/self/fd/" + strconv.Itoa(int(r.Dir.Fd())), Sys: &syscall.SysProcAttr{Setpgid: true}})
	if err != nil {
		return nil, err.Error()
	}
	return &testProc{p: p}, ""
}

// without returns env minus the entries whose name is one of keys.
func without(env []string, keys ...string) []string {
	var out []string
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(keys, k) {
			out = append(out, kv)
		}
	}
	return out
}

// TestStartGrants: every intercepted function hands a program a rule may
// match to envsieve-start, which has the launcher start it: the launcher's
// environment (GRANT added, OLD removed) reaches the program, never the
// caller, and the caller ends as the program ended.
func TestStartGrants(t *testing.T) {
	lib := shimtest.Lib(t)
	prog := shimtest.Program(t, "execs", execC)
	rec := &recorder{start: func(r *shimwire.StartRequest) (shimwire.Process, string) {
		if r.Argv[0] == "sh" && len(r.Argv) == 3 {
			return startWith(r, append(without(r.Env, "OLD"), "GRANT=yes"))
		}
		return nil, "no rule"
	}}
	srv := listen(t, rec)
	env := append(baseEnv(lib), shimwire.EnvSock+"="+srv.Path, shimwire.EnvExec+"=1", shimwire.EnvStart+"="+startPath(lib), "OLD=x")
	got := run(t, env, nil, prog) + "\n"
	for _, via := range vias {
		if !strings.Contains(got, via+":yes\n") {
			t.Errorf("%s: no grant in %q", via, got)
		}
		if !strings.Contains(got, via+"=7\n") {
			t.Errorf("%s: the caller did not end as the program did: %q", via, got)
		}
	}
	if strings.Contains(got, " old") {
		t.Errorf("a removed key reached a program: %q", got)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// The path is resolved as the real call does: PATH for the p variants,
	// the file behind the descriptor (through symlinks) for fexecve.
	if len(rec.starts) != len(vias) {
		t.Errorf("%d start requests, want %d", len(rec.starts), len(vias))
	}
	for _, r := range rec.starts {
		if !strings.HasPrefix(r.Path, "/") {
			t.Errorf("request for %q: the path should be resolved", r.Path)
		}
		if !slices.Contains(r.Env, "OLD=x") {
			t.Errorf("the request does not carry the caller's environment: %q", r.Env)
		}
	}
}

// TestStartDeclined: a program the launcher declines runs in the caller's
// place with the caller's environment, minus the keys granted to the
// caller, which it must not pass on.
func TestStartDeclined(t *testing.T) {
	lib := shimtest.Lib(t)
	prog := shimtest.Program(t, "execs", execC)
	rec := &recorder{}
	srv := listen(t, rec)
	env := append(baseEnv(lib), shimwire.EnvSock+"="+srv.Path, shimwire.EnvExec+"=1", shimwire.EnvStart+"="+startPath(lib),
		"OLD=x", "MINE=granted-to-me", shimwire.EnvGranted+"=MINE",
		`THEN=echo mine=${MINE:-none}; sed -n "s/^SigIgn:[[:space:]]*/ignored=/p" /proc/$$/status; exit 7`)
	// The caller ignores SIGHUP (as under nohup): the program must too, and
	// must not inherit envsieve-start's own ignored SIGPIPE.
	got := run(t, env, nil, "bash", "-c", `trap "" HUP; exec "$0"`, prog) + "\n"
	for _, via := range vias {
		if !strings.Contains(got, via+":none old\n") || !strings.Contains(got, via+"=7\n") {
			t.Errorf("%s: want the program run as asked, got %q", via, got)
		}
	}
	if strings.Contains(got, "granted-to-me") || strings.Count(got, "mine=none") != len(vias) {
		t.Errorf("a key granted to the caller reached a program: %q", got)
	}
	if n := strings.Count(got, "ignored="); n != len(vias) {
		t.Errorf("%d programs said what they ignore, want %d", n, len(vias))
	}
	for _, line := range strings.Split(got, "\n") {
		if hex, ok := strings.CutPrefix(line, "ignored="); ok {
			mask, err := strconv.ParseUint(hex, 16, 64)
			if err != nil || mask&(1<<(syscall.SIGHUP-1)) == 0 || mask&(1<<(syscall.SIGPIPE-1)) != 0 {
				t.Errorf("the program's ignored signals are %s: want SIGHUP as the caller had it, SIGPIPE not", hex)
			}
		}
	}
}

// TestStartFailsClosed: with the launcher gone, a program a rule may match
// still runs, never hangs, and loses what a rule's deny matches and what
// was granted to its caller.
func TestStartFailsClosed(t *testing.T) {
	lib := shimtest.Lib(t)
	prog := shimtest.Program(t, "execs", execC)
	gone := filepath.Join(t.TempDir(), "gone")
	for _, tc := range []struct{ name, start string }{
		{"launcher gone", startPath(lib)},
		{"no envsieve-start", "/nonexistent/envsieve-start"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := append(baseEnv(lib), shimwire.EnvSock+"="+gone, shimwire.EnvExec+"=1", shimwire.EnvStart+"="+tc.start,
				"OLD=denied-by-a-rule", shimwire.EnvRules+"=s?\nda*", shimwire.EnvDeny+"=NOPE\nOL*",
				"MINE=granted-to-me", shimwire.EnvGranted+"=MINE", "THEN=echo mine=${MINE:-none}; exit 7")
			start := time.Now()
			got := run(t, env, nil, prog) + "\n"
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
			if strings.Contains(got, " old") || strings.Count(got, ":none\n") != len(vias) || strings.Count(got, "=7\n") != len(vias) {
				t.Errorf("deny skipped, or a program did not run, without a launcher: %q", got)
			}
			if strings.Contains(got, "granted-to-me") {
				t.Errorf("a key granted to the caller reached a program: %q", got)
			}
		})
	}
}

// TestStartSignals: a signal sent to the caller reaches the program the
// launcher started, and the caller dies of it too; a caller killed outright
// takes the program with it.
func TestStartSignals(t *testing.T) {
	lib := shimtest.Lib(t)
	var (
		mu    sync.Mutex
		procs []*testProc
	)
	rec := &recorder{start: func(r *shimwire.StartRequest) (shimwire.Process, string) {
		p, why := startWith(r, r.Env)
		if tp, ok := p.(*testProc); ok {
			mu.Lock()
			procs = append(procs, tp)
			mu.Unlock()
		}
		return p, why
	}}
	srv := listen(t, rec)
	env := append(baseEnv(lib), shimwire.EnvSock+"="+srv.Path, shimwire.EnvExec+"=1", shimwire.EnvStart+"="+startPath(lib),
		shimwire.EnvRules+"=sleep")
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		want string // how the caller ends
	}{
		{"TERM is passed on", syscall.SIGTERM, "signal: terminated"},
		{"KILL takes the program along", syscall.SIGKILL, "signal: killed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			procs = nil
			mu.Unlock()
			cmd := exec.Command("bash", "-c", "exec sleep 60")
			cmd.Env = env
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				mu.Lock()
				n := len(procs)
				mu.Unlock()
				if n == 1 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the program was never started")
				}
				time.Sleep(5 * time.Millisecond)
			}
			cmd.Process.Signal(tc.sig)
			err := cmd.Wait()
			if err == nil || err.Error() != tc.want {
				t.Errorf("the caller ended with %v, want %s", err, tc.want)
			}
			mu.Lock()
			p := procs[0]
			mu.Unlock()
			endedBySignal(t, p, "caller")
		})
	}
}

// endedBySignal checks that p, a program the launcher started, was ended by
// a signal within ten seconds, as when the process waiting for it (who)
// was killed.
func endedBySignal(t *testing.T, p shimwire.Process, who string) {
	t.Helper()
	done := make(chan int, 1)
	go func() { _, sig := p.Wait(); done <- sig }()
	select {
	case sig := <-done:
		if sig == 0 {
			t.Error("the program ended on its own, not by a signal")
		}
	case <-time.After(10 * time.Second):
		p.Kill()
		t.Errorf("the program outlived its %s", who)
	}
}

// TestStartArgvTooLarge: an argv longer than envsieve-start can take runs
// in the caller's place, without grants, and the launcher hears why.
func TestStartArgvTooLarge(t *testing.T) {
	lib := shimtest.Lib(t)
	rec := &recorder{start: func(r *shimwire.StartRequest) (shimwire.Process, string) {
		return startWith(r, append(r.Env, "GRANT=yes"))
	}}
	srv, err := shimwire.Listen(t.TempDir(), rec)
	if err != nil {
		t.Fatal(err)
	}
	env := append(baseEnv(lib), shimwire.EnvSock+"="+srv.Path, shimwire.EnvExec+"=1", shimwire.EnvStart+"="+startPath(lib))
	got := run(t, env, nil, "bash", "-c", `/bin/sh -c 'echo ${GRANT:-none}' $(seq 5000); /bin/sh -c 'echo ${GRANT:-none}' small`)
	if got != "none\nyes" {
		t.Errorf("got %q, want none (too large) then yes", got)
	}
	srv.Close()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	found := false
	for _, n := range rec.notices {
		found = found || n.Reason == "argv-too-large" && n.Path == "/bin/sh"
	}
	if !found {
		t.Errorf("no argv-too-large notice: %+v", rec.notices)
	}
}

// startPath is envsieve-start, next to the shim built for the tests.
func startPath(lib string) string { return filepath.Join(filepath.Dir(lib), shim.StartName) }

// fakeLauncher answers every start request with "begun" and an exit
// status of 42, and keeps nothing: what another user listening at a dead
// launcher's socket path could do (it would also read the caller's
// environment).
const fakeLauncher = `
import os, socket, sys, threading
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1])
os.chmod(sys.argv[1], 0o777)  # anyone may connect: only the shim's own check refuses
s.listen(64)
print("ready", flush=True)
def serve(c):
    m = c.recv(65536)
    if len(m) > 1 and m[1:2] == b"S":
        want = int(m[2:].split(b"\0")[1])
        while want > 0:
            want -= len(c.recv(65536)) - 2
        c.send(m[0:1] + b"G\0")
        _, anc, _, _ = c.recvmsg(64, 256)
        for _, _, data in anc:  # the caller's descriptors: held, its output would never end
            for i in range(0, len(data) - len(data) % 4, 4):
                os.close(int.from_bytes(data[i:i+4], sys.byteorder))
        c.send(m[0:1] + b"Bo\0")
        c.send(m[0:1] + b"Ex42\0")
    else:
        while c.recv(65536):
            pass
    c.close()
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
`

// subordinateUIDs says why this user cannot map a range of other uids into
// a user namespace, or nil when it can (newuidmap, a range in /etc/subuid,
// an unshare with --map-auto).
func subordinateUIDs() error {
	if _, err := exec.LookPath("newuidmap"); err != nil {
		return err
	}
	u, err := user.Current()
	if err != nil {
		return err
	}
	b, err := os.ReadFile("/etc/subuid")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if name, _, _ := strings.Cut(line, ":"); name == u.Username || name == u.Uid {
			cmd := exec.Command("unshare", "--map-auto", "--setuid", "1000", "--", "true")
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			return cmd.Run()
		}
	}
	return fmt.Errorf("no range for %s in /etc/subuid", u.Username)
}

// TestExecForeignLauncher: neither the shim nor envsieve-start talks to a
// listener of another user, so that nobody can read the caller's
// environment or stand in for a program through a dead launcher's path.
// The same listener run by the program's own user is obeyed, which shows
// the test can fail.
//
// As root the other user is nobody. Without root it is a uid of the user's
// own subordinate range (/etc/subuid, newuidmap): `unshare --map-auto`
// maps it into a user namespace, where the listener switches to it, and
// the shim reads that uid (100000 and up), not its own.
func TestExecForeignLauncher(t *testing.T) {
	// The system's python3: one under root's home is out of nobody's reach.
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Fatal("python3 is needed for the stand-in launcher: ", err)
	}
	foreign, attr := []string{python}, asNobody()
	if os.Getuid() != 0 {
		if err := subordinateUIDs(); err != nil {
			t.Skipf("another user's listener needs root, or a subordinate uid range: %v", err)
		}
		foreign, attr = []string{"unshare", "--map-auto", "--setuid", "1000", "--setgid", "1000", "--", python}, nil
	}
	lib := shimtest.Lib(t)
	prog := shimtest.Program(t, "execs", execC)
	for _, tc := range []struct {
		name   string
		attr   *syscall.SysProcAttr
		status string
		argv   []string
	}{
		{"another user", attr, "=7", foreign},
		{"same user", nil, "=42", []string{python}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, err := os.MkdirTemp("", "foreign-launcher-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(dir) })
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
			sock := filepath.Join(dir, "s")
			srv := exec.Command(tc.argv[0], append(tc.argv[1:], "-c", fakeLauncher, sock)...)
			srv.Env = []string{"PATH=/usr/bin:/bin"}
			srv.SysProcAttr = tc.attr
			out, err := srv.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			srv.Stderr = os.Stderr
			if err := srv.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
			if line, _ := bufio.NewReader(out).ReadString('\n'); line != "ready\n" {
				t.Fatalf("stand-in launcher: %q", line)
			}
			env := append(baseEnv(lib), shimwire.EnvSock+"="+sock, shimwire.EnvExec+"=1", shimwire.EnvStart+"="+startPath(lib))
			got := run(t, env, nil, prog) + "\n"
			if n := strings.Count(got, tc.status+"\n"); n != len(vias) {
				t.Errorf("want %d programs ending %s, got %q", len(vias), tc.status, got)
			}
		})
	}
}
