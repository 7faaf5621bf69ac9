package launch

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/term"

	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/seal"
)

// ChooseSeal settles the launch's seal: the stronger of the options' Seal
// and what the policy asks (sieve.Result.Seal). Sealed means isolated.
// Where the system refuses what the seal needs, `on` runs without it, with
// a warning; `required` is an error and nothing starts.
func (l *Plan) ChooseSeal() error {
	mode := l.Result.Seal.Stronger(policy.SealOff)
	if l.opt.Seal {
		mode = mode.Stronger(policy.SealOn)
	}
	if mode == policy.SealOff {
		return nil
	}
	l.sealMode = mode
	if err := seal.Available(); err != nil {
		if mode == policy.SealRequired {
			return fmt.Errorf("seal: required by the policy, and not available here: %w", err)
		}
		l.host.warnf("seal: not available here (%v): the command runs without it, and can read your credential files", err)
		l.opt.Seal = false
		return nil
	}
	l.opt.Seal, l.opt.Isolate = true, true
	return nil
}

// Sealed reports whether the launch runs sealed, once ChooseSeal settled it.
func (l *Plan) Sealed() bool { return l.opt.Seal }

// Run runs the planned launch of the program at path (found with
// [Resolve]) with the launcher's own stdin, stdout and stderr: in place
// (exec) when nothing needs the launcher afterwards, else as a resident,
// non-dumpable launcher that masks the child's output, serves the shim,
// and removes file-delivered secrets when the child exits. It returns only
// on failure (nothing was started) or with the child's exit status; the
// plan is cleaned up either way.
func (l *Plan) Run(path string, argv []string) (int, error) {
	defer l.Cleanup()
	if err := l.StartBroker(); err != nil {
		return 0, err
	}
	alog, err := l.OpenAudit(argv)
	if err != nil {
		return 0, err
	}
	defer alog.Close()
	set, err := l.RedactionSet()
	if err != nil {
		return 0, err
	}
	if err := l.ChooseSeal(); err != nil {
		return 0, err
	}
	// Registering the forwarded signals overlaps the shim's set-up when the
	// launcher is likely to stay resident. It is never undone: the launcher
	// exits when the child has, and a late signal cannot cut its clean-up.
	var sigs *Signals
	if set != nil || l.files != nil || l.opt.Isolate || !l.opt.NoShim || l.broker != nil {
		sigs = NotifySignals()
	}
	sh, err := l.StartShim(path, alog)
	if err != nil {
		return 0, err
	}
	defer sh.Close()
	if set == nil && l.files == nil && !l.opt.Isolate && sh == nil && l.broker == nil {
		l.host.debugf("exec %s", path)
		alog.Exec(path)
		err := Exec(path, argv, l.Env)
		alog.Exit(125, err)
		return 0, err
	}
	c := &Cmd{Path: path, Args: argv, Env: l.Env, ExtraFiles: l.ExtraFiles()}
	r := Resident{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Signals: sigs}
	switch {
	case l.opt.Isolate:
		// The child's uid map is written from here, which a non-dumpable
		// launcher cannot do; the child cannot see the launcher in its own
		// pid namespace anyway, so the launcher turns non-dumpable just
		// after the start. Nor can it see what the launcher starts for
		// exec-time grants.
		if l.opt.Seal {
			spec := seal.Default(l.host.Home, l.host.ConfigDir, l.host.DataDir, nil)
			if c, err = IsolateSealed(c, spec); err != nil {
				return 0, err
			}
			l.host.debugf("seal: %d paths masked, %d read-only", len(spec.Mask), len(spec.ReadOnly))
		} else if c, err = Isolate(c); err != nil {
			return 0, err
		}
		r.AfterStart = MakeNonDumpable
	default:
		if sh.Grants() {
			// The programs rules grant to are started here, outside the
			// tree; a Landlock domain keeps the tree from reading or
			// tracing them.
			if sc, err := Scope(c); err == nil {
				c = sc
			} else {
				sh.NoScope(err)
			}
		}
		if err := MakeNonDumpable(); errors.Is(err, errors.ErrUnsupported) {
			l.host.warnf("%v", err)
		} else if err != nil {
			return 0, err
		}
	}
	var closers []func() error
	if set != nil {
		out, errw, cl, err := l.Filter(os.Stdout, os.Stderr, set)
		if err != nil {
			return 0, err
		}
		r.Stdout, r.Stderr, closers = out, errw, cl
		if term.IsTerminal(int(os.Stdout.Fd())) {
			r.PTY, r.TTY = true, os.Stdout
		}
	}
	l.host.debugf("resident launcher: redaction %v (entropy %v), pty %v, secret files %v, isolate %v, shim %v",
		set != nil, l.opt.Policy.Redact.Entropy, r.PTY, l.files != nil, l.opt.Isolate, sh != nil)
	status, err := Supervise(c, r)
	if errors.Is(err, ErrNamespaces) && l.opt.Seal && l.sealMode == policy.SealOn {
		// The kernel's switches allowed it, and something else refused
		// it (a container's seccomp filter): on runs without the seal.
		l.host.warnf("seal: not available here (%v): the command runs without it, and can read your credential files", err)
		c = &Cmd{Path: path, Args: argv, Env: l.Env, ExtraFiles: l.ExtraFiles()}
		if sh.Grants() {
			if sc, err := Scope(c); err == nil {
				c = sc
			} else {
				sh.NoScope(err)
			}
		}
		r.AfterStart = nil
		if err := MakeNonDumpable(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
			return 0, err
		}
		status, err = Supervise(c, r)
	}
	for _, c := range closers {
		c()
	}
	sh.Close()
	if err == nil {
		sh.ExplainFailure(status)
	}
	alog.Exit(status, err)
	return status, err
}
