package daemon

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/creachadair/jrpc2"

	"github.com/envsieve/envsieve/internal/shellcmd"
	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/secret"
	"github.com/envsieve/envsieve/sieve"
)

// defaultShell runs shell strings when the policy names no shell.
const defaultShell = "/bin/sh"

// waitDelay bounds how long an exec waits for its output pipes after the
// command exits (a background grandchild may hold them): package launch's
// for a server's command (launch.Host.Server).
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
	// A shell string runs in the policy's shell (launch.Options.Argv),
	// and a rule applies only to the commands it parses to.
	var shellArgv []string
	var commands [][]string
	argv0 := ""
	if p.Shell != "" {
		shell := pol.Shell
		if shell == "" {
			shell = defaultShell
		}
		shellArgv, argv0 = []string{shell, "-c", p.Shell}, shell
		if cmds, ok := shellcmd.Commands(p.Shell); ok {
			commands = cmds
		}
	} else {
		commands, argv0 = [][]string{p.Argv}, p.Argv[0]
	}
	req := sieve.Request{Commands: commands, Profile: ss.profile, Tool: p.Tool, Secrets: p.Secrets}
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
	// One launch, as `envsieve run` makes it (package launch): the
	// session's snapshot is the parent, the daemon's own environment the
	// first of the two layers (buildEnv), and the secrets come from the
	// daemon's sources. A rule that matches by path is chosen for the
	// program the client's own PATH finds.
	l, err := launch.Build(ectx, s.host(ss), launch.Options{
		Policy: pol, Parent: ss.snapshot, Request: req, Argv: shellArgv, Dir: cwd,
		Sensitive: ss.masked, RedactCache: &ss.sets,
		Builder: func(in sieve.Input) (*sieve.Result, error) {
			b, err := s.buildEnv(ss, in.Request, in.SecretValues, in.SecretFiles)
			if err != nil {
				return nil, err
			}
			res := *b.Client
			res.Env = b.Env
			return &res, nil
		},
	})
	if err != nil {
		return nil, err
	}
	if p.Timeout > 0 {
		t := time.AfterFunc(time.Duration(p.Timeout*float64(time.Second)), func() { cancel(errTimeout) })
		defer t.Stop()
	}
	var in io.Reader
	if len(stdin) > 0 {
		in = bytes.NewReader(stdin)
	}
	// The daemon seals its commands as `envsieve run` does, by Landlock
	// (it is their parent: launch.Host.Server). Where it cannot, a profile
	// that requires the seal gets no command, and one that asks for it
	// gets it unsealed with a notice on the command's stderr, in the
	// daemon's log and in the audit log. The audit log fails closed, as
	// for `envsieve run`.
	srv := jrpc2.ServerFromContext(ctx)
	outN := &outWriter{srv: srv, note: Output{SessionID: ss.id, ExecID: execID, Stream: "stdout"}}
	errN := &outWriter{srv: srv, note: Output{SessionID: ss.id, ExecID: execID, Stream: "stderr"}}
	run, err := l.Start(ectx, launch.Stdio{Stdin: in, Stdout: outN, Stderr: errN})
	if err != nil {
		if errors.Is(err, launch.ErrSealRequired) {
			return nil, rpcError(CodeExecFailed, "session/exec: "+err.Error())
		}
		return nil, err
	}
	status, werr := run.Wait()
	outN.Close()
	errN.Close()
	if werr != nil {
		return nil, werr
	}
	res := &ExecResult{ExecID: execID, ExitCode: status}
	if st := run.ProcessState(); st != nil {
		res.ExitCode = st.ExitCode()
		if sig, name, ok := killedBy(st); ok {
			res.ExitCode, res.Signal = 128+sig, name
		}
	}
	switch context.Cause(ectx) {
	case errTimeout:
		res.TimedOut = true
	case errCancelled, errShutdown:
		res.Cancelled = true
	}
	s.log.Debug("exec", "session_id", ss.id, "exec_id", execID, "program", filepath.Base(argv0), "exit_code", res.ExitCode)
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
func (s *Server) host(ss *session) *launch.Host {
	store := s.cfg.Store
	h := &launch.Host{
		Report:     logReport{s.log.With("session_id", ss.id)},
		Server:     true,
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

// logReport puts what a launch has to say in the daemon's log.
type logReport struct{ log *slog.Logger }

func (r logReport) Debugf(format string, args ...any) { r.log.Debug(fmt.Sprintf(format, args...)) }
func (r logReport) Warnf(format string, args ...any)  { r.log.Warn(fmt.Sprintf(format, args...)) }

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
