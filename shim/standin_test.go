//go:build linux

package shim_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
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

// forksC execs "sh -c CMD" (CMD from $CMD) from a child made by fork(),
// vfork(), or fork() after touching 48 MiB ("big"), and says: the child's
// pid, how long its close-on-exec pipe stayed open ("eof-early" within
// 1 s, as an exec closes it, else "eof-late"), and how it ended.
const forksC = `#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
extern char **environ;
static long ms(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
int main(int argc, char **argv) {
	const char *mode = argc > 1 ? argv[1] : "fork";
	if (!strcmp(mode, "big")) {
		size_t n = (size_t)48 << 20;
		char *p = malloc(n);
		memset(p, 1, n);
	}
	setvbuf(stdout, NULL, _IONBF, 0);
	int pfd[2];
	if (pipe2(pfd, O_CLOEXEC) != 0)
		return 1;
	char *cargv[] = {"sh", "-c", getenv("CMD"), NULL};
	long t0 = ms();
	pid_t pid = strcmp(mode, "vfork") ? fork() : vfork();
	if (pid == 0) {
		execve("/bin/sh", cargv, environ);
		_exit(127);
	}
	printf("child=%d\n", (int)pid);
	close(pfd[1]);
	char c;
	(void)!read(pfd[0], &c, 1);
	printf("%s\n", ms() - t0 < 1000 ? "eof-early" : "eof-late");
	int st;
	waitpid(pid, &st, 0);
	if (WIFEXITED(st)) printf("exit=%d\n", WEXITSTATUS(st));
	else if (WIFSIGNALED(st)) printf("exit=sig%d\n", WTERMSIG(st));
	return 0;
}
`

// standIns records, for each start request, the program that made it
// (/proc/PID/exe of the peer) and the program the test started.
type standIns struct {
	mu    sync.Mutex
	exes  []string
	procs []*testProc
}

func (s *standIns) start(r *shimwire.StartRequest) (shimwire.Process, string) {
	exe, _ := os.Readlink("/proc/" + strconv.Itoa(r.Peer) + "/exe")
	p, why := startWith(r, append(r.Env, "GRANT=yes"))
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exes = append(s.exes, exe)
	if tp, ok := p.(*testProc); ok {
		s.procs = append(s.procs, tp)
	}
	return p, why
}

func (s *standIns) wait(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		s.mu.Lock()
		got := len(s.procs)
		s.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the program was never started")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestStartInPlace: a child fork() made sends the start request itself and
// stands in for the program, saving the exec of envsieve-start, and does
// what that exec would have done: its close-on-exec descriptors close once
// the program has begun (Python's subprocess waits for exactly that), and
// it ends as the program ended. A vfork child (whose memory is its
// parent's) and a child of a large image (whose copy it would keep while
// the program runs) exec envsieve-start as before. Each case checks which
// process asked, so the test fails if the wrong one does.
func TestStartInPlace(t *testing.T) {
	lib := shimtest.Lib(t)
	prog := shimtest.Program(t, "forks", forksC)
	realProg, _ := filepath.EvalSymlinks(prog)
	for _, tc := range []struct {
		mode, asker string
	}{
		{"fork", realProg},
		{"vfork", shim.StartName},
		{"big", shim.StartName},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			si, env := standInServer(t, lib, "echo via:${GRANT:-none}; sleep 2; exit 7")
			got := run(t, env, nil, prog, tc.mode) + "\n"
			if !strings.Contains(got, "via:yes\n") || !strings.Contains(got, "exit=7\n") {
				t.Errorf("want the program granted and its exit status passed on, got %q", got)
			}
			// "eof-early" alone: the program's own output may come
			// between it and its newline (two writes of one printf).
			if !strings.Contains(got, "eof-early") || strings.Contains(got, "eof-late") {
				t.Errorf("the caller's close-on-exec pipe stayed open while the program ran: %q", got)
			}
			si.mu.Lock()
			defer si.mu.Unlock()
			if len(si.exes) != 1 || !(si.exes[0] == tc.asker || filepath.Base(si.exes[0]) == tc.asker) {
				t.Errorf("the start request came from %q, want %s", si.exes, tc.asker)
			}
		})
	}
}

