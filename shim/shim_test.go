//go:build linux

package shim_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/internal/shimwire"
	"github.com/envsieve/envsieve/shim"
)

// The hidden key and its value, assembled at run time.
var (
	hiddenKey = "SHIMTEST_API_KEY"
	hiddenVal = "sk-" + strings.Repeat("HiddenV4lue", 3)
)

// probeC reads the hidden key three ways and asks a child shell for it.
const probeC = `#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
extern char **environ;
int main(int argc, char **argv) {
	const char *k = argv[1];
	const char *v = getenv(k);
	int listed = 0;
	for (char **e = environ; *e; e++)
		if (strncmp(*e, k, strlen(k)) == 0 && (*e)[strlen(k)] == '=') listed = 1;
	FILE *f = fopen("/proc/self/environ", "r");
	static char buf[1 << 20];
	size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
	if (f) fclose(f);
	int inproc = 0;
	for (size_t i = 0; i + strlen(k) <= n; i++)
		if (memcmp(buf + i, k, strlen(k)) == 0) inproc = 1;
	printf("byname=%s listed=%d proc=%d path=%d home=%d\n", v ? "yes" : "no", listed, inproc,
		getenv("PATH") != NULL, getenv("HOME") != NULL);
	fflush(stdout);
	char cmd[256];
	snprintf(cmd, sizeof cmd, "echo child=${%s:+yes}", k);
	return system(cmd);
}
`

func baseEnv(lib string) []string {
	return []string{"PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root", hiddenKey + "=" + hiddenVal,
		shimwire.EnvPreload + "=" + lib, shimwire.EnvHide + "=" + hiddenKey + ",NOT_SET_AT_ALL"}
}

