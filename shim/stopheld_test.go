//go:build linux

package shim_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/internal/shimwire"
)

// stopHeldEnv makes the test binary a launcher that stops itself
// (TestStopHeldLauncherHelper).
const stopHeldEnv = "ENVSIEVE_TEST_STOPHELD_DIR"

// TestStopHeldLauncherHelper is not a test: run by TestStoppedHeldPipe as
// a process of its own, it is a launcher that takes a start request's
// descriptors ("granted", then the caller's reply) and then stops itself
// (a real SIGSTOP, of the whole process) at exactly the moment docs/shim.md
// names: after it took the caller's descriptors, before the start. Once it
// runs again it starts the program only if its caller is still there, as
// the real launcher does. It prints its socket's path, then "gone" or
// "started" for each start request.
func TestStopHeldLauncherHelper(t *testing.T) {
	dir := os.Getenv(stopHeldEnv)
	if dir == "" {
		return
	}
	out := make(chan string, 4)
	rec := &recorder{start: func(r *shimwire.StartRequest) (shimwire.Process, string) {
		if r.Argv[0] != "touch" {
			return nil, "no rule"
		}
		if err := r.AskStdio(); err != nil {
			out <- "ask"
			return nil, err.Error()
		}
		stopSelf() // the test sends SIGCONT
		if r.Gone() {
			out <- "gone"
			return nil, "the caller gave up waiting"
		}
		out <- "started"
		return startWith(r, nil)
	}}
	srv, err := shimwire.Listen(dir, rec)
	if err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		os.Exit(1)
	}
	os.Stdout.WriteString("path " + srv.Path + "\n")
	for s := range out {
		os.Stdout.WriteString(s + "\n")
	}
}

