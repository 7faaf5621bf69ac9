package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/term"
)

// Resident says how a launcher that stays resident (to redact the child's
// output, or to remove file-delivered secrets when it exits) runs the child.
type Resident struct {
	// Stdin is the launcher's standard input, handed to the child (on a pty,
	// copied to it).
	Stdin *os.File
	// Stdout and Stderr receive the child's output, usually redacting
	// writers. On a pty the child's stdout and stderr are one stream, sent to
	// Stdout.
	Stdout, Stderr io.Writer
	// PTY runs the child on a pseudo-terminal, so that a child whose output
	// the launcher filters still sees a terminal (colours, line editing).
	// Window-size changes are forwarded.
	PTY bool
	// TTY is the launcher's terminal for the pty's size and raw mode; nil
	// when the launcher has none.
	TTY *os.File
	// AfterStart, when set, runs once the child has started (an isolated
	// child's uid map must be written before the launcher turns
	// non-dumpable).
	AfterStart func() error
	// Signals, when set, is the registration NotifySignals made ahead of
	// time; Supervise then leaves it in place when it returns. Nil means
	// Supervise registers and unregisters the signals itself.
	Signals *Signals
	// Tree is the launcher's hold on the launch's processes; nil:
	// Supervise takes its own.
	Tree *Tree
	// Abort, when it delivers, ends the launch: the child is killed,
	// then its tree, and Supervise returns 125 with the error.
	Abort <-chan error
	// In is the child's stdin when it is not a file (Stdin nil): a
	// library caller's reader, copied by os/exec.
	In io.Reader
}

// Signals is a resident launcher's registration for the signals it
// forwards to its child.
type Signals struct {
	c     chan os.Signal
	ready chan struct{}
	// early: EarlySignals' registration, made before anything was decided,
	// through reg (c is its relay's); ignored: the forwarded signals
	// ignored when it was made (nohup's SIGHUP), which Notify catches from
	// then on.
	early   bool
	reg     chan os.Signal
	ignored map[os.Signal]bool
}

// stop undoes the registration.
func (s *Signals) stop() {
	if s.reg != nil {
		signal.Stop(s.reg)
		return
	}
	signal.Stop(s.c)
}

// InterruptedError is a signal EarlySignals' registration caught before
// the program started, one that would have ended the launcher without it:
// the launch ends with nothing started, cleaned up, and the caller ends by
// the same signal ([RaiseSelf]).
type InterruptedError struct{ Signal os.Signal }

func (e *InterruptedError) Error() string {
	return fmt.Sprintf("%v before the program started: nothing was started", e.Signal)
}

// early is the process's EarlySignals registration, nil until made.
var early struct {
	sync.Mutex
	s     *Signals
	taken bool
}

// EarlySignals registers the forwarded signals in the background at once,
// for the one launch a command-line launcher is about to make: the
// registration takes a thread hand-off per signal each way, 0.3 to 2 ms on
// our test VM, which then overlaps the loading of the policy and the whole
// set-up instead of delaying the start. Until the launch takes it
// ([TakeSignals], as it is about to start the program) a signal has the
// effect it would have had without the registration: one that ends a Go
// program (SIGINT, SIGTERM, SIGHUP, SIGQUIT, unless the launcher's caller
// ignored it) is sent again once nothing catches it, and ends the
// launcher then and there; the others are dropped, as Go's runtime would.
// Once taken, such a signal caught before the start ends the launch with
// nothing started, cleaned up ([InterruptedError]). A launch that execs its
// program in its place calls [EndEarlySignals] first.
func EarlySignals() {
	early.Lock()
	defer early.Unlock()
	if early.s != nil {
		return
	}
	s := &Signals{c: make(chan os.Signal, 16), ready: make(chan struct{}), early: true,
		reg: make(chan os.Signal, 16), ignored: map[os.Signal]bool{}}
	for _, sig := range forwarded {
		if signal.Ignored(sig) {
			s.ignored[sig] = true
		}
	}
	go func() {
		signal.Notify(s.reg, forwarded...)
		close(s.ready)
		for sig := range s.reg {
			early.Lock()
			taken := early.taken
			early.Unlock()
			if taken {
				select {
				case s.c <- sig:
				default: // full: dropped, as signal.Notify drops
				}
				continue
			}
			if endsProcess(sig) && !s.ignored[sig] {
				signal.Stop(s.reg)
				RaiseSelf(sig)
				signal.Notify(s.reg, forwarded...) // it did not end the launcher
			}
		}
	}()
	early.s = s
}

// TakeSignals returns EarlySignals' registration the first time, when
// there is one, else a new one (NotifySignals).
func TakeSignals() *Signals {
	early.Lock()
	defer early.Unlock()
	if early.s != nil && !early.taken {
		early.taken = true
		return early.s
	}
	return NotifySignals()
}

