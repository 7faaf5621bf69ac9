//go:build linux

package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/proc"
	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestIsolate runs as an unprivileged user (nobody when the tests run as
// root): a shell holding a canary in its environment starts envsieve, whose
// child looks for the canary in every /proc/*/environ it can read. Without
// --isolate the child finds it in its parent shell's environ (the same user
// may read it: the leak --isolate exists for); with --isolate it sees only
// its own namespace's processes and finds nothing, keeps the user's uid,
// and its exit status passes through.
func TestIsolate(t *testing.T) {
	t.Run("envsieve as the init", func(t *testing.T) { testIsolate(t, nil) })
	t.Run("envsieve-init", func(t *testing.T) { testIsolate(t, cInitEnv(t)) })
}

// cInitEnv is what makes an isolated launch's init envsieve-init: the
// shim, beside which it is installed.
func cInitEnv(t *testing.T) []string {
	return []string{"ENVSIEVE_SHIM=" + shimtest.Lib(t), "ENVSIEVE_DEBUG=1"}
}

func testIsolate(t *testing.T, extraEnv []string) {
	exe, home := unprivilegedCopy(t, "envsieve")
	canary := "canary-" + strings.Repeat("q7", 8)
	probe := `n=$(cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -c ` + canary + `); echo "hits=$n uid=$(id -u)"; exit 5`
	run := func(isolate bool) string {
		args := exe + " run"
		if isolate {
			args += " --isolate"
		}
		// The shell is the ancestor that holds the canary.
		cmd := exec.Command("/bin/sh", "-c", args+` -- /bin/sh -c "$PROBE"; echo "status=$?"`)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + home, "PARENT_ONLY=" + canary, "PROBE=" + probe}, extraEnv...)
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("isolate=%v: %v\n%s", isolate, err, out)
		}
		return strings.ReplaceAll(string(out), canary, "<canary>")
	}
	control := run(false)
	if strings.Contains(control, "hits=0") || !strings.Contains(control, "status=5") {
		t.Fatalf("control: the child should find its parent's canary (the leak --isolate prevents):\n%s", control)
	}
	got := run(true)
	if !strings.Contains(got, "hits=0 ") {
		t.Fatalf("with --isolate the child still reads an ancestor's environ:\n%s", got)
	}
	if !strings.Contains(got, "status=5") {
		t.Errorf("exit status did not pass through:\n%s", got)
	}
	if want := "uid=" + uidString(); !strings.Contains(got, want) {
		t.Errorf("uid inside is not the user's (%s):\n%s", want, got)
	}
	if ran := strings.Contains(got, "isolate: the init is "); ran != (extraEnv != nil) {
		t.Errorf("envsieve-init was the init: %v:\n%s", ran, got)
	}
}

func uidString() string {
	if attr := asUnprivileged(); attr != nil {
		return "65534"
	}
	out, _ := exec.Command("id", "-u").Output()
	return strings.TrimSpace(string(out))
}

// TestIsolateNoCapabilities: the program under --isolate holds no
// capability, even when envsieve runs as root (dev containers do), so it
// cannot uncover the host's /proc with `umount -l /proc` or mount anything.
// Run as the test's own user: as root it is the attack; as another user it
// checks the same promise.
func TestIsolateNoCapabilities(t *testing.T) {
	t.Run("envsieve as the init", func(t *testing.T) { testIsolateNoCapabilities(t, nil) })
	t.Run("envsieve-init", func(t *testing.T) { testIsolateNoCapabilities(t, cInitEnv(t)) })
}

