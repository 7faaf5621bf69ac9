package daemon

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/creachadair/jrpc2"

	"github.com/envsieve/envsieve/internal/shellcmd"
	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/redact"
	"github.com/envsieve/envsieve/secret"
	"github.com/envsieve/envsieve/sieve"
)

// defaultShell runs shell strings when the policy names no shell.
const defaultShell = "/bin/sh"

// waitDelay bounds how long an exec waits for its output pipes after the
// command exits (a background grandchild may hold them).
const waitDelay = 2 * time.Second

func (c *conn) sessionExec(ctx context.Context, p *ExecParams) (*ExecResult, error) {
	s := c.s
	var stdin []byte
	switch {
	case (len(p.Argv) == 0) == (p.Shell == ""):
		return nil, rpcError(CodeInvalidParams, "session/exec: give exactly one of argv and shell")
	case len(p.Argv) > 0 && p.Argv[0] == "":
		return nil, rpcError(CodeInvalidParams, "session/exec: argv[0] is empty")
	case p.Cwd != "" && !filepath.IsAbs(p.Cwd):
		return nil, rpcError(CodeInvalidParams, "session/exec: cwd must be an absolute path")
	case p.Timeout < 0 || math.IsNaN(p.Timeout) || math.IsInf(p.Timeout, 0):
		return nil, rpcError(CodeInvalidParams, "session/exec: timeout must be a number of seconds, 0 for none")
	case p.ExecID != "" && !validID(p.ExecID):
		return nil, rpcError(CodeInvalidParams, "session/exec: exec_id must be 1 to 64 characters of [A-Za-z0-9_.:-]")
	case p.Stdin != "" && p.StdinB64 != "":
		return nil, rpcError(CodeInvalidParams, "session/exec: give at most one of stdin and stdin_b64")
	case p.StdinB64 != "":
		b, err := base64.StdEncoding.DecodeString(p.StdinB64)
		if err != nil {
			return nil, rpcError(CodeInvalidParams, "session/exec: stdin_b64: "+err.Error())
		}
		stdin = b
	default:
		stdin = []byte(p.Stdin)
	}
	ss, err := s.lookup(p.SessionID)
	if err != nil {
		return nil, err
	}
	for _, name := range p.Secrets {
		if !s.declared(name) {
			return nil, rpcError(CodeSecret, fmt.Sprintf("session/exec: secret %q is not declared: name it under the policy's secrets, or in a tool's injects_env", name))
		}
	}
	ectx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	execID, err := s.reserve(ss, p.ExecID, cancel)
	if err != nil {
		return nil, err
	}
	defer s.release(ss, execID)

	pol := s.cfg.Policy
	var argv []string
	var commands [][]string
	if p.Shell != "" {
		shell := pol.Shell
		if shell == "" {
			shell = defaultShell
		}
		argv = []string{shell, "-c", p.Shell}
		if cmds, ok := shellcmd.Commands(p.Shell); ok {
			commands = cmds
		}
	} else {
		argv = p.Argv
		commands = [][]string{argv}
	}
	req := sieve.Request{Commands: commands, Profile: ss.profile, Tool: p.Tool, Secrets: p.Secrets}
	// One launch, as `envsieve run` makes it (package launch): the
	// session's snapshot is the parent, the daemon's own environment the
	// first of the two layers (buildEnv), and the secrets come from the
	// daemon's sources. A rule that matches by path is chosen for the
	// program the client's own PATH finds.
	var client *sieve.Result
	l, err := launch.Build(ectx, s.host(), launch.Options{
		Policy: pol, Parent: ss.snapshot, Request: req, Sensitive: ss.masked,
		Builder: func(in sieve.Input) (*sieve.Result, error) {
			b, err := s.buildEnv(ss, in.Request, in.SecretValues, in.SecretFiles)
			if err != nil {
				return nil, err
			}
			if client == nil {
				client = b.Client
			}
			res := *b.Client
			res.Env = b.Env
			return &res, nil
		},
	})
	if err != nil {
		return nil, err
	}
	defer l.Cleanup()
	// The daemon seals its commands as `envsieve run` does, by Landlock
	// (it is their parent). Where it cannot, a profile that requires the
	// seal gets no command, and one that asks for it gets it unsealed with
	// a notice on the command's stderr and in the daemon's log. The seal
	// first: a sealed command's credential files are fakes the broker
	// keeps the real values of.
	sealNotice, err := l.ChooseServerSeal(client.Seal)
	if err != nil {
		return nil, rpcError(CodeExecFailed, "session/exec: "+err.Error())
	}
	if sealNotice != "" {
		s.log.Warn("exec unsealed: "+sealNotice, "session_id", ss.id)
	}
	if err := l.StartBroker(); err != nil {
		return nil, err
	}
	if err := l.StartSSHAgent(); err != nil {
		return nil, err
	}
	var path string
	if p.Shell != "" {
		path, err = launch.LookPath(argv[0], l.Result.Env)
	} else {
		path, err = launch.Resolve(argv[0], l.Result, l.Request.Path)
	}
	if err != nil {
		return nil, err
	}
	cwd := p.Cwd
	if cwd == "" {
		cwd = "/"
		if ss.pwd != "" {
			if fi, err := os.Stat(ss.pwd); err == nil && fi.IsDir() {
				cwd = ss.pwd
			}
		}
	} else if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return nil, rpcError(CodeExecFailed, fmt.Sprintf("cwd %s: not a directory", cwd))
	}
	set, err := s.redactionSet(ss, l)
	if err != nil {
		return nil, err
	}
	alog, err := l.OpenAudit(argv)
	if err != nil {
		return nil, err
	}
	defer alog.Close()
	// The audit log fails closed, as for `envsieve run`: a command whose
	// log cannot be written does not start, and one whose log fails while
	// it runs is ended, its client told why; under `audit: {on_error:
	// warn}` it runs on, and the client is told on its stderr.
	if err := alog.Err(); err != nil && !pol.AuditWarn {
		return nil, fmt.Errorf("%w: nothing was started (audit: {on_error: fail}, the default)", err)
	}
	if !pol.AuditWarn {
		alog.OnFail(func(err error) { cancel(&auditFailed{err}) })
	}
	switch {
	case l.Sealed():
		alog.Seal(string(client.Seal), "landlock", "")
	case sealNotice != "":
		alog.Seal(string(client.Seal), "none", "not available here")
	}
	// The shim, as for `envsieve run`: hiding (block_iteration), access
	// reports and exec-time grants in the command's tree.
	sh, err := l.StartShim(path, alog)
	if err != nil {
		return nil, err
	}
	defer sh.Close()

	srv := jrpc2.ServerFromContext(ctx)
	outN := &outWriter{srv: srv, note: Output{SessionID: ss.id, ExecID: execID, Stream: "stdout"}}
	errN := &outWriter{srv: srv, note: Output{SessionID: ss.id, ExecID: execID, Stream: "stderr"}}
	stdout, stderr, closers, err := l.Filter(outN, errN, set)
	if err != nil {
		return nil, err
	}
	closers = append(closers, outN.Close, errN.Close)
	// Under `audit: {on_error: warn}` the client is told on its stderr
	// when a write first fails, while the command runs, as `envsieve run`
	// tells its user; the stderr pump shares the writer's lock.
	cerr := &clientStderr{w: stderr}
	stderr = cerr
	if pol.AuditWarn {
		alog.WarnTo(cerr)
	}
	if sealNotice != "" {
		// The client is told, as `envsieve run` tells its user.
		fmt.Fprintf(stderr, "envsieve: warning: %s\n", sealNotice)
	}

	if l.Env == nil {
		return nil, launch.ErrNilEnv // never inherit the daemon's environment
	}
	// The command's stdout and stderr are pipes this exec reads itself
	// (pumps): os/exec's own copying gives up WaitDelay after the command
	// exits even when it is only slow to deliver (a busy client), and
	// output would be lost. A pump gives up only when it has waited that
	// long for bytes that do not come (a background grandchild holds the
	// pipe).
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	defer outR.Close()
	defer errR.Close()
	cmd := exec.CommandContext(ectx, path)
	cmd.Args = argv
	cmd.Env = l.Env
	// As for `envsieve run`: sealed by Landlock when the profile asks;
	// else, when rules may grant, in a Landlock domain of its own that
	// keeps the command from reading or tracing the programs the daemon
	// starts for them (which share the command's seal).
	sc, err := l.Scoped(&launch.Cmd{Path: path, Args: argv, Env: l.Env}, sh)
	if err != nil {
		outW.Close()
		errW.Close()
		return nil, err
	}
	cmd.Path, cmd.Args, cmd.Env = sc.Path, sc.Args, sc.Env
	cmd.Dir = cwd
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.ExtraFiles = l.ExtraFiles() // file-delivered secrets, as /dev/fd/3 and on
	var stdinW *os.File
	if len(stdin) > 0 {
		stdinR, w, err := os.Pipe()
		if err != nil {
			outW.Close()
			errW.Close()
			return nil, fmt.Errorf("stdin pipe: %w", err)
		}
		cmd.Stdin, stdinW = stdinR, w
		defer stdinR.Close()
		defer stdinW.Close()
	}
	ownProcessGroup(cmd)
	if p.Timeout > 0 {
		t := time.AfterFunc(time.Duration(p.Timeout*float64(time.Second)), func() { cancel(errTimeout) })
		defer t.Stop()
	}
	err = cmd.Start()
	outW.Close()
	errW.Close()
	if f, ok := cmd.Stdin.(*os.File); ok {
		f.Close()
	}
	if err != nil {
		if af := auditCause(ectx); af != nil {
			return nil, af
		}
		err = launch.StartError(path, err)
		alog.Exit(125, err)
		return nil, err
	}
	alog.Exec(path)
	if stdinW != nil {
		go func() {
			// Closed by the deferred Close when the command ends
			// without reading it all.
			_, _ = stdinW.Write(stdin)
			stdinW.Close()
		}()
	}
	pumps := []*pump{newPump(outR, stdout), newPump(errR, stderr)}
	werr := cmd.Wait()
	exited := time.Now()
	for _, pm := range pumps {
		pm.finish(exited, waitDelay)
	}
	// The client's stream ends here: a warning past this point is said in
	// the daemon's log only, and the count is in the exit event.
	cerr.end()
	for _, closeFn := range closers {
		_ = closeFn()
	}
	sh.Close()
	st := cmd.ProcessState
	if st == nil {
		err := fmt.Errorf("wait for %s: %w", filepath.Base(path), werr)
		alog.Exit(125, err)
		return nil, err
	}
	res := &ExecResult{ExecID: execID, ExitCode: st.ExitCode()}
	if sig, name, ok := killedBy(st); ok {
		res.ExitCode, res.Signal = 128+sig, name
	}
	alog.Exit(res.ExitCode, nil)
	if af := auditCause(ectx); af != nil {
		return nil, af
	}
	switch context.Cause(ectx) {
	case errTimeout:
		res.TimedOut = true
	case errCancelled, errShutdown:
		res.Cancelled = true
	}
	s.log.Debug("exec", "session_id", ss.id, "exec_id", execID, "program", filepath.Base(path), "exit_code", res.ExitCode)
	return res, nil
}

