//go:build linux

package shim_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/internal/shimwire"
)

// plainEnv is a launch's usual tree environment: the shim and its
// variables, and no key hidden or granted in this process. An exec of a
// program no rule names takes the shim's short path (plain_exec) in it.
func plainEnv(lib, sock, rules, drop string) []string {
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root", shimwire.EnvPreload + "=" + lib,
		shimwire.EnvSock + "=" + sock, shimwire.EnvExec + "=1", shimwire.EnvStart + "=" + startPath(lib),
		shimwire.EnvRules + "=" + rules, shimwire.EnvDrop + "=" + drop, shimwire.EnvDeny + "=OLD",
		"OLD=denied-by-a-rule"}
}

// TestPlainExec: in a process that holds no hidden or granted key, an exec
// of a program no rule names goes ahead as asked, with no launcher hop,
// but a deny-only rule that matches still takes its keys (through every
// exec and spawn function), and one a rule names still goes to the
// launcher.
func TestPlainExec(t *testing.T) {
	lib := shimtest.Lib(t)
	prog := shimtest.Program(t, "execs", execC)
	for _, tc := range []struct {
		name, rules, drop string
		asks              int  // start requests the launcher gets
		old               bool // OLD reaches the programs
	}{
		// fexecve's program is named by the file behind its descriptor
		// (dash, say), hence "*sh".
		{"no rule names sh", "gh", "", 0, true},
		{"a deny-only rule names sh", "gh", "gh\tX\n*sh\tOLD", 0, false},
		{"a deny-only catch-all", "gh", "*\tOLD", 0, false},
		{"a deny-only rule names another", "gh", "gh\tOLD", 0, true},
		{"a rule names sh", "*sh", "", len(vias), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			sock := listen(t, rec).Path
			got := run(t, plainEnv(lib, sock, tc.rules, tc.drop), nil, prog) + "\n"
			rec.mu.Lock()
			asks := len(rec.starts)
			rec.mu.Unlock()
			if asks != tc.asks {
				t.Errorf("the launcher was asked %d times, want %d", asks, tc.asks)
			}
			if strings.Count(got, "=7\n") != len(vias) {
				t.Errorf("a program did not run: %q", got)
			}
			want := ":none\n"
			if tc.old {
				want = ":none old\n"
			}
			if strings.Count(got, want) != len(vias) {
				t.Errorf("want %d programs printing %q: %q", len(vias), want, got)
			}
		})
	}
}

// staticExecC execs its argument from a forked child, through execve and
// execv, and prints how each ended.
const staticExecC = `#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
int main(int argc, char **argv) {
	if (argc != 2) return 2;
	for (int i = 0; i < 2; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			char *args[] = {argv[1], NULL};
			if (i == 0) execve(argv[1], args, environ);
			else execv(argv[1], args);
			_exit(127);
		}
		int st;
		waitpid(pid, &st, 0);
		printf("%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	}
	return 0;
}
`

// TestStaticNotice: an exec of a static program, which the shim cannot
// load into, tells the launcher so ("static-program"), on the short path
// and on the long one (a key hidden in the caller); a dynamic one does not.
func TestStaticNotice(t *testing.T) {
	lib := shimtest.Lib(t)
	prog := shimtest.Program(t, "execstatic", staticExecC)
	static := shimtest.Program(t, "static", "int main(void) { return 3; }\n", "-static")
	dynamic := shimtest.Program(t, "dynamic", "int main(void) { return 3; }\n")
	for _, tc := range []struct {
		name, target string
		hide         bool
		notices      int
	}{
		{"static, short path", static, false, 2},
		{"static, a key hidden", static, true, 2},
		{"dynamic, short path", dynamic, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			sock := listen(t, rec).Path
			env := plainEnv(lib, sock, "gh", "")
			if tc.hide {
				env = append(env, hiddenKey+"="+hiddenVal, shimwire.EnvHide+"="+hiddenKey)
			}
			if got := run(t, env, nil, prog, tc.target); got != "3\n3\n" && got != "3\n3" {
				t.Errorf("the program did not run twice: %q", got)
			}
			// A notice is served apart from the program's run: wait for
			// those expected, then a little for any more.
			count := func() int {
				rec.mu.Lock()
				defer rec.mu.Unlock()
				n := 0
				for _, no := range rec.notices {
					if no.Reason == "static-program" && filepath.Clean(no.Path) == tc.target {
						n++
					}
				}
				return n
			}
			for deadline := time.Now().Add(2 * time.Second); count() < tc.notices && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(20 * time.Millisecond)
			n := count()
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if n != tc.notices {
				t.Errorf("%d static-program notices for %s, want %d (all: %+v)", n, tc.target, tc.notices, rec.notices)
			}
		})
	}
}
