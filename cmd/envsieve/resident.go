package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"golang.org/x/term"

	"github.com/envsieve/envsieve/audit"
	"github.com/envsieve/envsieve/internal/cli"
	"github.com/envsieve/envsieve/internal/detect"
	"github.com/envsieve/envsieve/internal/envknob"
	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/redact"
	"github.com/envsieve/envsieve/seal"
)

// masked returns the values to mask in the child's output: every value the
// policy withheld from the parent environment that is sensitive (by name or
// by value), and every injected secret. The first decisions of a result are
// the parent's entries, in order. It is computed once per launch.
func (l *launchPlan) masked() []redact.Secret {
	if l.mask == nil {
		l.mask = l.findMasked()
	}
	return l.mask
}

// maskedNames splits the names of the masked values into those redaction
// masks and those too short to mask (redact.min_secret_len).
func (l *launchPlan) maskedNames() (masked, tooShort []string) {
	masked, tooShort = []string{}, []string{}
	for _, s := range l.masked() {
		if len(s.Value) < l.policy.Redact.MinSecretLen {
			tooShort = append(tooShort, s.Name)
		} else {
			masked = append(masked, s.Name)
		}
	}
	return masked, tooShort
}

func (l *launchPlan) findMasked() []redact.Secret {
	out := []redact.Secret{}
	seen := map[string]bool{}
	add := func(name, value string) {
		if value != "" && !seen[value] {
			seen[value] = true
			out = append(out, redact.Secret{Name: name, Value: []byte(value)})
		}
	}
	for i, kv := range l.parent {
		if i >= len(l.res.Decisions) {
			break
		}
		d := l.res.Decisions[i]
		if d.Kept || d.Key == "" {
			continue
		}
		_, val, _ := strings.Cut(kv, "=")
		if detect.Sensitive(d.Key, val) {
			add(d.Key, val)
		}
	}
	names := make([]string, 0, len(l.injected))
	for n := range l.injected {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		add(n, l.injected[n])
	}
	return out
}

// redactionSet compiles the values to hide under the install's key; nil when
// redaction is off or there is nothing to hide.
func (l *launchPlan) redactionSet(u *cli.UI) (*redact.Set, error) {
	if !l.policy.Redact.Enabled && !l.forceMask {
		return nil, nil
	}
	mask := l.masked()
	if len(mask) == 0 {
		return nil, nil
	}
	key, err := cli.InstallKeyFor(u)
	if err != nil {
		return nil, fmt.Errorf("redaction: %w", err)
	}
	set, err := redact.Compile(key, mask, redact.Options{MinLen: l.policy.Redact.MinSecretLen})
	if err != nil {
		return nil, err
	}
	if skipped := set.Skipped(); len(skipped) > 0 {
		u.Debugf("redaction: not masked, shorter than min_secret_len %d: %v", l.policy.Redact.MinSecretLen, skipped)
	}
	if set.Len() == 0 {
		return nil, nil
	}
	u.Debugf("redaction: %d values, %d patterns", len(mask)-len(set.Skipped()), set.Len())
	return set, nil
}

// detectorIdle is how long the unknown-secret stage holds a word that may
// still be growing when the child writes nothing more (a prompt, an echo).
const detectorIdle = 20 * time.Millisecond

// filter returns the writers that mask a child's stdout and stderr on their
// way to the launcher's: the known values (set; both streams matched as one,
// held back by length and released when idle, so that neither a value split
// between them nor the timing of what is held gives anything away; see
// redact.Streams), then, when the policy's redact.entropy is on,
// credential-looking strings nobody named. The closers flush in order.
func (l *launchPlan) filter(u *cli.UI, stdout, stderr io.Writer, set *redact.Set) (io.Writer, io.Writer, []func() error, error) {
	var closers []func() error
	if l.policy.Redact.Entropy {
		key, err := cli.InstallKeyFor(u)
		if err != nil {
			return nil, nil, nil, err
		}
		opt := detect.ScanOptions{MinLen: l.policy.Redact.EntropyMinLen, MinEntropy: l.policy.Redact.EntropyThreshold}
		do := redact.NewDetector(stdout, key, opt, detectorIdle)
		de := redact.NewDetector(stderr, key, opt, detectorIdle)
		stdout, stderr, closers = do, de, []func() error{do.Close, de.Close}
	}
	if set != nil {
		m := redact.NewStreams(stdout, stderr, set, detectorIdle)
		stdout, stderr, closers = m.Stdout(), m.Stderr(), append([]func() error{m.Close}, closers...)
	}
	return stdout, stderr, closers, nil
}

