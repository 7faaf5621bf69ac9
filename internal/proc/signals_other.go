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

// endsProcess: os.Interrupt, the one forwarded here, ends the process.
func endsProcess(os.Signal) bool { return true }

// RaiseSelf cannot send a signal to the launcher itself here: it returns,
// and the caller exits with 128+N.
func RaiseSelf(os.Signal) {}

// sigWinch does not exist here (Windows): a value no signal has.
const sigWinch = syscall.Signal(-1)

// controllingTerminal: there are no ptys here (Windows).
func controllingTerminal(*syscall.SysProcAttr) error {
	return errors.New("a terminal for the child (pty) is not supported on this system")
}

// OwnGroup: a cancellation kills the command only here.
func OwnGroup(*exec.Cmd) {}