// declared reports whether a session may ask for the secret name: the
// policy names it under secrets or in a tool's injects_env. Anything else in
// the client's snapshot stays where the profile put it, so a command that
// reaches the daemon's socket cannot ask for it.
func (s *Server) declared(name string) bool {
	pol := s.cfg.Policy
	if _, ok := pol.Secrets[name]; ok {
		return true
	}
	for _, t := range pol.Tools {
		for _, src := range t.InjectsEnv {
			if src.Entry == name {
				return true
			}
		}
	}
	return false
}

// reserve takes an exec slot for ss's client and registers the command so
// that session/cancel, session/close and shutdown can kill it.
func (s *Server) reserve(ss *session, execID string, cancel context.CancelCauseFunc) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closing:
		return "", rpcError(CodeShuttingDown, "the daemon is shutting down")
	case ss.closed:
		return "", rpcError(CodeUnknownSession, fmt.Sprintf("unknown session_id %q", ss.id))
	}
	cnt := s.countsLocked(ss.clientID)
	if cnt.execs >= s.lim.MaxExecsPerClient {
		return "", limitError(CodeTooManyExecs, "too many running commands for client "+ss.clientID, "max_execs_per_client", cnt.execs+1, s.lim.MaxExecsPerClient)
	}
	if s.execs >= s.lim.MaxExecs {
		return "", limitError(CodeTooManyExecs, "too many running commands", "max_execs", s.execs+1, s.lim.MaxExecs)
	}
	if execID == "" {
		for execID == "" || ss.execs[execID] != nil {
			ss.nextID++
			execID = "x" + strconv.Itoa(ss.nextID)
		}
	} else if ss.execs[execID] != nil {
		return "", rpcError(CodeInvalidParams, fmt.Sprintf("session/exec: exec_id %q is already running in this session", execID))
	}
	ss.execs[execID] = &running{cancel: cancel}
	cnt.execs++
	s.execs++
	s.execWG.Add(1)
	return execID, nil
}