// EndEarlySignals undoes EarlySignals' registration before the launcher
// execs its program in its place, which then inherits what the launcher's
// caller ignored. A signal it caught that would have ended the launcher
// is returned as an [InterruptedError]: the caller must not exec. Without
// a registration it does nothing.
func EndEarlySignals() error {
	early.Lock()
	s := early.s
	early.Unlock()
	if s == nil {
		return nil
	}
	early.Lock()
	early.taken = true // what comes now is queued for pending
	early.Unlock()
	<-s.ready
	s.stop()
	if sig := s.pending(); sig != nil {
		return &InterruptedError{Signal: sig}
	}
	return nil
}

// pending returns the first signal an early registration caught since the
// launch took it that would have ended the launcher without it, after
// undoing the registration (so the signal, sent again, ends it); nil when
// there is none, or the registration is not an early one. The others it
// caught are dropped.
func (s *Signals) pending() os.Signal {
	if !s.early {
		return nil
	}
	for {
		select {
		case sig := <-s.c:
			if endsProcess(sig) && !s.ignored[sig] {
				s.stop()
				return sig
			}
		default:
			return nil
		}
	}
}

// NotifySignals registers the forwarded signals in the background and
// returns at once: a registration takes two thread hand-offs per signal
// (about 0.3 ms in all), which can overlap the launcher's other set-up.
// Supervise waits for it to finish before it starts the child, so a signal
// never finds a child the launcher would not forward it to. Until then a
// signal has its default effect on the launcher, which has started nothing.
func NotifySignals() *Signals {
	s := &Signals{c: make(chan os.Signal, 16), ready: make(chan struct{})}
	go func() {
		signal.Notify(s.c, forwarded...)
		close(s.ready)
	}()
	return s
}

// Supervise runs c as a resident launcher's child: it starts c, forwards
// signals, waits, and returns the exit status a shell would report (128+N
// for a child killed by signal N). The launcher is a child subreaper
// meanwhile, and when c exits, every process left that c started (or the
// launcher started since, as for grants) is killed: nothing outlives it.
// The caller flushes its writers after.
//
// Without a pty the child stays in the launcher's process group, so a
// terminal's SIGINT and SIGQUIT already reach it: those two are forwarded
// only when stdin is not a terminal, so that a Ctrl-C is not delivered twice.
func Supervise(c *Cmd, r Resident) (int, error) {
	s, err := SuperviseStart(c, r)
	if err != nil {
		return 0, err
	}
	return s.Wait()
}

// Supervised is a child Supervise started, and what it holds until the
// child exits.
type Supervised struct {
	c           *Cmd
	r           Resident
	own         bool // the signals are Supervise's own registration
	sigs        chan os.Signal
	ptmx, slave *os.File
	proc        *os.Process
	stdinTTY    bool
	restore     func()
	copies      sync.WaitGroup
	copied      atomic.Int64
}

// Process is the started child.
func (s *Supervised) Process() *os.Process { return s.proc }

// ProcessState is the exited child's state, or nil before Wait.
func (s *Supervised) ProcessState() *os.ProcessState { return s.c.ProcessState() }

// SuperviseStart is the first half of Supervise: it starts c, and fails
// with nothing left running.
func SuperviseStart(c *Cmd, r Resident) (*Supervised, error) {
	if c.Env == nil {
		return nil, ErrNilEnv
	}
	s := &Supervised{c: c, r: r, own: r.Signals == nil, restore: func() {}}
	if s.own {
		s.r.Signals = NotifySignals()
	}
	<-s.r.Signals.ready
	if sig := s.r.Signals.pending(); sig != nil {
		return nil, &InterruptedError{Signal: sig}
	}
	s.sigs = s.r.Signals.c
	if s.r.Tree == nil {
		// An error leaves what the child detaches to the system's init.
		s.r.Tree, _ = HoldTree()
	}
	c.tied = true
	var err error
	if r.PTY {
		s.ptmx, s.slave, err = c.startPTY(r.TTY)
	} else {
		c.Stdin, c.Stdout, c.Stderr = r.Stdin, r.Stdout, r.Stderr
		if r.Stdin == nil {
			c.Stdin = r.In
		}
		err = c.Start()
	}
	if err != nil {
		s.stopSignals()
		return nil, err
	}
	s.proc = c.cmd.Process
	if r.AfterStart != nil {
		if err := r.AfterStart(); err != nil {
			_ = s.proc.Kill()
			_ = c.Wait()
			s.stopSignals()
			return nil, err
		}
	}
	s.stdinTTY = r.Stdin != nil && term.IsTerminal(int(r.Stdin.Fd()))
	if s.ptmx != nil {
		if r.TTY != nil && term.IsTerminal(int(r.TTY.Fd())) {
			if old, err := term.MakeRaw(int(r.TTY.Fd())); err == nil {
				s.restore = func() { _ = term.Restore(int(r.TTY.Fd()), old) }
			}
		}
		if r.Stdin != nil {
			go func() { _, _ = io.Copy(s.ptmx, r.Stdin) }()
		}
		s.copies.Add(1)
		go func() {
			defer s.copies.Done()
			// Reading the pty fails with EIO once every holder of the
			// slave side has closed it: that is the end of the stream.
			_, _ = io.Copy(&progressWriter{w: r.Stdout, n: &s.copied}, s.ptmx)
		}()
	}
	return s, nil
}