// TestStartInPlaceSignals: a signal sent to a fork child standing in for
// the program reaches the program, and the child dies of it as the
// program did; a child killed outright takes the program with it.
func TestStartInPlaceSignals(t *testing.T) {
	lib := shimtest.Lib(t)
	prog := shimtest.Program(t, "forks", forksC)
	for _, tc := range []struct {
		name string
		sig  syscall.Signal
		want string
	}{
		{"TERM is passed on", syscall.SIGTERM, "exit=sig15"},
		{"KILL takes the program along", syscall.SIGKILL, "exit=sig9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			si, env := standInServer(t, lib, "exec sleep 60")
			cmd := exec.Command(prog, "fork")
			cmd.Env = env
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewScanner(out)
			lines.Scan()
			pid, err := strconv.Atoi(strings.TrimPrefix(lines.Text(), "child="))
			if err != nil {
				t.Fatalf("no child pid: %q", lines.Text())
			}
			si.wait(t, 1)
			syscall.Kill(pid, tc.sig)
			var rest []string
			for lines.Scan() {
				rest = append(rest, lines.Text())
			}
			cmd.Wait()
			if !strings.Contains(strings.Join(rest, "\n"), tc.want) {
				t.Errorf("the stand-in ended with %q, want %s", rest, tc.want)
			}
			si.mu.Lock()
			p := si.procs[0]
			si.mu.Unlock()
			endedBySignal(t, p, "stand-in")
		})
	}
}

// TestStartRequestSizes: a start request whose body fits one packet (built
// in that packet) and one that does not (built in a mapping and sent in
// several) both arrive whole, from a fork child standing in and from
// envsieve-start alike, including bodies of exactly one packet and one
// byte more.
func TestStartRequestSizes(t *testing.T) {
	lib := shimtest.Lib(t)
	prog := shimtest.Program(t, "forks", forksC)
	var (
		mu     sync.Mutex
		bodies []int
	)
	rec := &recorder{start: func(r *shimwire.StartRequest) (shimwire.Process, string) {
		n := len(r.Path) + 1 + len(strconv.Itoa(len(r.Argv))) + 1
		for _, a := range r.Argv {
			n += len(a) + 1
		}
		for _, e := range r.Env {
			n += len(e) + 1
		}
		mu.Lock()
		bodies = append(bodies, n)
		mu.Unlock()
		return startWith(r, r.Env)
	}}
	srv := listen(t, rec)
	env := append(baseEnv(lib), shimwire.EnvSock+"="+srv.Path, shimwire.EnvExec+"=1", shimwire.EnvStart+"="+startPath(lib),
		shimwire.EnvRules+"=sh", `CMD=echo len:${#BIG}`)
	body := func(mode string, size int) int {
		t.Helper()
		mu.Lock()
		bodies = nil
		mu.Unlock()
		got := run(t, append(env, "BIG="+strings.Repeat("x", size)), nil, prog, mode) + "\n"
		if want := "len:" + strconv.Itoa(size) + "\n"; !strings.Contains(got, want) {
			t.Fatalf("%s, BIG of %d bytes: want %q, got %q", mode, size, want, got)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(bodies) != 1 {
			t.Fatalf("%s: %d start requests, want 1", mode, len(bodies))
		}
		return bodies[0]
	}
	for _, mode := range []string{"fork", "vfork"} {
		base := body(mode, 1) - 1
		one := shimwire.MaxMsg - 2 - base // the body fills one packet exactly
		for _, size := range []int{one, one + 1, 3*shimwire.MaxMsg + 5} {
			if got := body(mode, size); got != base+size {
				t.Errorf("%s: a body of %d bytes, want %d", mode, got, base+size)
			}
		}
	}
}

// standInServer starts a launcher's server whose starts si records, and
// returns the environment of a caller under a rule for sh whose CMD is
// script.
func standInServer(t *testing.T, lib, script string) (*standIns, []string) {
	t.Helper()
	si := &standIns{}
	srv := listen(t, &recorder{start: si.start})
	return si, append(baseEnv(lib), shimwire.EnvSock+"="+srv.Path, shimwire.EnvExec+"=1", shimwire.EnvStart+"="+startPath(lib),
		shimwire.EnvRules+"=sh", "CMD="+script)
}
