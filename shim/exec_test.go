//go:build linux

package shim_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/shim"
)

// execC starts "sh -c 'echo VIA:${GRANT:-none}${OLD:+ old}'" through every
// exec and spawn function the shim intercepts, one per fork.
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
	static char buf[128];
	snprintf(buf, sizeof buf, "echo %s:${GRANT:-none}${OLD:+ old}", via);
	return buf;
}
int main(void) {
	const char *vias[] = {"execve", "execv", "execvp", "execvpe", "execl", "execlp", "execle", "fexecve"};
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
		waitpid(pid, NULL, 0);
	}
	const char *spawns[] = {"posix_spawn", "posix_spawnp"};
	for (int i = 0; i < 2; i++) {
		char *argv[] = {"sh", "-c", script(spawns[i]), NULL};
		pid_t pid;
		if (i == 0) posix_spawn(&pid, "/bin/sh", NULL, NULL, argv, environ);
		else posix_spawnp(&pid, "sh", NULL, NULL, argv, environ);
		waitpid(pid, NULL, 0);
	}
	return 0;
}
`

var vias = []string{"execve", "execv", "execvp", "execvpe", "execl", "execlp", "execle", "fexecve", "posix_spawn", "posix_spawnp"}

// TestExecGrants: every intercepted function asks for the grants of the
// program it starts and applies the answer: GRANT added, OLD removed. The
// caller itself never sees GRANT.
func TestExecGrants(t *testing.T) {
	lib := shimtest.Lib(t)
	prog := shimtest.Program(t, "execs", execC)
	rec := &recorder{grant: func(x *shim.Exec) ([]string, []string, bool) {
		if x.Argv[0] == "sh" && len(x.Argv) == 3 {
			return []string{"GRANT=yes"}, []string{"OLD"}, true
		}
		return nil, nil, true
	}}
	srv, err := shim.Listen(t.TempDir(), rec)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	env := append(baseEnv(lib), shim.EnvSock+"="+srv.Path, shim.EnvExec+"=1", "OLD=x")
	got := run(t, env, nil, prog)
	for _, via := range vias {
		if !strings.Contains(got, via+":yes\n") && !strings.HasSuffix(got, via+":yes") {
			t.Errorf("%s: no grant in %q", via, got)
		}
	}
	if strings.Contains(got, " old") {
		t.Errorf("a denied key reached a program: %q", got)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// The path is resolved as the real call does: PATH for the p variants,
	// the file behind the descriptor (through symlinks) for fexecve.
	for _, x := range rec.execs {
		if !strings.HasPrefix(x.Path, "/") {
			t.Errorf("request for %q: the path should be resolved", x.Path)
		}
	}
}

// TestExecFailsClosed: a launcher that does not answer in time costs the
// exec its grants, never a hang; the keys granted to the caller
// (ENVSIEVE_SHIM_GRANTED) are withheld from what it starts, and the
// launcher hears why.
func TestExecFailsClosed(t *testing.T) {
	lib := shimtest.Lib(t)
	prog := shimtest.Program(t, "execs", execC)
	rec := &recorder{grant: func(x *shim.Exec) ([]string, []string, bool) {
		time.Sleep(300 * time.Millisecond)
		return []string{"GRANT=late"}, nil, true
	}}
	srv, err := shim.Listen(t.TempDir(), rec)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	env := append(baseEnv(lib), shim.EnvSock+"="+srv.Path, shim.EnvExec+"=1",
		"OLD=granted-to-me", shim.EnvGranted+"=OLD")
	start := time.Now()
	got := run(t, env, nil, prog)
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v", d)
	}
	for _, via := range vias {
		if !strings.Contains(got, via+":none") {
			t.Errorf("%s: want no grant, got %q", via, got)
		}
	}
	if strings.Contains(got, "late") || strings.Contains(got, " old") {
		t.Errorf("a late grant or a caller's grant reached a program: %q", got)
	}
	// Without an answer, what a rule's deny matches is removed from a
	// program a rule may match: a silent launcher cannot skip a deny.
	env = append(baseEnv(lib), shim.EnvSock+"="+srv.Path, shim.EnvExec+"=1", "OLD=denied-by-a-rule",
		shim.EnvRules+"=s?\nda*", shim.EnvDeny+"=NOPE\nOL*")
	got = run(t, env, nil, prog)
	if strings.Contains(got, " old") || strings.Count(got, ":none") != len(vias) {
		t.Errorf("deny skipped without an answer: %q", got)
	}
	srv.Close()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	timeouts := 0
	for _, n := range rec.notices {
		if n.Reason == "timeout" {
			timeouts++
		}
	}
	if timeouts == 0 {
		t.Errorf("no timeout notice: %+v", rec.notices)
	}
}

// TestExecArgvTooLarge: a request that cannot fit the message goes ahead
// without grants, and the launcher hears why.
func TestExecArgvTooLarge(t *testing.T) {
	lib := shimtest.Lib(t)
	rec := &recorder{grant: func(*shim.Exec) ([]string, []string, bool) { return []string{"GRANT=yes"}, nil, true }}
	srv, err := shim.Listen(t.TempDir(), rec)
	if err != nil {
		t.Fatal(err)
	}
	env := append(baseEnv(lib), shim.EnvSock+"="+srv.Path, shim.EnvExec+"=1", "BIG="+strings.Repeat("a", shim.MaxMsg))
	got := run(t, env, nil, "bash", "-c", `/bin/sh -c 'echo ${GRANT:-none}' "$BIG"; /bin/sh -c 'echo ${GRANT:-none}' small`)
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

// fakeLauncher answers every exec request with GRANT=evil: what another
// user listening at a dead launcher's socket path could answer.
const fakeLauncher = `
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(sys.argv[1])
s.listen(64)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    m = c.recv(65536)
    if len(m) > 1 and m[1:2] == b"X":
        c.send(m[0:1] + b"R+GRANT=evil\0")
    c.close()
`

// TestExecForeignLauncher: the shim neither asks nor reports to a
// listener of another user, so that nobody can hand a program variables
// through a dead launcher's path. The same listener run by the program's
// own user is obeyed, which shows the test can fail.
func TestExecForeignLauncher(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run the listener as another user")
	}
	// The system's python3: one under root's home is out of nobody's reach.
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		t.Fatal("python3 is needed for the stand-in launcher: ", err)
	}
	lib := shimtest.Lib(t)
	prog := shimtest.Program(t, "execs", execC)
	for _, tc := range []struct {
		name  string
		attr  *syscall.SysProcAttr
		grant string
	}{
		{"another user", asNobody(), "none"},
		{"same user", nil, "evil"},
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
			srv := exec.Command(python, "-c", fakeLauncher, sock)
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
			env := append(baseEnv(lib), shim.EnvSock+"="+sock, shim.EnvExec+"=1")
			got := run(t, env, nil, prog)
			if n := strings.Count(got, ":"+tc.grant); n != len(vias) {
				t.Errorf("want %d programs with GRANT %s, got %q", len(vias), tc.grant, got)
			}
		})
	}
}
