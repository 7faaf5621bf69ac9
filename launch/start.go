package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/envsieve/envsieve/internal/audit"
	"github.com/envsieve/envsieve/internal/proc"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/seal"
)

// Stdio is where a started program's standard streams go.
type Stdio struct {
	// Stdin is the program's standard input; nil is the null device. A
	// launcher's own stdin (an *os.File) is handed over as it is, or
	// copied to the program's terminal when it runs on a pty.
	Stdin io.Reader
	// Stdout and Stderr receive the program's output, masked when the
	// launch masks; nil discards it. When the launch masks and Stdout is
	// a terminal (a launcher's own), the program runs on a pty whose one
	// stream goes to Stdout.
	Stdout, Stderr io.Writer
}

// ErrSealRequired is wrapped when the policy requires the seal (`seal:
// required`) and it cannot be made here: nothing starts. Use errors.Is.
var ErrSealRequired = errors.New("seal: required by the policy, and not available here")

// serverWaitDelay bounds how long a server's command waits for its output
// pipes after it exits (a background grandchild may hold them).
const serverWaitDelay = 2 * time.Second

// Running is a started launch. Its [Running.Wait] must be called: it
// ends the launch, records its exit and cleans the plan up.
type Running struct {
	l       *Plan
	path    string
	alog    *audit.Log
	sh      *shimRun
	closers []func() error
	sweep   func()
	stderr  io.Writer // the program's stderr as masked, for a server's notes
	// sup is a single launch's resident child (Supervise).
	sup  *proc.Supervised
	tree *proc.Tree
	// cmd is a server's command, pumps its output pipes, ctx its context
	// (cancelled with the cause that ended it).
	cmd   *exec.Cmd
	pumps []*pump
	ctx   context.Context
	done  chan struct{}
	state *os.ProcessState
}

// Start starts the planned launch: it settles the seal, starts the broker
// and the ssh agent filter, opens the audit log, serves the shim, and
// starts the program with its output masked. Whether the launcher stays
// resident is decided here, once: a single launch (not [Host.Server])
// whose launcher nothing needs afterwards (no masking, no file-delivered
// secrets, no shim, broker or agent filter) execs the program in its
// place, and then Start returns only on failure. Otherwise the program is
// a child; cancelling ctx kills it (a server's: its process group). On
// failure nothing was started and the plan is cleaned up. A plan starts
// once.
func (l *Plan) Start(ctx context.Context, stdio Stdio) (*Running, error) {
	if l.started {
		return nil, errors.New("launch: a plan starts once")
	}
	l.started = true
	r := &Running{l: l, ctx: ctx, done: make(chan struct{})}
	var err error
	if l.host.Server {
		err = r.startServer(stdio)
	} else {
		err = r.startSingle(stdio)
	}
	if err != nil {
		r.release()
		return nil, err
	}
	return r, nil
}

// program is the path and argv of the program the launch runs.
func (l *Plan) program() (string, []string, error) {
	if argv := l.opt.Argv; argv != nil {
		if len(argv) == 0 || argv[0] == "" {
			return "", nil, errors.New("launch: no command")
		}
		path, err := proc.LookPath(argv[0], l.Result.Env)
		return path, argv, err
	}
	if len(l.Request.Commands) == 0 || len(l.Request.Commands[0]) == 0 {
		return "", nil, errors.New("launch: no command")
	}
	argv := l.Request.Commands[0]
	path, err := resolveProgram(argv[0], l.Result, l.Request.Path)
	return path, argv, err
}