// TestStoppedHeldPipe reproduces the window the bound does not cover
// (docs/shim.md, "Safety"): the launcher is stopped (SIGSTOP) for 15 s
// after it took the caller's descriptors and before it started the
// program, while the tree, as an unprivileged user, runs `out=$(touch M)`.
// What holds: the exec fails closed at the 10 s bound (exit 125, saying
// why), without running the program in the caller's place, and the
// launcher, running again, starts nothing (its caller is gone). And the reader of the
// caller's stdout (the shell's `$(...)`, a pipe) sees its end at the bound
// too, not when the launcher runs again: the launcher holds only the write
// end of the caller's relay, never the caller's pipe itself.
func TestStoppedHeldPipe(t *testing.T) {
	t.Parallel()
	lib := shimtest.Lib(t)
	// The helper runs as the tree's user: the launcher serves only peers
	// of its own uid. Its binary is a copy that user can run.
	dir, err := os.MkdirTemp("", "envsieve-stopheld-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "launcher")
	copyExe(t, self, exe)
	cred := asNobody()
	helper := exec.Command(exe, "-test.run=^TestStopHeldLauncherHelper$")
	helper.Env = []string{stopHeldEnv + "=" + dir, "PATH=/usr/bin:/bin"}
	helper.SysProcAttr = cred
	helper.Dir = dir
	hout, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var herr bytes.Buffer
	helper.Stderr = &herr
	// A parallel test's fork may hold the copy open for writing a moment
	// (ETXTBSY).
	for i := 0; ; i++ {
		err := helper.Start()
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.ETXTBSY) || i == 50 {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
		helper = exec.Command(exe, "-test.run=^TestStopHeldLauncherHelper$")
		helper.Env = []string{stopHeldEnv + "=" + dir, "PATH=/usr/bin:/bin"}
		helper.SysProcAttr = cred
		helper.Dir = dir
		helper.Stderr = &herr
		if hout, err = helper.StdoutPipe(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		helper.Process.Signal(syscall.SIGCONT)
		helper.Process.Kill()
		helper.Wait()
	})
	lines := make(chan string, 8)
	go func() {
		sc := bufio.NewScanner(hout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var sock string
	select {
	case l := <-lines:
		if !strings.HasPrefix(l, "path ") {
			t.Fatalf("helper: %q\n%s", l, herr.String())
		}
		sock = strings.TrimPrefix(l, "path ")
	case <-time.After(30 * time.Second):
		t.Fatalf("the helper launcher did not start\n%s", herr.String())
	}

	marker := filepath.Join(dir, "ran")
	rcFile := filepath.Join(dir, "rc")
	// The substitution's child execs touch (the shim's own request, in a
	// forked child), then records how it ended; the shell then reads the
	// substitution's pipe to its end.
	script := `out=$(touch ` + marker + `; echo $? > ` + rcFile + `); echo "out=[$out]"`
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = append(baseEnv(lib), shimwire.EnvSock+"="+sock, shimwire.EnvExec+"=1", shimwire.EnvStart+"="+startPath(lib))
	cmd.SysProcAttr = cred
	cmd.Dir = dir
	// The shell's own output to a file: only the substitution's pipe is
	// measured.
	outFile, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	cmd.Stdout, cmd.Stderr = outFile, outFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan time.Time, 1)
	go func() { cmd.Wait(); ended <- time.Now() }()

	// The launcher stops itself once it holds the descriptors.
	var stopped time.Time
	for i := 0; ; i++ {
		if procState(helper.Process.Pid) == "T" {
			stopped = time.Now()
			break
		}
		if i == 3000 {
			cmd.Process.Kill()
			t.Fatalf("the launcher did not reach the window\n%s", herr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The exec fails closed at the bound, while the launcher is stopped.
	var failed time.Duration
	for {
		if b, err := os.ReadFile(rcFile); err == nil && len(b) > 0 {
			failed = time.Since(stopped)
			if got := strings.TrimSpace(string(b)); got != "125" {
				t.Errorf("the exec held by the stopped launcher exited %s, want 125 (fail closed)", got)
			}
			break
		}
		if time.Since(stopped) > 14*time.Second {
			t.Errorf("the exec did not end within the bound (10 s) of the stop")
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if failed > 0 && failed > 11500*time.Millisecond {
		t.Errorf("the exec ended %v after the stop, want within the bound (10 s)", failed)
	}
	const stop = 15 * time.Second
	time.Sleep(time.Until(stopped.Add(stop)))
	resumed := time.Now()
	if err := helper.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	var end time.Time
	select {
	case end = <-ended:
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the shell did not end after the launcher ran again")
	}
	// The launcher, running again, finds its caller gone and starts
	// nothing: the program never ran, here or in the caller's place.
	select {
	case got := <-lines:
		if got != "gone" {
			t.Errorf("the launcher, running again: %q, want gone (nothing starts)", got)
		}
	case <-time.After(10 * time.Second):
		t.Error("the launcher did not report the request after it ran again")
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the program ran (in the caller's place, or started by the launcher after its caller failed closed)")
	}
	outFile.Seek(0, io.SeekStart)
	text, _ := io.ReadAll(outFile)
	for _, want := range []string{"did not start the program in time", "out=[]"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("want %q in:\n%s", want, text)
		}
	}
	waited := end.Sub(stopped)
	t.Logf("exec failed closed %v after the stop; the pipe's reader ended %v after it (the stop: %v)", failed, waited, stop)
	if !end.Before(resumed) || waited > 11500*time.Millisecond {
		t.Errorf("the pipe's reader ended %v after the stop, want within the bound (10 s), not when the launcher ran again (%v)", waited, stop)
	}
}

// stopSelf stops the whole process (SIGSTOP) and returns only once it runs
// again (SIGCONT). A SIGSTOP sent to the process, kill(getpid()), is taken
// by a thread the kernel picks (the main thread, when it may take it),
// and the thread that sent it runs on until that one has started the
// group stop: for microseconds, and under load for milliseconds, in which
// the launcher went on past its check that the caller is still there and
// started the program, to stop only then (docs/shim.md: this test saw the
// launcher "start the program after the caller had failed closed"). Sent
// to the calling thread itself (tgkill), the stop is taken by that thread
// on its way back from the system call, before it runs anything more.
func stopSelf() {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	unix.Tgkill(unix.Getpid(), unix.Gettid(), unix.SIGSTOP)
}

// stopSelfEnv makes the test binary TestStopSelfHelper.
const stopSelfEnv = "ENVSIEVE_TEST_STOPSELF"

// TestStopSelfHelper is not a test: run by TestStopSelf, it stops itself
// with stopSelf and prints the monotonic clock (ns) as it returns.
func TestStopSelfHelper(t *testing.T) {
	if os.Getenv(stopSelfEnv) == "" {
		return
	}
	// From a thread other than the main one, as a launcher's handler
	// mostly runs: on the main thread, this goroutine keeps it while
	// another does the work.
	runtime.LockOSThread()
	work := func() int64 {
		os.Stdout.WriteString("ready\n")
		stopSelf()
		return monotonic()
	}
	var at int64
	if unix.Gettid() != unix.Getpid() {
		at = work()
	} else {
		done := make(chan int64)
		go func() {
			runtime.LockOSThread()
			done <- work()
		}()
		at = <-done
	}
	os.Stdout.WriteString(strconv.FormatInt(at, 10) + "\n")
	os.Exit(0)
}

// TestStopSelf: nothing after stopSelf runs before the process is
// continued. The process, stopped from a thread other than its main one,
// is stopped for 300 ms; stopSelf returns after the SIGCONT. (With
// kill(getpid()) in its place, it returned 300 ms before it, in each of 4
// runs.)
func TestStopSelf(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		cmd := exec.Command(self, "-test.run=^TestStopSelfHelper$")
		cmd.Env = []string{stopSelfEnv + "=1"}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		if !sc.Scan() || sc.Text() != "ready" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the helper did not start: %q", sc.Text())
		}
		for j := 0; procState(cmd.Process.Pid) != "T"; j++ {
			if j == 2000 {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatal("the helper did not stop")
			}
			time.Sleep(time.Millisecond)
		}
		time.Sleep(300 * time.Millisecond)
		resumed := monotonic()
		cmd.Process.Signal(syscall.SIGCONT)
		if !sc.Scan() {
			t.Fatal("the helper said nothing after it ran again")
		}
		cmd.Wait()
		returned, err := strconv.ParseInt(sc.Text(), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if returned < resumed {
			t.Fatalf("stopSelf returned %v before the process was continued", time.Duration(resumed-returned))
		}
	}
}

// monotonic reads CLOCK_MONOTONIC, in ns, the same in every process.
func monotonic() int64 {
	var ts unix.Timespec
	unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return ts.Nano()
}

// procState returns the state letter of /proc/PID/stat ("T": stopped).
func procState(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || i+3 > len(s) {
		return ""
	}
	return s[i+2 : i+3]
}

// copyExe copies the file at src to dst, executable by anyone.
func copyExe(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dst, 0o755)
}
