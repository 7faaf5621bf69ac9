package shimwire

import (
	"os"
	"syscall"
)

// Handler receives what the shims of a process tree send. Its methods are
// called from many goroutines at once.
type Handler interface {
	// Access records one access to the environment.
	Access(a *Access)
	// Start decides on a start request and, when a rule grants the program
	// something, starts it. A nil Process declines, for the reason given:
	// the caller then runs the program itself, with what it already has.
	// The caller's descriptors 0-2 come only once Start has decided to
	// start the program and asks for them ([StartRequest.AskStdio]); just
	// before the program starts, [StartRequest.Gone] says whether its
	// caller gave up meanwhile. The request's files are closed when Start
	// returns.
	Start(r *StartRequest) (Process, string)
	// Notice records an exec that went ahead without grants.
	Notice(n *Notice)
	// Refused records a message or a connection the server threw away:
	// a malformed packet, a peer of another user, too many connections.
	Refused(reason string)
}

// StartRequest is a start request and what came with it.
type StartRequest struct {
	*Start
	PID   int         // the caller, as its own pid namespace numbers it
	Peer  int         // the caller, as the launcher's pid namespace numbers it (SO_PEERCRED)
	Stdio [3]*os.File // the caller's descriptors 0, 1 and 2, once AskStdio has them; nil where it had none open
	Dir   *os.File    // the caller's working directory

	ask  func() ([3]*os.File, error) // the server's 'G' and the caller's 'F'; nil: Stdio is given
	gone func() bool
}

// AskStdio asks the caller for its descriptors 0-2 (the launcher's
// [Granted]) and sets Stdio: call it once the program will start, and not
// before, so that a launcher that never gets that far holds none of them.
// An error means the caller gave up waiting (or sent something else): the
// program must not start. A request made by hand, with Stdio set and no
// server behind it, has them already.
func (r *StartRequest) AskStdio() error {
	if r.ask == nil {
		return nil
	}
	f, err := r.ask()
	r.ask = nil
	if err != nil {
		return err
	}
	r.Stdio = f
	return nil
}

// Gone reports whether the caller has closed its end of the request's
// connection: it gave up waiting, and runs the program itself or failed
// closed. Checked just before the start, it keeps a request that waited
// out its caller from starting.
func (r *StartRequest) Gone() bool { return r.gone != nil && r.gone() }

// Process is a program the launcher started for a start request.
type Process interface {
	// Joined reports whether the program is in the caller's process group.
	Joined() bool
	// Signal passes a signal the caller received on to the program.
	Signal(sig syscall.Signal)
	// Wait waits for the program's exit: its code, or the signal (> 0)
	// that ended it.
	Wait() (code, sig int)
	// Kill ends the program: its caller is gone.
	Kill()
}