// prepare is what every launch does before its program starts: the seal
// settled, the broker and the agent filter started, the audit log opened
// with the seal's event, the redaction set compiled.
func (r *Running) prepare() (argv []string, set bool, err error) {
	l := r.l
	path, argv, err := l.d.Program, l.d.Argv, l.d.ProgramErr
	if err != nil {
		return nil, false, err
	}
	r.path = path
	if b, err := json.Marshal(&l.d); err == nil {
		// Names and choices only: no path, argument or value.
		l.host.debugf("decision: %s", b)
	}
	// The seal first: a sealed launch's credential files are fakes whose
	// real values the broker keeps.
	if err := l.chooseSeal(); err != nil {
		return nil, false, err
	}
	if l.sealNotice != "" {
		l.host.warnf("%s", l.sealNotice)
	}
	if err := l.startBroker(); err != nil {
		return nil, false, err
	}
	if err := l.startSSHAgent(); err != nil {
		return nil, false, err
	}
	if r.alog, err = l.openAudit(argv); err != nil {
		return nil, false, err
	}
	if l.sealMode != "" {
		if l.sealed {
			r.alog.Seal(string(l.sealMode), string(l.sealBy), "")
		} else {
			r.alog.Seal(string(l.sealMode), "none", "not available here")
		}
	}
	if l.set, err = l.redactionSet(); err != nil {
		return nil, false, err
	}
	return argv, l.set != nil, nil
}