func testIsolateNoCapabilities(t *testing.T, extraEnv []string) {
	probe := `grep '^Cap\(Eff\|Prm\|Bnd\|Amb\)' /proc/self/status; umount -l /proc 2>/dev/null && echo UMOUNTED; mount -t tmpfs none /tmp 2>/dev/null && echo MOUNTED; echo uid=$(id -u)`
	cmd := exec.Command("envsieve", "run", "--isolate", "--no-shim", "--", "/bin/sh", "-c", probe)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, extraEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := string(out)
	for _, c := range []string{"CapEff", "CapPrm", "CapBnd", "CapAmb"} {
		if !strings.Contains(got, c+":\t0000000000000000") {
			t.Errorf("%s is not empty:\n%s", c, got)
		}
	}
	if strings.Contains(got, "UMOUNTED") || strings.Contains(got, "MOUNTED") {
		t.Errorf("the isolated program could unmount or mount:\n%s", got)
	}
}

// TestIsolateInit: what the init of an isolated launch passes on, by each
// init: the program's exit status, 128+N when a signal ended it, 127 and
// 126 when it cannot be run, and a signal the launcher gets (SIGTERM) to
// the program.
func TestIsolateInit(t *testing.T) {
	for _, init := range []struct {
		name string
		env  func(t *testing.T) []string
		// run is envsieve's verb and flags: without the shim, a launcher
		// with envsieve-init execs it in place (TestIsolateInPlace); with
		// it, the launcher stays resident and starts it.
		run []string
	}{
		{"envsieve as the init", func(*testing.T) []string { return nil }, []string{"run", "--isolate", "--no-shim", "--"}},
		{"envsieve-init", cInitEnv, []string{"run", "--isolate", "--no-shim", "--"}},
		{"envsieve-init, resident", cInitEnv, []string{"run", "--isolate", "--"}},
	} {
		t.Run(init.name, func(t *testing.T) {
			env := append([]string{"PATH=" + os.Getenv("PATH")}, init.env(t)...)
			noInterp := filepath.Join(t.TempDir(), "script")
			if err := os.WriteFile(noInterp, []byte("#!/nonexistent/interp\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			status := func(err error) int {
				var ee *exec.ExitError
				if errors.As(err, &ee) {
					return ee.ExitCode()
				}
				if err != nil {
					t.Fatal(err)
				}
				return 0
			}
			for _, tc := range []struct {
				name   string
				argv   []string
				status int
				stderr string
			}{
				{"an exit status", []string{"/bin/sh", "-c", "exit 9"}, 9, ""},
				{"a signal", []string{"/bin/sh", "-c", "kill -KILL $$"}, 137, ""},
				// Found by the launcher, not by the init's exec: its #!
				// interpreter is missing.
				{"not found", []string{noInterp}, 127, "not found"},
				{"not executable", []string{"/etc/hostname"}, 126, "not executable"},
			} {
				cmd := exec.Command("envsieve", append(append([]string{}, init.run...), tc.argv...)...)
				cmd.Env = env
				var stderr strings.Builder
				cmd.Stderr = &stderr
				if got := status(cmd.Run()); got != tc.status || !strings.Contains(stderr.String(), tc.stderr) {
					t.Errorf("%s: exit %d, stderr %q; want %d and %q", tc.name, got, stderr.String(), tc.status, tc.stderr)
				}
				if ran := strings.Contains(stderr.String(), "isolate: the init is "); ran != (init.name != "envsieve as the init") {
					t.Errorf("%s: envsieve-init was the init: %v", tc.name, ran)
				}
				if inPlace := strings.Contains(stderr.String(), "in place: it makes the namespaces"); inPlace != (init.name == "envsieve-init") {
					t.Errorf("%s: envsieve-init ran in the launcher's place: %v", tc.name, inPlace)
				}
			}
			cmd := exec.Command("envsieve", append(append([]string{}, init.run...), "/bin/sh", "-c",
				`trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done`)...)
			cmd.Env = env
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			lines := bufio.NewScanner(out)
			if !lines.Scan() || lines.Text() != "ready" {
				cmd.Process.Kill()
				t.Fatalf("the program did not start: %q", lines.Text())
			}
			cmd.Process.Signal(syscall.SIGTERM)
			done := make(chan error, 1)
			go func() { lines.Scan(); done <- cmd.Wait() }()
			select {
			case err := <-done:
				if got := status(err); got != 7 || lines.Text() != "got-term" {
					t.Errorf("SIGTERM to the launcher: exit %d, the program said %q; want 7 and got-term", got, lines.Text())
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Errorf("SIGTERM to the launcher did not reach the program")
			}
		})
	}
}

// TestIsolateInPlace: an isolated or sealed launch that needs no resident
// launcher (no shim, here) execs envsieve-init in its own place, which
// makes the namespaces itself. Seen from outside, run as an unprivileged
// user: the launcher's pid is envsieve-init, whose child pid 1 of the
// namespaces (envsieve-init too) is the program's parent, and whose other
// child holds the namespaces until the launch has ended. A launcher that
// stayed resident would be envsieve. A SIGTERM to the launcher's pid
// reaches the program, whose status comes back. A credential file with no
// credential in it (an ~/.npmrc that names a registry) starts no broker,
// and the sealed launch still goes in place; one with a token starts the
// broker, which keeps the launcher resident.
func TestIsolateInPlace(t *testing.T) {
	exe, _ := unprivilegedInstall(t)
	for _, tc := range []struct {
		flag, npmrc string
		resident    bool
	}{
		{flag: "--isolate"},
		{flag: "--seal"},
		{flag: "--seal", npmrc: "registry=https://registry.npmjs.org/\n"},
		{flag: "--seal", npmrc: "//registry.npmjs.org/:_authToken=npm_" + strings.Repeat("Pl4c", 9) + "\n", resident: true},
	} {
		home := unprivilegedHome(t)
		if tc.npmrc != "" {
			writeOwned(t, filepath.Join(home, ".npmrc"), tc.npmrc)
		}
		name := tc.flag
		if tc.npmrc != "" {
			name += ", ~/.npmrc " + map[bool]string{false: "with no credential", true: "with a token"}[tc.resident]
		}
		cmd := exec.Command(exe, "run", "--no-shim", tc.flag, "--", "/bin/sh", "-c", `trap 'exit 7' TERM; echo "ready $$"; while :; do sleep 0.05; done`)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + home}, cInitEnv(t)...)
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		lines, stderr := startLines(t, cmd)
		if !lines.Scan() || lines.Text() != "ready 2" {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("%s: the program did not start as pid 2 of its namespace: %q\n%s", name, lines.Text(), stderr.String())
		}
		launcher := cmd.Process.Pid
		var init, holders []int
		for _, c := range proc.Children(launcher) {
			switch {
			case comm(c) != "envsieve-init": // the broker's process
			case len(proc.Children(c)) > 0:
				init = append(init, c)
			default:
				holders = append(holders, c) // the namespaces' holder (init.c, hold_namespaces)
			}
		}
		var prog []int
		if len(init) == 1 {
			prog = proc.Children(init[0])
		}
		got := []string{comm(launcher)}
		for _, p := range append(init, prog...) {
			got = append(got, comm(p))
		}
		// In place, envsieve-init forks a holder of the namespaces beside
		// pid 1, outside the tree's pid namespace: it holds no descriptor,
		// and ends with the launch.
		if want := map[bool]int{false: 1, true: 0}[tc.resident]; len(holders) != want {
			t.Errorf("%s: %d holders of the namespaces beside pid 1; want %d", name, len(holders), want)
		}
		for _, h := range holders {
			// It closes them just after its fork, which a loaded machine
			// may run after the program's first line.
			var fds []os.DirEntry
			var err error
			for i := 0; i < 200; i++ {
				if fds, err = os.ReadDir(fmt.Sprintf("/proc/%d/fd", h)); err != nil || len(fds) == 0 {
					break
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err != nil || len(fds) != 0 {
				t.Errorf("%s: the holder keeps %d descriptors open (%v)", name, len(fds), err)
			}
		}
		cmd.Process.Signal(syscall.SIGTERM)
		err := cmd.Wait()
		for _, h := range holders {
			ended := false
			for i := 0; i < 200 && !ended; i++ {
				st, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", h))
				ended = len(st) == 0 || strings.Contains(string(st), ") Z ")
				time.Sleep(5 * time.Millisecond)
			}
			if !ended {
				t.Errorf("%s: the holder of the namespaces, pid %d, outlived the launch by a second", name, h)
			}
		}
		want := "envsieve-init envsieve-init sh"
		if tc.resident {
			want = "envsieve envsieve-init sh"
		}
		if strings.Join(got, " ") != want {
			t.Errorf("%s: the launcher, its children and theirs are %q; want %q", name, got, want)
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 7 {
			t.Errorf("%s: SIGTERM to the launcher: exit %v; want status 7 (the program's trap)\n%s", name, err, stderr.String())
		}
		if inPlace := strings.Contains(stderr.String(), "in place: it makes the namespaces"); inPlace == tc.resident {
			t.Errorf("%s: the launcher said it execs the init in place: %v; want %v\n%s", name, inPlace, !tc.resident, stderr.String())
		}
	}
}

// startLines starts cmd with its stdout read line by line and its stderr
// kept.
func startLines(t *testing.T, cmd *exec.Cmd) (*bufio.Scanner, *strings.Builder) {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return bufio.NewScanner(out), &stderr
}

// comm returns the command name of pid ("" when unknown).
func comm(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", pid))
	return strings.TrimSpace(string(b))
}

// TestUnshareRefused: envsieve-init in the launcher's place, where user
// namespaces are refused after all (here by a seccomp filter, which the
// launcher itself would have seen; a limit or a security module it does
// not see). Given envsieve as its fallback it seals with Landlock (the
// masked file cannot be read, the init's variables are gone, LD_PRELOAD
// is back, the status passes through); given none, or no seal to make, it
// fails, and the program does not start.
func TestUnshareRefused(t *testing.T) {
	exe, home := unprivilegedCopy(t, "envsieve")
	noNS := filepath.Join(filepath.Dir(exe), "nouserns")
	copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
	init := filepath.Join(filepath.Dir(shimtest.Lib(t)), "envsieve-init")
	canary := "unshare-canary-" + strings.Repeat("5e", 6)
	secret := filepath.Join(home, "credentials")
	if err := os.WriteFile(secret, []byte(canary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		os.Lchown(secret, 65534, 65534)
	}
	probe := `cat "$SECRET" 2>/dev/null; echo "ran preload=$LD_PRELOAD"; env | grep ENVSIEVE_INIT; exit 4`
	for _, tc := range []struct {
		fallback string
		seal     bool
		status   int
		want     string
	}{
		{exe, true, 4, "ran preload=/nonexistent.so"},
		{"-", true, 125, "the kernel refused to create user, pid and mount namespaces"},
		// A fallback with no seal to make: Landlock's init would seal
		// nothing.
		{exe, false, 125, "the kernel refused to create user, pid and mount namespaces"},
	} {
		cmd := exec.Command(noNS, init, "--unshare", tc.fallback, "/bin/sh", "sh", "-c", probe)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "SECRET=" + secret,
			"ENVSIEVE_INIT_LD_PRELOAD=/nonexistent.so"}
		if tc.seal {
			cmd.Env = append(cmd.Env, "ENVSIEVE_INIT_SEAL=m "+secret)
		}
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		out, err := cmd.CombinedOutput()
		got := strings.ReplaceAll(string(out), canary, "<canary>")
		status := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			status = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if status != tc.status || !strings.Contains(got, tc.want) {
			t.Errorf("fallback %s: exit %d; want %d and %q:\n%s", tc.fallback, status, tc.status, tc.want, got)
		}
		if strings.Contains(string(out), canary) {
			t.Errorf("fallback %s: the program read the masked file", tc.fallback)
		}
		if strings.Contains(got, "ENVSIEVE_INIT") {
			t.Errorf("fallback %s: the init's variables reached the program:\n%s", tc.fallback, got)
		}
		if tc.status == 125 && strings.Contains(got, "ran") {
			t.Errorf("fallback %s, seal %v: the program ran:\n%s", tc.fallback, tc.seal, got)
		}
	}
}
