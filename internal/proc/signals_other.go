//go:build !unix

package proc

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
)

// forwarded are the signals a resident launcher passes on to its child.
var forwarded = []os.Signal{os.Interrupt}

// sigWinch does not exist here (Windows): a value no signal has.
const sigWinch = syscall.Signal(-1)

// controllingTerminal: there are no ptys here (Windows).
func controllingTerminal(*syscall.SysProcAttr) error {
	return errors.New("a terminal for the child (pty) is not supported on this system")
}

// OwnGroup: a cancellation kills the command only here.
func OwnGroup(*exec.Cmd) {}