func run(t *testing.T, env []string, cred *syscall.SysProcAttr, argv ...string) string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	cmd.SysProcAttr = cred
	cmd.Dir = os.TempDir()
	out, err := cmd.CombinedOutput()
	// Checked first, so that a failure never prints the value.
	if strings.Contains(string(out), hiddenVal) {
		t.Fatalf("%s printed the hidden value", argv[0])
	}
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(argv, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// TestHideC: a C program reads the hidden key by name, but neither environ,
// /proc/self/environ nor its child has it; PATH and HOME are untouched. As
// root, and as nobody (the /proc claim must hold for an unprivileged user).
func TestHideC(t *testing.T) {
	lib := shimtest.Lib(t)
	prog := shimtest.Program(t, "probe", probeC)
	want := "byname=yes listed=0 proc=0 path=1 home=1\nchild="
	for _, tc := range []struct {
		name string
		cred *syscall.SysProcAttr
	}{{"self", nil}, {"nobody", asNobody()}} {
		t.Run(tc.name, func(t *testing.T) {
			if got := run(t, baseEnv(lib), tc.cred, prog, hiddenKey); got != want {
				t.Errorf("got %q, want %q", got, want)
			}
		})
	}
	// The control: without the shim everything sees the key.
	env := baseEnv(lib)[:3]
	if got := run(t, env, nil, prog, hiddenKey); got != "byname=yes listed=1 proc=1 path=1 home=1\nchild=yes" {
		t.Errorf("control: %q", got)
	}
}

func asNobody() *syscall.SysProcAttr {
	if os.Getuid() != 0 {
		return nil
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}

// runtimes are the rows of docs/shim.md's table: each prints whether it can
// read the hidden key by name, whether it can list it, and whether a child
// it starts gets it. want is the row as documented.
var runtimes = []struct {
	name     string
	bin      string // looked up in PATH; the row is skipped only where noted
	optional bool
	argv     func(dir string) []string
	setup    func(t *testing.T, dir string)
	want     string
}{
	{name: "node", bin: "node", want: "byname=yes listed=no child=no", argv: func(string) []string {
		return []string{"node", "-e", `const k = process.argv[1];
const c = require("child_process").execFileSync("/bin/sh", ["-c", "echo ${" + k + ":+yes}"]).toString().trim();
console.log("byname=" + (process.env[k] ? "yes" : "no") + " listed=" + (Object.keys(process.env).includes(k) ? "yes" : "no") + " child=" + (c ? "yes" : "no"))`, hiddenKey}
	}},
	{name: "python3", bin: "python3", want: "byname=no listed=no child=no", argv: func(string) []string {
		return []string{"python3", "-c", `import os, subprocess, sys
k = sys.argv[1]
c = subprocess.run(["/bin/sh", "-c", "echo ${%s:+yes}" % k], capture_output=True, text=True).stdout.strip()
print("byname=%s listed=%s child=%s" % ("yes" if os.getenv(k) else "no", "yes" if k in os.environ else "no", "yes" if c else "no"))`, hiddenKey}
	}},
	{name: "ruby", bin: "ruby", want: "byname=yes listed=no child=no", argv: func(string) []string {
		return []string{"ruby", "-e", `k = ARGV[0]
c = IO.popen(["/bin/sh", "-c", "echo ${#{k}:+yes}"]).read.strip
puts "byname=#{ENV[k] ? 'yes' : 'no'} listed=#{ENV.keys.include?(k) ? 'yes' : 'no'} child=#{c.empty? ? 'no' : 'yes'}"`, hiddenKey}
	}},
	{name: "perl", bin: "perl", want: "byname=no listed=no child=no", argv: func(string) []string {
		return []string{"perl", "-e", `my $k = $ARGV[0]; my $c = ` + "`" + `/bin/sh -c 'echo \${$k:+yes}'` + "`" + `; chomp $c;
printf "byname=%s listed=%s child=%s\n", (defined $ENV{$k} ? "yes" : "no"), ((grep { $_ eq $k } keys %ENV) ? "yes" : "no"), ($c ? "yes" : "no");`, hiddenKey}
	}},
	{name: "bash", bin: "bash", want: "byname=no listed=no child=no", argv: func(string) []string {
		return []string{"bash", "-c", `k=$1; c=$(/bin/sh -c "echo \${$k:+yes}"); l=no; env | grep -q "^$k=" && l=yes
echo "byname=$([ -n "${!k}" ] && echo yes || echo no) listed=$l child=$([ -n "$c" ] && echo yes || echo no)"`, "bash", hiddenKey}
	}},
	{name: "java", bin: "java", optional: true, want: "byname=no listed=no child=no",
		setup: func(t *testing.T, dir string) {
			src := `public class Probe { public static void main(String[] a) throws Exception {
String k = a[0];
Process p = new ProcessBuilder("/bin/sh", "-c", "echo ${" + k + ":+yes}").start();
String c = new String(p.getInputStream().readAllBytes()).trim(); p.waitFor();
System.out.println("byname=" + (System.getenv(k) != null ? "yes" : "no") + " listed=" + (System.getenv().containsKey(k) ? "yes" : "no") + " child=" + (c.isEmpty() ? "no" : "yes"));
}}`
			if err := os.WriteFile(filepath.Join(dir, "Probe.java"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
		},
		argv: func(dir string) []string { return []string{"java", filepath.Join(dir, "Probe.java"), hiddenKey} }},
	// A static Go program does not load the shim; the shell it starts does,
	// and hides the key again, because the Go program passed on
	// ENVSIEVE_SHIM_HIDE.
	{name: "go", bin: "go", want: "byname=yes listed=yes child=no",
		setup: func(t *testing.T, dir string) {
			src := `package main
import ("fmt"; "os"; "os/exec"; "strings")
func main() {
	k := os.Args[1]
	_, listed := func() (string, bool) { for _, kv := range os.Environ() { if strings.HasPrefix(kv, k+"=") { return kv, true } }; return "", false }()
	out, _ := exec.Command("/bin/sh", "-c", "echo ${"+k+":+yes}").Output()
	yn := func(b bool) string { if b { return "yes" }; return "no" }
	fmt.Printf("byname=%s listed=%s child=%s\n", yn(os.Getenv(k) != ""), yn(listed), yn(strings.TrimSpace(string(out)) != ""))
}`
			if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "probe"), filepath.Join(dir, "main.go"))
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("go build: %v\n%s", err, out)
			}
		},
		argv: func(dir string) []string { return []string{filepath.Join(dir, "probe"), hiddenKey} }},
}

// TestRuntimes measures docs/shim.md's table with the real runtimes.
func TestRuntimes(t *testing.T) {
	lib := shimtest.Lib(t)
	for _, rt := range runtimes {
		t.Run(rt.name, func(t *testing.T) {
			bin, err := exec.LookPath(rt.bin)
			if err != nil {
				if rt.optional {
					t.Skipf("%s is not installed; its row is documented as measured where present", rt.bin)
				}
				t.Fatalf("%s is needed for this row of docs/shim.md: %v", rt.bin, err)
			}
			dir := t.TempDir()
			if rt.setup != nil {
				rt.setup(t, dir)
			}
			env := baseEnv(lib)
			env[0] = "PATH=" + filepath.Dir(bin) + ":/usr/bin:/bin"
			if got := run(t, env, nil, rt.argv(dir)...); got != rt.want {
				t.Errorf("got %q, want %q (docs/shim.md)", got, rt.want)
			}
		})
	}
}

// TestStartNormally: shells and interpreters start and work under the shim,
// with PATH and HOME, and without the hidden key.
func TestStartNormally(t *testing.T) {
	lib := shimtest.Lib(t)
	for _, argv := range [][]string{
		{"bash", "-c", `echo "$PATH|$HOME|${SHIMTEST_API_KEY:-gone}"`},
		{"sh", "-c", `echo "$PATH|$HOME|${SHIMTEST_API_KEY:-gone}"`},
		{"python3", "-c", `import os; print(os.environ["PATH"] + "|" + os.environ["HOME"] + "|" + os.environ.get("SHIMTEST_API_KEY", "gone"))`},
		{"perl", "-e", `print "$ENV{PATH}|$ENV{HOME}|", ($ENV{SHIMTEST_API_KEY} // "gone"), "\n"`},
		{"node", "-e", `console.log(process.env.PATH + "|" + process.env.HOME + "|" + (Object.keys(process.env).includes("SHIMTEST_API_KEY") ? "listed" : "gone"))`},
	} {
		t.Run(argv[0], func(t *testing.T) {
			// pyenv's python3 is a script that puts its own directories first.
			got := run(t, baseEnv(lib), nil, argv...)
			if want := "/usr/local/bin:/usr/bin:/bin|/root|gone"; !strings.HasSuffix(got, want) {
				t.Errorf("got %q, want it to end in %q", got, want)
			}
		})
	}
	t.Run("git", func(t *testing.T) {
		dir := t.TempDir()
		env := append(baseEnv(lib), "GIT_CONFIG_NOSYSTEM=1")
		got := run(t, env, nil, "git", "-C", dir, "init", "-q", ".")
		if got != "" {
			t.Errorf("git init: %q", got)
		}
		if got := run(t, env, nil, "git", "-C", dir, "status", "--short", "--branch"); !strings.HasPrefix(got, "## ") {
			t.Errorf("git status: %q", got)
		}
	})
}

// recorder is a shimwire.Handler that keeps what it was sent.
type recorder struct {
	mu       sync.Mutex
	accesses []shimwire.Access
	notices  []shimwire.Notice
	starts   []shimwire.Start
	refused  []string
	start    func(*shimwire.StartRequest) (shimwire.Process, string)
}

func (r *recorder) Access(a *shimwire.Access) {
	r.mu.Lock()
	r.accesses = append(r.accesses, *a)
	r.mu.Unlock()
}
func (r *recorder) Notice(n *shimwire.Notice) {
	r.mu.Lock()
	r.notices = append(r.notices, *n)
	r.mu.Unlock()
}
func (r *recorder) Refused(s string) { r.mu.Lock(); r.refused = append(r.refused, s); r.mu.Unlock() }
func (r *recorder) Start(q *shimwire.StartRequest) (shimwire.Process, string) {
	r.mu.Lock()
	r.starts = append(r.starts, *q.Start)
	f := r.start
	r.mu.Unlock()
	if f == nil {
		return nil, "no rule"
	}
	return f(q)
}

func (r *recorder) seen(op byte, name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, a := range r.accesses {
		if a.Op == op && a.Name == name {
			n++
		}
	}
	return n
}

const accessC = `#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>
#include <sys/wait.h>
static void *worker(void *arg) {
	char name[32];
	for (int i = 0; i < 1000; i++) {
		snprintf(name, sizeof name, "THREAD_%ld_%d", (long)arg, i % 50);
		getenv(name);
	}
	return NULL;
}
int main(void) {
	for (int i = 0; i < 3; i++) getenv("READ_THRICE");
	secure_getenv("SECURE_ONE");
	setenv("SET_ONE", "v", 1);
	unsetenv("UNSET_ONE");
	static char pe[] = "PUT_ONE=v";
	putenv(pe);
	pthread_t th[8];
	for (long i = 0; i < 8; i++) pthread_create(&th[i], NULL, worker, (void *)i);
	for (int i = 0; i < 8; i++) pthread_join(th[i], NULL);
	pid_t pid = fork();
	if (pid == 0) {
		getenv("IN_FORK_CHILD");
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	clearenv();
	printf("done\n");
	return 0;
}
`

// TestAccessReports: every access is reported once per process by name,
// from threads and from a fork child; the value is never sent.
func TestAccessReports(t *testing.T) {
	lib := shimtest.Lib(t)
	prog := shimtest.Program(t, "access", accessC, "-pthread")
	rec := &recorder{}
	srv, err := shimwire.Listen(t.TempDir(), rec)
	if err != nil {
		t.Fatal(err)
	}
	env := append(baseEnv(lib), shimwire.EnvSock+"="+srv.Path, "READ_THRICE="+hiddenVal)
	if got := run(t, env, nil, prog); got != "done" {
		t.Fatalf("got %q", got)
	}
	// The reports are served apart from the program's run, and Close
	// drains what is queued for 50 ms only: on a loaded machine (-race)
	// the last of the 400 thread reads may come later. Wait for the last
	// ones the program sends first.
	threadReads := func() int {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		n := 0
		for _, a := range rec.accesses {
			if strings.HasPrefix(a.Name, "THREAD_") {
				n++
			}
		}
		return n
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline) &&
		(threadReads() < 8*50 || rec.seen(shimwire.OpClearenv, "") == 0 || rec.seen(shimwire.OpGetenv, "IN_FORK_CHILD") == 0); {
		time.Sleep(5 * time.Millisecond)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		op   byte
		name string
		want int
	}{
		{shimwire.OpGetenv, "READ_THRICE", 1},
		{shimwire.OpSecureGetenv, "SECURE_ONE", 1},
		{shimwire.OpSetenv, "SET_ONE", 1},
		{shimwire.OpUnsetenv, "UNSET_ONE", 1},
		{shimwire.OpPutenv, "PUT_ONE", 1},
		{shimwire.OpClearenv, "", 1},
		{shimwire.OpGetenv, "THREAD_7_49", 1},
		{shimwire.OpGetenv, "IN_FORK_CHILD", 1},
	} {
		if got := rec.seen(c.op, c.name); got != c.want {
			t.Errorf("%s %s reported %d times, want %d", shimwire.OpName(c.op), c.name, got, c.want)
		}
	}
	threads := 0
	for _, a := range rec.accesses {
		if strings.HasPrefix(a.Name, "THREAD_") {
			threads++
		}
		if strings.Contains(a.Name, hiddenVal) {
			t.Fatal("a report carries the value")
		}
	}
	if threads != 8*50 {
		t.Errorf("%d distinct thread reads reported, want 400", threads)
	}
	if len(rec.refused) > 0 {
		t.Errorf("refused: %v", rec.refused)
	}
}

// TestLauncherGoneOrFull: a program under the shim goes on when the
// launcher's socket is missing, and when the launcher never reads.
func TestLauncherGoneOrFull(t *testing.T) {
	lib := shimtest.Lib(t)
	prog := shimtest.Program(t, "many", `#include <stdio.h>
#include <stdlib.h>
int main(void) {
	char name[32];
	for (int i = 0; i < 200000; i++) { snprintf(name, sizeof name, "NAME_%d", i); getenv(name); }
	printf("done\n");
	return 0;
}
`)
	dir := t.TempDir()
	stuck := filepath.Join(dir, "stuck")
	ln, err := listenPacket(stuck) // accepts nothing, reads nothing
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for name, sock := range map[string]string{"gone": filepath.Join(dir, "nothing-here"), "full": stuck, "not-a-socket": prog} {
		t.Run(name, func(t *testing.T) {
			env := append(baseEnv(lib), shimwire.EnvSock+"="+sock)
			start := time.Now()
			if got := run(t, env, nil, prog); got != "done" {
				t.Fatalf("got %q", got)
			}
			if d := time.Since(start); d > 20*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

func listenPacket(path string) (*os.File, error) {
	fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: path}); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	if err := syscall.Listen(fd, 1); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

// TestCompanions: next to the executable, then ../lib/envsieve/ beside it.
func TestCompanions(t *testing.T) {
	got := shim.Companions("/opt/envsieve/bin/envsieve", "libenvsieve.so")
	want := []string{"/opt/envsieve/bin/libenvsieve.so", "/opt/envsieve/lib/envsieve/libenvsieve.so"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Companions = %q, want %q", got, want)
	}
}

// TestGrantedVar: the granted keys are named in one entry, none gives
// none, and a list the shim could not hold is refused, not cut short.
func TestGrantedVar(t *testing.T) {
	long := make([]string, 0, 300)
	for i := range 300 {
		long = append(long, fmt.Sprintf("KEY_%04d", i))
	}
	for _, tt := range []struct {
		keys    []string
		want    string
		wantErr bool
	}{
		{nil, "", false},
		{[]string{"GITHUB_TOKEN"}, "ENVSIEVE_SHIM_GRANTED=GITHUB_TOKEN", false},
		{[]string{"A", "B"}, "ENVSIEVE_SHIM_GRANTED=A,B", false},
		{long[:227], "ENVSIEVE_SHIM_GRANTED=" + strings.Join(long[:227], ","), false}, // 2042 bytes
		{long, "", true},
	} {
		got, err := shim.GrantedVar(tt.keys)
		if got != tt.want || (err != nil) != tt.wantErr {
			t.Errorf("GrantedVar(%d keys) = %.40q, %v", len(tt.keys), got, err)
		}
	}
}
