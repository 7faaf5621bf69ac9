//go:build unix

package proc_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/proc"
)

// TestMain runs this test binary as the launcher of TestEarlySignals when
// ENVSIEVE_PROC_EARLY names what it does.
func TestMain(m *testing.M) {
	if mode := os.Getenv("ENVSIEVE_PROC_EARLY"); mode != "" {
		earlyLauncher(mode, os.Getenv("ENVSIEVE_PROC_MARK"))
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// earlyLauncher registers the signals early, as `envsieve run` does, gets
// the signal mode names (none: "plain"), then starts a program that writes
// mark, resident ("resident") or as a launcher that execs in its place
// ("exec").
func earlyLauncher(mode, mark string) {
	proc.EarlySignals()
	proc.WaitEarlySignals()
	var taken *proc.Signals
	if mode == "taken" {
		taken = proc.TakeSignals() // the launch is about to start its program
	}
	sig := map[string]syscall.Signal{"term": syscall.SIGTERM, "int": syscall.SIGINT, "hup": syscall.SIGHUP,
		"winch": syscall.SIGWINCH, "usr1": syscall.SIGUSR1}[os.Getenv("ENVSIEVE_PROC_SIGNAL")]
	if sig != 0 {
		syscall.Kill(os.Getpid(), sig)
		time.Sleep(20 * time.Millisecond)
	}
	script := "grep SigIgn /proc/$$/status > " + mark
	// As cmd/envsieve's start does with the launch's error.
	interrupted := func(err error) {
		var ie *proc.InterruptedError
		if errors.As(err, &ie) {
			os.WriteFile(mark+".interrupted", nil, 0o644)
			proc.RaiseSelf(ie.Signal)
			os.Exit(99) // the signal did not end it
		}
	}
	if taken == nil {
		taken = proc.TakeSignals()
	}
	if mode == "exec" {
		interrupted(proc.EndEarlySignals())
		syscall.Exec("/bin/sh", []string{"sh", "-c", script}, []string{"PATH=/usr/bin:/bin"})
		os.Exit(125)
	}
	c := &proc.Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}}
	code, err := proc.Supervise(c, proc.Resident{Signals: taken, Stdout: os.Stdout, Stderr: os.Stderr})
	interrupted(err)
	if err != nil || code != 0 {
		os.Exit(125)
	}
}

// TestEarlySignals: a signal an early registration (EarlySignals) caught
// before the start has the effect it would have had without it. One that
// ends a Go program ends the launcher by that signal, and nothing starts,
// resident or in its place: at once before the launch took the
// registration, through the launch's error after (InterruptedError, then
// RaiseSelf, as envsieve's start does); one that does nothing (SIGWINCH, SIGUSR1 to a Go
// program), or one the launcher's caller ignored (SIGHUP under nohup), lets
// the program start, and in place the program inherits the ignored SIGHUP.
func TestEarlySignals(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode, signal string
		ignoreHUP    bool
		killedBy     syscall.Signal // 0: the program starts
	}{
		{"resident", "", false, 0},
		{"resident", "term", false, syscall.SIGTERM},
		{"resident", "int", false, syscall.SIGINT},
		{"resident", "winch", false, 0},
		{"resident", "usr1", false, 0}, // Go's runtime takes it and does nothing
		{"resident", "hup", true, 0},
		{"taken", "term", false, syscall.SIGTERM},
		{"taken", "winch", false, 0},
		{"exec", "", false, 0},
		{"exec", "term", false, syscall.SIGTERM},
		{"exec", "hup", true, 0},
	} {
		name := tc.mode + "/" + tc.signal
		mark := filepath.Join(t.TempDir(), "mark")
		cmd := exec.Command(self)
		if tc.ignoreHUP {
			// As nohup: SIGHUP ignored from the start.
			cmd = exec.Command("/bin/sh", "-c", `trap "" HUP; exec "$0"`, self)
		}
		cmd.Env = []string{"ENVSIEVE_PROC_EARLY=" + tc.mode, "ENVSIEVE_PROC_SIGNAL=" + tc.signal, "ENVSIEVE_PROC_MARK=" + mark,
			"PATH=/usr/bin:/bin"}
		out, err := cmd.CombinedOutput()
		_, statErr := os.Stat(mark)
		started := statErr == nil
		if tc.killedBy != 0 {
			var ee *exec.ExitError
			ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !errors.As(err, &ee) || !ws.Signaled() || ws.Signal() != tc.killedBy {
				t.Errorf("%s: the launcher ended with %v; want killed by %v\n%s", name, err, tc.killedBy, out)
			}
			if started {
				t.Errorf("%s: the program started after the launcher caught %v", name, tc.killedBy)
			}
			// Taken by the launch, the signal ends it through its error
			// path (cleaned up); before, at once, as without the
			// registration.
			_, ierr := os.Stat(mark + ".interrupted")
			if through := ierr == nil; through != (tc.mode == "taken") {
				t.Errorf("%s: ended through InterruptedError: %v; want %v", name, through, tc.mode == "taken")
			}
			continue
		}
		if err != nil || !started {
			t.Errorf("%s: %v, the program started: %v\n%s", name, err, started, out)
			continue
		}
		if tc.mode == "exec" && tc.ignoreHUP {
			b, _ := os.ReadFile(mark)
			var ign uint64
			if _, err := fmt.Sscanf(string(b), "SigIgn: %x", &ign); err != nil || ign&1 == 0 {
				t.Errorf("%s: the program does not inherit SIGHUP ignored (%q, %v)", name, b, err)
			}
		}
	}
}