func (s *Server) release(ss *session, execID string) {
	s.mu.Lock()
	delete(ss.execs, execID)
	if cnt := s.perID[ss.clientID]; cnt != nil {
		cnt.execs--
		s.releaseCountsLocked(ss.clientID)
	}
	s.execs--
	s.mu.Unlock()
	s.execWG.Done()
}

// host is what a launch of the daemon needs: its own sources, key and
// directories. File-delivered secrets are the command's descriptors 3 and
// on, never inherited by another session's command.
func (s *Server) host() *launch.Host {
	store := s.cfg.Store
	h := &launch.Host{
		Stderr:     s.cfg.HelperStderr,
		Key:        func() ([]byte, error) { return s.key, nil },
		HelperEnv:  s.cfg.Env,
		RuntimeDir: s.cfg.RuntimeDir,
		ExtraFiles: true,
		Shim:       s.cfg.Shim,
		Exe:        s.exe,
		Home:       s.cfg.Home,
		ConfigDir:  s.cfg.ConfigDir,
		DataDir:    s.cfg.DataDir,
		AuditPath:  s.cfg.AuditPath,
		Broker:     StartBroker,
		Nested:     s.cfg.Nested,
	}
	if store != nil && s.cfg.Nested == "" {
		h.Store = func() (secret.Source, error) { return store, nil }
	}
	return h
}

