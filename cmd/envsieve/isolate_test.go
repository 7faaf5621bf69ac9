//go:build linux

package main

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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
	}{
		{"envsieve as the init", func(*testing.T) []string { return nil }},
		{"envsieve-init", cInitEnv},
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
				cmd := exec.Command("envsieve", append([]string{"run", "--isolate", "--no-shim", "--"}, tc.argv...)...)
				cmd.Env = env
				var stderr strings.Builder
				cmd.Stderr = &stderr
				if got := status(cmd.Run()); got != tc.status || !strings.Contains(stderr.String(), tc.stderr) {
					t.Errorf("%s: exit %d, stderr %q; want %d and %q", tc.name, got, stderr.String(), tc.status, tc.stderr)
				}
				if ran := strings.Contains(stderr.String(), "isolate: the init is "); ran != (init.name == "envsieve-init") {
					t.Errorf("%s: envsieve-init was the init: %v", tc.name, ran)
				}
			}
			cmd := exec.Command("envsieve", "run", "--isolate", "--no-shim", "--", "/bin/sh", "-c",
				`trap 'echo got-term; exit 7' TERM; echo ready; while :; do sleep 0.05; done`)
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