func (s *Supervised) stopSignals() {
	if s.own {
		signal.Stop(s.sigs)
	}
}

// Wait is the second half of Supervise: it forwards signals until the
// child exits, and returns its status.
func (s *Supervised) Wait() (int, error) {
	defer s.stopSignals()
	defer s.restore()
	c, r, proc, ptmx := s.c, s.r, s.proc, s.ptmx
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	var aborted error
	for {
		select {
		case err := <-r.Abort:
			if aborted == nil {
				aborted = err
				_ = proc.Kill()
			}
		case sig := <-s.sigs:
			g := sig.(syscall.Signal)
			switch {
			case g == sigWinch:
				if ptmx != nil && r.TTY != nil {
					_ = pty.InheritSize(r.TTY, ptmx)
				}
				if ptmx == nil {
					_ = proc.Signal(g)
				}
			case (g == syscall.SIGINT || g == syscall.SIGQUIT) && ptmx == nil && s.stdinTTY:
				// The terminal sent it to the whole process group already.
			default:
				_ = proc.Signal(g)
			}
		case werr := <-done:
			// Nothing the child started outlives it: ended before the
			// output drains, as a process left holding the pty would
			// keep it open.
			_, _ = r.Tree.End()
			if ptmx != nil {
				// The launcher holds a slave fd of its own, so the pty does
				// not hang up the moment the child exits: Linux may drop
				// what the child wrote just before exiting when the last
				// slave closes. Wait until the output is quiet, then close.
				for last, quiet := s.copied.Load(), 0; quiet < 4; quiet++ {
					time.Sleep(10 * time.Millisecond)
					if n := s.copied.Load(); n != last {
						last, quiet = n, 0
					}
				}
				s.slave.Close()
				s.copies.Wait()
				ptmx.Close()
			}
			if aborted != nil {
				return 125, aborted
			}
			return ExitStatus(c.ProcessState(), werr)
		}
	}
}

// startPTY starts the child as the leader of a new session on a new pty. It
// returns the master and the launcher's own slave fd, which the caller
// closes once the child's output has drained.
func (c *Cmd) startPTY(tty *os.File) (ptmx, slave *os.File, err error) {
	if c.cmd != nil {
		return nil, nil, errors.New("launch: already started")
	}
	if err := CheckNUL(c.Args, c.Env); err != nil {
		return nil, nil, err
	}
	ptmx, slave, err = pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("open a pty: %w", err)
	}
	if tty != nil {
		if size, err := pty.GetsizeFull(tty); err == nil {
			_ = pty.Setsize(ptmx, size)
		}
	}
	cmd := exec.Command(c.Path)
	cmd.Args, cmd.Env, cmd.Dir = c.Args, c.Env, c.Dir
	if len(c.Env) == 0 {
		cmd.Env = []string{}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.ExtraFiles = c.ExtraFiles
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if c.isolate {
		cmd.SysProcAttr = isolateAttr()
	}
	cmd.Env = c.lifetimeAttr(cmd.SysProcAttr, cmd.Env)
	if err := controllingTerminal(cmd.SysProcAttr); err != nil {
		ptmx.Close()
		slave.Close()
		return nil, nil, err
	}
	c.cmd = cmd
	started := c.passRuleset()
	err = cmd.Start()
	started()
	if err != nil {
		ptmx.Close()
		slave.Close()
		return nil, nil, c.startError(err)
	}
	return ptmx, slave, nil
}

// progressWriter counts what passes through it.
type progressWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.n.Add(int64(n))
	return n, err
}

// ExitStatus turns a finished child into the status a shell reports.
func ExitStatus(st *os.ProcessState, err error) (int, error) {
	if st == nil {
		return 0, err
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal()), nil
	}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) && !errors.Is(err, exec.ErrWaitDelay) {
		return st.ExitCode(), err
	}
	return st.ExitCode(), nil
}