// redactionSet compiles the values to mask in a command's output
// (launch.Plan.Masked: the snapshot's sensitive values that the command's
// environment does not hold, and every injected secret: only values the
// session could hold). The daemon's own values are never masked in a
// session's output: masking them would make the redactor an oracle for
// values the session cannot read. A session keeps the last few compiled
// sets, so repeated commands compile nothing. nil means nothing to mask.
func (s *Server) redactionSet(ss *session, l *launch.Plan) (*redact.Set, error) {
	if !l.Masking() {
		return nil, nil
	}
	hide := l.Masked()
	if len(hide) == 0 {
		return nil, nil
	}
	digest := maskDigest(hide)
	s.mu.Lock()
	for _, c := range ss.setLRU {
		if c.digest == digest {
			s.mu.Unlock()
			return c.set, nil
		}
	}
	s.mu.Unlock()
	set, err := l.RedactionSet()
	if err != nil {
		return nil, err
	}
	if len(l.Injected()) == 0 {
		s.mu.Lock()
		ss.setLRU = append(ss.setLRU, cachedSet{digest: digest, set: set})
		if len(ss.setLRU) > 4 {
			ss.setLRU = slices.Delete(ss.setLRU, 0, 1)
		}
		s.mu.Unlock()
	}
	return set, nil
}

// maskDigest is an exact key for a list of masked values: names and values,
// length-prefixed. It never leaves the process.
func maskDigest(hide []redact.Secret) string {
	var b []byte
	for _, h := range hide {
		b = strconv.AppendInt(b, int64(len(h.Name)), 10)
		b = append(b, ':')
		b = append(b, h.Name...)
		b = strconv.AppendInt(b, int64(len(h.Value)), 10)
		b = append(b, ':')
		b = append(b, h.Value...)
	}
	return string(b)
}

