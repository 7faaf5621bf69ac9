//go:build unix

package proc

import (
	"os"
	"os/exec"
	"syscall"
)

// forwarded are the signals a resident launcher passes on to its child.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT}

// endsProcess reports whether sig's default effect ends the process: a
// forwarded signal other than SIGWINCH (ignored) and SIGCONT.
func endsProcess(sig os.Signal) bool { return sig != syscall.SIGWINCH && sig != syscall.SIGCONT }

// raiseSelf sends sig to the launcher itself.
func raiseSelf(sig os.Signal) {
	if s, ok := sig.(syscall.Signal); ok {
		_ = syscall.Kill(os.Getpid(), s)
	}
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
