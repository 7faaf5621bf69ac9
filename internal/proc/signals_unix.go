//go:build unix

package proc

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"
)

// forwarded are the signals a resident launcher passes on to its child.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT}

// endsProcess reports whether sig, forwarded, ends a Go program that does
// not catch it: SIGINT, SIGTERM, SIGHUP and SIGQUIT (os/signal); Go's
// runtime takes SIGUSR1 and SIGUSR2 and does nothing, and SIGWINCH and
// SIGCONT do nothing either.
func endsProcess(sig os.Signal) bool {
	return sig == syscall.SIGINT || sig == syscall.SIGTERM || sig == syscall.SIGHUP || sig == syscall.SIGQUIT
}

// RaiseSelf ends this process by sig, as the signal would have without
// envsieve's registration (InterruptedError; and the reaper's end, raise):
// the signal's disposition back to its default, and sig sent to itself. A
// signal that stops, or one ignored from the start, does not end it: it
// returns after a moment, and the caller exits as it can.
func RaiseSelf(sig os.Signal) {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return
	}
	signal.Reset(s)
	_ = syscall.Kill(os.Getpid(), s)
	time.Sleep(50 * time.Millisecond)
}

// sigWinch is the terminal's window-size change.
const sigWinch = syscall.SIGWINCH

// controllingTerminal makes the child a session leader whose controlling
// terminal is its stdin (the pty's slave).
func controllingTerminal(a *syscall.SysProcAttr) error {
	a.Setsid, a.Setctty = true, true
	return nil
}

// OwnGroup runs cmd in a process group of its own, which a cancellation
// of its context kills whole (a server's command: Host.Server).
func OwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}
