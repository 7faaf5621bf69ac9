//go:build unix

package launch

import (
	"os"
	"syscall"
)

// forwarded are the signals a resident launcher passes on to its child.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH, syscall.SIGCONT}

// sigWinch is the terminal's window-size change.
const sigWinch = syscall.SIGWINCH

// controllingTerminal makes the child a session leader whose controlling
// terminal is its stdin (the pty's slave).
func controllingTerminal(a *syscall.SysProcAttr) error {
	a.Setsid, a.Setctty = true, true
	return nil
}