// pump copies a command's output pipe to its filter chain.
type pump struct {
	r *os.File
	w io.Writer
	// reading is when the pump began waiting in Read, in Unix
	// nanoseconds; 0 while it writes downstream.
	reading atomic.Int64
	done    chan struct{}
}

func newPump(r *os.File, w io.Writer) *pump {
	p := &pump{r: r, w: w, done: make(chan struct{})}
	go p.run()
	return p
}

func (p *pump) run() {
	defer close(p.done)
	buf := make([]byte, 32<<10)
	for {
		p.reading.Store(time.Now().UnixNano())
		n, err := p.r.Read(buf)
		p.reading.Store(0)
		if n > 0 {
			if _, werr := p.w.Write(buf[:n]); werr != nil {
				return // the client is gone; closing the pipe ends the writers
			}
		}
		if err != nil {
			return
		}
	}
}

// finish waits for the pump to reach the end of its pipe, once the command
// has exited. A pump that has waited in vain for more than idle since the
// exit (a background process holds the pipe and writes nothing) is stopped;
// one that is busy delivering output is not.
func (p *pump) finish(exited time.Time, idle time.Duration) {
	tick := time.NewTicker(idle / 20)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-tick.C:
			since := p.reading.Load()
			if since != 0 && time.Since(time.Unix(0, max(since, exited.UnixNano()))) > idle {
				_ = p.r.SetReadDeadline(time.Now())
				<-p.done
				return
			}
		}
	}
}

// outWriter sends each write as a session/output notification. A UTF-8
// character cut at the end of a write is held until the next one, so that
// text arrives as text.
type outWriter struct {
	srv  *jrpc2.Server
	note Output
	held []byte
}

func (w *outWriter) Write(p []byte) (int, error) {
	buf := p
	if len(w.held) > 0 {
		buf = append(w.held, p...)
		w.held = nil
	}
	if cut := incompleteTail(buf); cut < len(buf) && utf8.Valid(buf[:cut]) {
		w.held = append([]byte(nil), buf[cut:]...)
		buf = buf[:cut]
	}
	if len(buf) == 0 {
		return len(p), nil
	}
	if err := w.send(buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *outWriter) send(b []byte) error {
	n := w.note
	if utf8.Valid(b) {
		n.Data = string(b)
	} else {
		n.DataB64 = base64.StdEncoding.EncodeToString(b)
	}
	if w.srv == nil {
		return nil
	}
	return w.srv.Notify(context.Background(), MethodOutput, n)
}

// Close sends what was held.
func (w *outWriter) Close() error {
	if len(w.held) == 0 {
		return nil
	}
	b := w.held
	w.held = nil
	return w.send(b)
}

// incompleteTail returns where a UTF-8 character that the end of b cuts
// short starts, or len(b).
func incompleteTail(b []byte) int {
	for i := 1; i <= utf8.UTFMax-1 && i <= len(b); i++ {
		if c := b[len(b)-i]; utf8.RuneStart(c) {
			if c >= utf8.RuneSelf && !utf8.FullRune(b[len(b)-i:]) {
				return len(b) - i
			}
			break
		}
	}
	return len(b)
}

// clientStderr is the command's stderr stream to its client, shared by
// the stderr pump and the audit log's warning; after end, writes go
// nowhere.
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

// auditFailed ends a command whose audit log failed (audit: {on_error:
// fail}, the default): the error its client gets.
type auditFailed struct{ err error }

func (e *auditFailed) Error() string {
	return e.err.Error() + ": the command was ended (audit: {on_error: fail}, the default)"
}

func (e *auditFailed) Unwrap() error { return e.err }

// auditCause returns the audit failure that ended ctx, or nil.
func auditCause(ctx context.Context) error {
	var af *auditFailed
	if errors.As(context.Cause(ctx), &af) {
		return af
	}
	return nil
}