// openAudit opens the audit log, when --audit or the policy names one, and
// records the launch, every decision, the injected secrets (by name and
// fingerprint) and what redaction masks. A nil log records nothing.
func (l *launchPlan) openAudit(u *cli.UI, argv []string) (*audit.Log, error) {
	path := l.auditPath
	if path == "" {
		path = envknob.Audit()
	}
	if path == "" {
		path = l.policy.AuditPath
	}
	if path == "" {
		return nil, nil
	}
	alog, err := audit.Open(path, envknob.Home())
	if err != nil {
		return nil, err
	}
	alog.Launch(argv, l.policy, l.res)
	alog.Decisions(l.res)
	if len(l.injected) > 0 {
		key, err := cli.InstallKeyFor(u)
		if err != nil {
			alog.Close()
			return nil, err
		}
		for _, name := range l.res.Injected {
			spec := l.policy.SecretSpec(name)
			alog.Injected(name, string(spec.From), string(spec.Deliver), redact.AuditFingerprint(key, []byte(l.injected[name])))
		}
	}
	if l.policy.Redact.Enabled {
		alog.Redaction(l.maskedNames())
	}
	return alog, nil
}

// chooseSeal settles the launch's seal: the stronger of --seal and what
// the policy asks (sieve.Result.Seal). Sealed means isolated. Where the
// system refuses the user namespace it needs, on runs without it, said on
// stderr; required refuses to start.
func (l *launchPlan) chooseSeal(u *cli.UI) error {
	mode := l.res.Seal.Stronger(policy.SealOff)
	if l.seal {
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
		u.Warnf("seal: not available here (%v): the command runs without it, and can read your credential files", err)
		l.seal = false
		return nil
	}
	l.seal, l.isolate = true, true
	return nil
}

// start runs the planned launch: in place (exec) when nothing needs the
// launcher afterwards, else as a resident, non-dumpable launcher that
// redacts the child's output and removes file-delivered secrets when the
// child exits. It returns only on failure or with the child's exit status.
func start(u *cli.UI, l *launchPlan, path string, argv []string) error {
	set, err := l.redactionSet(u)
	if err != nil {
		l.cleanup()
		return err
	}
	alog, err := l.openAudit(u, argv)
	if err != nil {
		l.cleanup()
		return err
	}
	defer alog.Close()
	if err := l.chooseSeal(u); err != nil {
		l.cleanup()
		return err
	}
	// Registering the forwarded signals overlaps the shim's set-up when the
	// launcher is likely to stay resident. It is never undone: the launcher
	// exits when the child has, and a late signal cannot cut its clean-up.
	var sigs *launch.Signals
	if set != nil || l.files != nil || l.isolate || !l.noShim {
		sigs = launch.NotifySignals()
	}
	sh, err := startShim(u, l, path, alog)
	if err != nil {
		l.cleanup()
		return err
	}
	defer sh.close()
	if set == nil && l.files == nil && !l.isolate && sh == nil {
		u.Debugf("exec %s", path)
		alog.Exec(path)
		err := launch.Exec(path, argv, l.res.Env)
		alog.Exit(125, err)
		return err
	}
	defer l.cleanup()
	c := &launch.Cmd{Path: path, Args: argv, Env: l.res.Env}
	r := launch.Resident{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Signals: sigs}
	if l.isolate {
		// The child's uid map is written from here, which a non-dumpable
		// launcher cannot do; the child cannot see the launcher in its own
		// pid namespace anyway, so the launcher turns non-dumpable just
		// after the start.
		if l.seal {
			spec := seal.Default(envknob.Home(), envknob.ConfigDir(), envknob.DataDir(), nil)
			if c, err = launch.IsolateSealed(c, spec); err != nil {
				return err
			}
			u.Debugf("seal: %d paths masked, %d read-only", len(spec.Mask), len(spec.ReadOnly))
		} else if c, err = launch.Isolate(c); err != nil {
			return err
		}
		r.AfterStart = launch.MakeNonDumpable
	} else if err := launch.MakeNonDumpable(); errors.Is(err, errors.ErrUnsupported) {
		u.Warnf("%v", err)
	} else if err != nil {
		return err
	}
	var closers []func() error
	if set != nil {
		out, errw, cl, err := l.filter(u, os.Stdout, os.Stderr, set)
		if err != nil {
			return err
		}
		r.Stdout, r.Stderr, closers = out, errw, cl
		if term.IsTerminal(int(os.Stdout.Fd())) {
			r.PTY, r.TTY = true, os.Stdout
		}
	}
	u.Debugf("resident launcher: redaction %v (entropy %v), pty %v, secret files %v, isolate %v, shim %v", set != nil, l.policy.Redact.Entropy, r.PTY, l.files != nil, l.isolate, sh != nil)
	status, err := launch.Supervise(c, r)
	if errors.Is(err, launch.ErrNamespaces) && l.seal && l.sealMode == policy.SealOn {
		// The kernel's switches allowed it, and something else refused
		// it (a container's seccomp filter): on runs without the seal.
		u.Warnf("seal: not available here (%v): the command runs without it, and can read your credential files", err)
		c = &launch.Cmd{Path: path, Args: argv, Env: l.res.Env}
		r.AfterStart = nil
		if err := launch.MakeNonDumpable(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
			return err
		}
		status, err = launch.Supervise(c, r)
	}
	for _, c := range closers {
		c()
	}
	sh.close()
	if err == nil {
		sh.explainFailure(u, status)
	}
	alog.Exit(status, err)
	if err != nil {
		return err
	}
	if status != 0 {
		return cli.ExitStatus(status)
	}
	return nil
}