// startSingle starts a single launch's program: in place when nothing
// needs the launcher afterwards, else as the child of a resident,
// non-dumpable launcher that masks its output, serves the shim, and
// removes file-delivered secrets when it exits.
func (r *Running) startSingle(stdio Stdio) error {
	l := r.l
	argv, masks, err := r.prepare()
	if err != nil {
		return err
	}
	path, alog := r.path, r.alog
	// Registering the forwarded signals overlaps the shim's set-up when the
	// launcher stays resident. It is never undone: the launcher exits when
	// the child has, and a late signal cannot cut its clean-up.
	d := &l.d
	var sigs *proc.Signals
	if d.Resident && !l.brokerOnly {
		sigs = proc.TakeSignals()
	}
	prog := path
	if l.pinned != nil {
		prog = l.pinned.Path()
	}
	if r.sh, err = l.startShim(prog, alog); err != nil {
		return err
	}
	if r.sh != nil {
		// The socket directories of launchers killed before they could
		// remove them, while this launch runs.
		r.sweep = sweepSocketDirs(l.host.socketDir())
	}
	sh := r.sh
	// In place or resident, as the decision record says (decide). A
	// broker it did not foresee keeps the launcher resident all the same;
	// one it foresaw that did not start lets it go in place.
	needed := masks || l.files != nil || sh != nil || l.broker != nil || l.sshAgent != nil ||
		l.logins != nil && len(l.logins.views) > 0 // an agent's view is synced back after (agentviews.go)
	inPlace := !d.Resident
	switch {
	case inPlace && needed:
		l.host.debugf("the launcher stays resident: the decision said in place")
		inPlace, d.Resident = false, true
		sigs = proc.TakeSignals()
	case !inPlace && l.brokerOnly && !needed:
		l.host.debugf("no broker started, and nothing else keeps the launcher: in place")
		inPlace, d.Resident = true, false
	case !inPlace && sigs == nil:
		sigs = proc.TakeSignals()
	}
	if inPlace && l.unshare != "" {
		return l.execUnshared(l.unshare, path, argv, alog)
	}
	if inPlace && l.landlock != "" {
		return l.execLandlock(l.landlock, path, argv, alog)
	}
	if inPlace {
		return l.execInPlace(path, argv, alog)
	}
	c, err := l.command(path, argv)
	if err != nil {
		return err
	}
	c.Dir = l.opt.Dir
	res := proc.Resident{Stdout: stdio.Stdout, Stderr: stdio.Stderr, Signals: sigs}
	if f, ok := stdio.Stdin.(*os.File); ok {
		res.Stdin = f
	} else {
		res.In = stdio.Stdin
	}
	abort := make(chan error, 1)
	res.Abort = abort
	if !l.opt.Policy.AuditWarn {
		// The audit log fails closed: a write that fails ends the launch.
		alog.OnFail(func(err error) {
			select {
			case abort <- fmt.Errorf("%w: the launch is ended (audit: {on_error: fail}, the default)", err):
			default:
			}
		})
	}
	if r.ctx.Done() != nil {
		go func() {
			select {
			case <-r.ctx.Done():
				select {
				case abort <- context.Cause(r.ctx):
				default:
				}
			case <-r.done:
			}
		}()
	}
	if res.Tree, err = proc.HoldTree(); err != nil {
		l.host.debugf("lifetime: %v", err)
	}
	r.tree = res.Tree
	switch {
	case l.isolated:
		// The child's uid map is written from here, which a non-dumpable
		// launcher cannot do; the child cannot see the launcher in its own
		// pid namespace anyway, so the launcher turns non-dumpable just
		// after the start. Nor can it see what the launcher starts for
		// exec-time grants.
		if l.sealed {
			spec, err := l.sealSpec()
			if err != nil {
				return err
			}
			if c, err = proc.IsolateSealedWith(c, spec, l.isolateInit()); err != nil {
				return err
			}
			l.host.debugf("seal: namespaces; %d paths masked, %d read-only, %d writable", len(spec.Mask), len(spec.ReadOnly), len(spec.Write))
		} else if c, err = proc.IsolateWith(c, l.isolateInit()); err != nil {
			return err
		}
		res.AfterStart = proc.MakeNonDumpable
	default:
		if c, err = l.scope(c, sh, true); err != nil {
			return err
		}
		if err := proc.MakeNonDumpable(); errors.Is(err, errors.ErrUnsupported) {
			l.host.warnf("%v", err)
		} else if err != nil {
			return err
		}
	}
	if masks {
		out, errw, cl, err := l.filter(res.Stdout, res.Stderr, l.set)
		if err != nil {
			return err
		}
		res.Stdout, res.Stderr, r.closers = out, errw, cl
		if f, ok := stdio.Stdout.(*os.File); ok && masks && term.IsTerminal(int(f.Fd())) {
			res.PTY, res.TTY = true, f
		}
	}
	if err := l.auditFailed(alog); err != nil {
		return err
	}
	l.host.debugf("resident launcher: redaction %v (entropy %v), pty %v, secret files %v, isolate %v, shim %v",
		masks, l.opt.Policy.Redact.Entropy, res.PTY, l.files != nil, l.isolated, sh != nil)
	r.sup, err = proc.SuperviseStart(c, res)
	if errors.Is(err, proc.ErrNamespaces) && l.sealed && l.sealIsolates {
		// The kernel's switches allowed them, and something else refused
		// them (a container's seccomp filter): seal with Landlock, or
		// where it cannot, run `on` without the seal.
		l.isolated = false
		if lerr := seal.LandlockAvailable(); lerr == nil {
			l.sealBy = seal.Landlock
			l.host.debugf("seal: user namespaces refused (%v): sealing with Landlock", err)
			alog.Seal(string(l.sealMode), string(l.sealBy), "user namespaces refused at the start")
		} else if l.sealMode == policy.SealOn {
			l.host.warnf("seal: not available here (%v; and %v): the command runs without it, and can read your credential files", err, lerr)
			alog.Seal(string(l.sealMode), "none", "user namespaces refused at the start, and no Landlock")
			l.sealed = false
		} else {
			return fmt.Errorf("%w: %w; and %v", ErrSealRequired, err, lerr)
		}
		if c, err = l.command(path, argv); err != nil {
			return err
		}
		c.Dir = l.opt.Dir
		if c, err = l.scope(c, sh, true); err != nil {
			return err
		}
		res.AfterStart = nil
		if err := proc.MakeNonDumpable(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
		r.sup, err = proc.SuperviseStart(c, res)
	}
	if err != nil {
		alog.Exit(125, err)
		return err
	}
	return nil
}

// startServer starts a server's command (Host.Server): always a child of
// the server, in a process group of its own, sealed by Landlock when the
// launch is, its output read through pipes this launch pumps itself.
func (r *Running) startServer(stdio Stdio) error {
	l := r.l
	if l.opt.Isolate {
		return errors.New("launch: a server's command cannot be isolated in namespaces")
	}
	argv, _, err := r.prepare()
	if err != nil {
		return err
	}
	path, alog, pol := r.path, r.alog, l.opt.Policy
	ctx, cancel := context.WithCancelCause(r.ctx)
	r.ctx = ctx
	r.closers = append(r.closers, func() error { cancel(nil); return nil })
	// The audit log fails closed: a command whose log fails while it runs
	// is ended, and Wait says why; under `audit: {on_error: warn}` it runs
	// on, and the command's stderr is told.
	if !pol.AuditWarn {
		alog.OnFail(func(err error) { cancel(&auditEnded{err}) })
	}
	// The shim: hiding (block_iteration), access reports and exec-time
	// grants in the command's tree.
	if r.sh, err = l.startShim(path, alog); err != nil {
		return err
	}
	stdout, stderr, closers, err := l.filter(orDiscard(stdio.Stdout), orDiscard(stdio.Stderr), l.set)
	if err != nil {
		return err
	}
	r.closers = append(closers, r.closers...)
	// Under `audit: {on_error: warn}` the client is told on its stderr
	// when a write first fails, while the command runs, as a single launch
	// tells its user; the stderr pump shares the writer's lock.
	cerr := &clientStderr{w: stderr}
	stderr = cerr
	if pol.AuditWarn {
		alog.WarnTo(cerr)
	}
	r.stderr = cerr
	if l.sealNotice != "" {
		// The client is told, as a single launch tells its user.
		fmt.Fprintf(stderr, "envsieve: warning: %s\n", l.sealNotice)
	}
	if l.Env == nil {
		return ErrNilEnv // never inherit the server's environment
	}
	// The command's stdout and stderr are pipes this launch reads itself
	// (pumps): os/exec's own copying gives up WaitDelay after the command
	// exits even when it is only slow to deliver (a busy client), and
	// output would be lost. A pump gives up only when it has waited that
	// long for bytes that do not come (a background grandchild holds the
	// pipe).
	outR, outW, err := os.Pipe()
	if err != nil {
		return fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return fmt.Errorf("stderr pipe: %w", err)
	}
	r.closers = append(r.closers, func() error { outR.Close(); errR.Close(); return nil })
	// Sealed by Landlock when the launch is; else, when rules may grant,
	// in a Landlock domain of its own that keeps the command from reading
	// or tracing the programs the server starts for them (which share the
	// command's seal).
	// The reaper is envsieve re-executed, which builds the ruleset
	// itself: envsieve-init's inherits it from a proc.Cmd's start, and
	// this one is started here, with descriptors of its own.
	sc, err := l.scope(&proc.Cmd{Path: path, Args: argv, Env: l.Env}, r.sh, false)
	if err != nil {
		outW.Close()
		errW.Close()
		return err
	}
	if err := proc.CheckNUL(sc.Args, sc.Env); err != nil {
		outW.Close()
		errW.Close()
		return err
	}
	cmd := exec.CommandContext(ctx, sc.Path)
	cmd.Args, cmd.Env, cmd.Dir = sc.Args, sc.Env, l.opt.Dir
	if len(cmd.Env) == 0 {
		cmd.Env = []string{} // never nil: nil would inherit
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.Stdin = stdio.Stdin
	cmd.WaitDelay = serverWaitDelay
	cmd.ExtraFiles = l.extraFiles() // file-delivered secrets, as /dev/fd/3 and on
	proc.OwnGroup(cmd)
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if err != nil {
		if af := auditCause(ctx); af != nil {
			return af
		}
		err = proc.WrapStartError(path, err)
		alog.Exit(125, err)
		return err
	}
	r.cmd = cmd
	alog.Exec(path)
	r.pumps = []*pump{newPump(outR, stdout), newPump(errR, stderr)}
	return nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// auditEnded is why a server's command was ended when its audit log
// failed (audit: {on_error: fail}, the default).
type auditEnded struct{ err error }

func (e *auditEnded) Error() string {
	return e.err.Error() + ": the command was ended (audit: {on_error: fail}, the default)"
}

func (e *auditEnded) Unwrap() error { return e.err }

// auditCause returns the audit failure that ended ctx, or nil.
func auditCause(ctx context.Context) error {
	var af *auditEnded
	if errors.As(context.Cause(ctx), &af) {
		return af
	}
	return nil
}

// Pid returns the program's process id (for an isolated launch, that of
// its namespaces' init, which passes signals on).
func (r *Running) Pid() int {
	if r.cmd != nil {
		return r.cmd.Process.Pid
	}
	return r.sup.Process().Pid
}

// Signal sends sig to the program (for an isolated launch, to its init,
// which passes it on).
func (r *Running) Signal(sig os.Signal) error {
	if r.cmd != nil {
		return r.cmd.Process.Signal(sig)
	}
	return r.sup.Process().Signal(sig)
}

// Wait waits for the program to exit and ends the launch: the output is
// flushed, the shim closed, what the tree left killed, the exit recorded
// in the audit log, and the plan cleaned up. It returns the status a
// shell would report (128+N for a program killed by signal N), or an
// error when the launch failed around it: the audit log failed
// (`on_error: fail`) and the program was ended (status 125), or it could
// not be waited for. Call it once.
func (r *Running) Wait() (int, error) {
	defer r.release()
	if r.cmd != nil {
		return r.waitServer()
	}
	l, alog, sh := r.l, r.alog, r.sh
	status, err := r.sup.Wait()
	r.state = r.sup.ProcessState()
	r.flush()
	// What the programs started for grants left, once the shim is closed
	// and starts no more.
	if n, terr := r.tree.End(); terr != nil {
		l.host.warnf("%v", terr)
		alog.Warn(terr.Error())
	} else if n > 0 {
		l.host.debugf("lifetime: %d processes left by the launch's tree killed", n)
	}
	if err == nil {
		sh.ExplainFailure(status)
	}
	alog.Exit(status, err)
	return status, err
}

func (r *Running) waitServer() (int, error) {
	alog, cmd := r.alog, r.cmd
	werr := cmd.Wait()
	exited := time.Now()
	for _, pm := range r.pumps {
		pm.finish(exited, serverWaitDelay)
	}
	// The client's stream ends here: a warning past this point is said in
	// the server's log only, and the count is in the exit event.
	if c, ok := r.stderr.(*clientStderr); ok {
		c.end()
	}
	r.flush()
	r.state = cmd.ProcessState
	if r.state == nil {
		err := fmt.Errorf("wait for %s: %w", filepath.Base(r.path), werr)
		alog.Exit(125, err)
		return 125, err
	}
	status, _ := proc.ExitStatus(r.state, nil)
	alog.Exit(status, nil)
	if af := auditCause(r.ctx); af != nil {
		return 125, af
	}
	return status, nil
}

// flush flushes the output filters and closes the shim.
func (r *Running) flush() {
	for _, c := range r.closers {
		_ = c()
	}
	r.closers = nil
	r.sh.Close()
	r.sh = nil
}

// ProcessState returns the exited program's state once Wait has returned;
// nil before, or when it could not be waited for.
func (r *Running) ProcessState() *os.ProcessState { return r.state }

// release ends what a launch holds once its program has exited, or when
// it failed to start.
func (r *Running) release() {
	close(r.done)
	for _, c := range r.closers {
		_ = c()
	}
	r.closers = nil
	r.sh.Close()
	if r.sweep != nil {
		r.sweep()
	}
	r.alog.Close()
	r.l.Cleanup()
}

// clientStderr is a server's command's stderr stream to its client,
// shared by the stderr pump and the audit log's warning; after end,
// writes go nowhere.
type clientStderr struct {
	mu    sync.Mutex
	w     io.Writer
	ended bool
}

func (c *clientStderr) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		return len(p), nil
	}
	return c.w.Write(p)
}

func (c *clientStderr) end() {
	c.mu.Lock()
	c.ended = true
	c.mu.Unlock()
}
