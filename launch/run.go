package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"

	"golang.org/x/term"

	"github.com/envsieve/envsieve/audit"
	"github.com/envsieve/envsieve/internal/pin"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/seal"
	"github.com/envsieve/envsieve/shim"
)

// ChooseSeal settles the launch's seal: the stronger of the options' Seal
// and what the policy asks (sieve.Result.Seal), and the mechanism (package
// seal): the namespaces of --isolate where this system allows them, else
// Landlock. Where it offers neither, `on` runs without the seal, with a
// warning; `required` is an error and nothing starts.
func (l *Plan) ChooseSeal() error {
	mode := l.Result.Seal.Stronger(policy.SealOff)
	if l.opt.Seal {
		mode = mode.Stronger(policy.SealOn)
	}
	if mode == policy.SealOff {
		return nil
	}
	l.sealMode = mode
	by, err := seal.Choose()
	if err != nil {
		if mode == policy.SealRequired {
			return fmt.Errorf("seal: required by the policy, and not available here: %w", err)
		}
		l.host.warnf("seal: not available here (%v): the command runs without it, and can read your credential files", err)
		l.opt.Seal = false
		return nil
	}
	l.opt.Seal, l.sealBy = true, by
	if by == seal.Namespaces {
		l.sealIsolates = !l.opt.Isolate
		l.opt.Isolate = true
	}
	return nil
}

// scope returns c as the tree's first program outside --isolate: sealed
// with Landlock when the launch is (an error then means nothing may
// start), else in a Landlock domain of its own when the shim may start
// granted programs (the domain keeps the tree from reading or tracing
// them; without it the shim declines every start), else c itself.
func (l *Plan) scope(c *Cmd, sh *ShimRun) (*Cmd, error) {
	if l.opt.Seal && l.sealBy == seal.Landlock {
		spec, err := l.sealSpec()
		if err != nil {
			return nil, err
		}
		sc, err := ScopeSealed(c, spec)
		if err != nil {
			return nil, err
		}
		l.host.debugf("seal: landlock; %d paths masked, %d read-only, %d writable", len(spec.Mask), len(spec.ReadOnly), len(spec.Write))
		return sc, nil
	}
	if sh.Grants() {
		sc, err := Scope(c)
		if err != nil {
			sh.NoScope(err)
			return c, nil
		}
		return sc, nil
	}
	return c, nil
}

// isolateInit returns the path of envsieve-init beside the shim, the init
// of the launch's namespaces, or "" when it is not installed (envsieve
// re-executes itself as the init then, a second Go start).
func (l *Plan) isolateInit() string {
	lib, err := shim.Locate(l.host.Shim, l.host.Exe)
	if err != nil {
		return ""
	}
	init, err := shim.LocateInit(lib)
	if err != nil {
		return ""
	}
	l.host.debugf("isolate: the init is %s", init)
	return init
}

// unshareInit returns the path of envsieve-init when an isolated launch may
// exec it in the launcher's place, to make the namespaces itself
// (execUnshared); else "", and the launcher starts it and stays resident.
// That takes three things: the init installed; no seccomp filter on the
// launcher (a container's may refuse user namespaces, and the resident
// launcher answers that with Landlock, or with a warning for `seal: on`);
// and, when the namespaces were the seal's own choice, Landlock here, for
// the init to fall back to if they are refused all the same.
func (l *Plan) unshareInit() string {
	if !l.opt.Isolate || !noSeccomp() {
		return ""
	}
	if l.opt.Seal && l.sealIsolates && seal.LandlockAvailable() != nil {
		return ""
	}
	return l.isolateInit()
}

// execUnshared replaces the launcher with envsieve-init at init, which
// makes the namespaces and forks their pid 1 itself (shim/libenvsieve/
// init.c), passes signals on and exits with the program's status: what the
// resident launcher and its init do, in one C process with the launcher's
// pid. Where the namespaces are refused, a seal that chose them falls back
// to Landlock (the init execs envsieve's ScopeInit with the same
// environment, which makes the seal or fails); --isolate itself fails.
// It returns only on failure.
func (l *Plan) execUnshared(init, path string, argv []string, alog *audit.Log) error {
	env := initEnv(l.Env)
	fallback := "-"
	if l.opt.Seal {
		spec, err := l.sealSpec()
		if err != nil {
			return err
		}
		text, err := spec.Encode()
		if err != nil {
			return err
		}
		env = append(env, initSeal+text)
		if l.sealIsolates {
			if fallback, err = os.Executable(); err != nil {
				return fmt.Errorf("seal: find envsieve's own executable: %w", err)
			}
		}
		l.host.debugf("seal: namespaces; %d paths masked, %d read-only, %d writable", len(spec.Mask), len(spec.ReadOnly), len(spec.Write))
	}
	if l.pinned != nil {
		// As execInPlace: the init and its program inherit it.
		if err := l.pinned.KeepOpen(); err != nil {
			return err
		}
		path = l.pinned.Path()
	}
	l.host.debugf("exec %s in place: it makes the namespaces and starts %s", init, path)
	alog.Exec(path)
	if err := l.auditFailed(alog); err != nil {
		return err
	}
	args := append([]string{"envsieve-init", "--unshare", fallback, path}, argv...)
	if err := checkNUL(args, env); err != nil {
		return err
	}
	// The init's own failure is envsieve's (125), not the program's 126
	// or 127: its error is not mapped as the program's would be.
	err := fmt.Errorf("isolate: exec %s: %v", init, syscall.Exec(init, args, env))
	alog.Exit(125, err)
	return err
}

// auditFailed returns the audit log's failed write, unless the policy
// says `audit: {on_error: warn}`: a launch the log cannot record does not
// start.
func (l *Plan) auditFailed(alog *audit.Log) error {
	if err := alog.Err(); err != nil && !l.opt.Policy.AuditWarn {
		return fmt.Errorf("%w: nothing was started (audit: {on_error: fail}, the default)", err)
	}
	return nil
}

// sealSpec is the launch's seal (made once, kept): what the policy and
// package seal mask and keep read-only; HOME read-only besides, but for the
// places the tree writes its work (writePlaces), each made first when it
// is missing and can be. The config dir is made first too when it is
// missing: a tree that could create it could write the policy of every
// later launch. Where the launcher cannot make either (a read-only HOME:
// Nix, a read-only container, CI), neither can the tree, which runs as
// the same user with less: the launch goes on with what exists.
func (l *Plan) sealSpec() (seal.Spec, error) {
	if l.sealed != nil {
		return *l.sealed, nil
	}
	if l.host.ConfigDir != "" {
		if err := os.MkdirAll(l.host.ConfigDir, 0o700); err != nil && !cannotWrite(err) {
			return seal.Spec{}, fmt.Errorf("seal: make the config dir: %w", err)
		} else if err != nil {
			l.host.debugf("seal: the config dir cannot be made (%v), nor can the tree make it", err)
		}
	}
	// The policy's own masks: one that cannot be placed (a "~/" path with
	// no HOME) fails the launch, never drops.
	extra := make([]string, 0, len(l.Result.SealMask))
	for _, m := range l.Result.SealMask {
		p, err := l.host.expandHome(m)
		if err != nil {
			return seal.Spec{}, fmt.Errorf("seal: mask %w", err)
		}
		extra = append(extra, p)
	}
	spec := seal.Default(l.host.Home, l.host.ConfigDir, l.host.DataDir, extra)
	if l.logins != nil {
		spec.Mask = append(spec.Mask, l.logins.masks...) // ~/.aws/config (fakeAWSConfig)
	}
	if l.logins != nil && len(l.logins.fake) > 0 && l.broker != nil {
		// Shown by a namespace seal; masked by Landlock all the same.
		spec.Fake = map[string]string{}
		for p, src := range l.logins.fake {
			if slices.Contains(spec.Mask, p) { // always: fakeLogins takes the seal's list only
				spec.Fake[p] = src
			}
		}
	}
	if l.logins != nil && len(l.logins.passed) > 0 {
		// The outer seal's fakes pass as they are (outer.go).
		spec.Mask = slices.DeleteFunc(spec.Mask, func(m string) bool { return slices.Contains(l.logins.passed, m) })
	}
	writes, err := l.writePlaces(spec)
	if err != nil {
		return seal.Spec{}, err
	}
	if l.host.Home != "" {
		spec.ReadOnly = append(spec.ReadOnly, l.host.Home)
		spec.Write = writes
		spec.Hold = seal.HoldDirs(spec.Mask, l.host.Home)
	}
	l.sealed = &spec
	return spec, nil
}

// cannotWrite reports whether err says the caller may not write there
// (permissions, a read-only filesystem).
func cannotWrite(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}

// atOrIn reports whether the clean path p is one of paths or lies in one.
func atOrIn(p string, paths []string) bool {
	for _, d := range paths {
		d = filepath.Clean(d)
		if p == d || d == "/" || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// toolCaches are the caches under HOME a sealed tree writes (docs/design.md
// section 9.7, "The seal"), by the program that uses them; "" for every tree. The
// defaults only: GOMODCACHE, GOCACHE, npm's cache, CARGO_HOME moved
// elsewhere are outside HOME, or named by seal.write.
var toolCaches = []struct{ prog, dir string }{
	{"", ".cache"},               // XDG: GOCACHE's ~/.cache/go-build, pip's ~/.cache/pip, ...
	{"go", "go/pkg/mod"},         // GOMODCACHE: $GOPATH/pkg/mod
	{"npm", ".npm"},              // npm's cache and logs
	{"cargo", ".cargo/registry"}, // cargo's downloaded crates
	{"cargo", ".cargo/git"},      // cargo's git dependencies
}

// CachePlaces returns the caches under home a sealed tree may write
// (docs/design.md, "The seal"), whether or not they exist: ~/.cache and the
// toolchains' defaults. A policy file there is one the tree could have
// written.
func CachePlaces(home string) []string {
	out := make([]string, 0, len(toolCaches))
	for _, c := range toolCaches {
		out = append(out, filepath.Join(home, c.dir))
	}
	return out
}

// writePlaces returns the places under HOME the sealed tree may write
// (docs/design.md, "The seal": writes): the working directory, the profile's
// state_dirs, the temp directory, the caches (toolCaches) and the policy's
// seal.write. Each missing one is made (0700) when the launcher can: a
// state dir, a seal.write path and ~/.cache always, a tool's cache when
// the tool is on the tree's PATH (no ~/go for a tree without go). None
// may be HOME, nor lie at or in a path base masks or keeps read-only
// (envsieve's config dir): the working directory, a state dir or a
// seal.write path there is warned about, the others dropped quietly.
// Outside HOME nothing changes, and a place there is left out.
func (l *Plan) writePlaces(base seal.Spec) ([]string, error) {
	home := l.host.Home
	if home == "" {
		return nil, nil
	}
	home = filepath.Clean(home)
	type place struct {
		path        string
		what        string // for a warning; "" drops it quietly
		make, named bool   // make it when missing; named by the policy
	}
	var places []place
	if wd, err := os.Getwd(); err == nil {
		places = append(places, place{path: wd, what: "the working directory"})
	}
	tmp := "/tmp"
	for _, kv := range l.Env {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok && filepath.IsAbs(v) {
			tmp = v
		}
	}
	places = append(places, place{path: tmp})
	if l.opt.Policy != nil {
		if plan, err := l.opt.Policy.Plan(l.Result.Profile); err == nil {
			for _, d := range plan.StateDirs {
				places = append(places, place{path: filepath.Join(home, strings.TrimPrefix(d, "~/")), what: "state dir " + d, make: true, named: true})
			}
		}
	}
	for _, w := range l.Result.SealWrite {
		p, err := l.host.expandHome(w)
		if err != nil {
			return nil, fmt.Errorf("seal: write %w", err)
		}
		places = append(places, place{path: p, what: "seal.write " + w, make: true, named: true})
	}
	for _, c := range toolCaches {
		p := filepath.Join(home, c.dir)
		mk := c.prog == ""
		if !mk {
			// The PATH is searched only for a cache that is missing.
			if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
				_, err := LookPath(c.prog, l.Env)
				mk = err == nil
			}
		}
		places = append(places, place{path: p, make: mk})
	}
	// A place named by HOME's real path (the working directory, when HOME
	// is a link: /home on /var/home) is named by HOME, as the seal's
	// other paths are.
	realHome, err := filepath.EvalSymlinks(home)
	if err != nil {
		realHome = home
	}
	var out []string
	for _, p := range places {
		path := filepath.Clean(p.path)
		if rest, ok := strings.CutPrefix(path, realHome+"/"); ok && realHome != home {
			path = filepath.Join(home, rest)
		} else if path == realHome {
			path = home
		}
		if path != home && !strings.HasPrefix(path, home+"/") {
			continue // outside HOME: the system's, unchanged
		}
		if path == home || atOrIn(path, base.ReadOnly) || atOrIn(path, base.Mask) {
			if p.what != "" {
				l.host.warnf("seal: %s is HOME or at or in a sealed path (%s): not made, and the tree cannot write it", p.what, path)
			}
			continue
		}
		if p.make {
			if err := os.MkdirAll(path, 0o700); err != nil {
				if p.named && !cannotWrite(err) {
					l.host.warnf("seal: %s: %v", p.what, err)
				} else {
					l.host.debugf("seal: %s cannot be made (%v): the tree cannot write it", path, err)
				}
			}
		}
		if !slices.Contains(out, path) {
			out = append(out, path)
		}
	}
	return out, nil
}

// execInPlace replaces the launcher with the program, when nothing needs
// the launcher afterwards; sealed (by Landlock: namespaces isolate), this
// thread first enters the seal's domain. It returns only on failure.
func (l *Plan) execInPlace(path string, argv []string, alog *audit.Log) error {
	if l.opt.Seal {
		spec, err := l.sealSpec()
		if err != nil {
			return err
		}
		runtime.LockOSThread()
		if err := seal.Restrict(spec); err != nil {
			return err
		}
		l.host.debugf("seal: landlock; %d paths masked, %d read-only, %d writable", len(spec.Mask), len(spec.ReadOnly), len(spec.Write))
	}
	l.host.debugf("exec %s", path)
	alog.Exec(path)
	if err := l.auditFailed(alog); err != nil {
		return err
	}
	if l.pinned != nil {
		// The sealed copy the rule's pin was checked against; a script's
		// interpreter opens it by name after the exec, so it stays open.
		if err := l.pinned.KeepOpen(); err != nil {
			return err
		}
		path = l.pinned.Path()
	}
	err := Exec(path, argv, l.Env)
	alog.Exit(125, err)
	return err
}

// command is the resident launch of the program at path: when the rule
// pins its bytes, the child runs the sealed copy, which it inherits (a
// script's interpreter opens it by name), as file-delivered secrets are
// inherited: at its own number, or as an extra file where the host passes
// those (a number of the launcher's could then be another's in the child).
func (l *Plan) command(path string, argv []string) (*Cmd, error) {
	files := l.ExtraFiles()
	if l.pinned != nil {
		if l.host.ExtraFiles {
			files = append(slices.Clone(files), l.pinned.File)
			path = pin.FDPath(2 + len(files))
		} else {
			if err := l.pinned.KeepOpen(); err != nil {
				return nil, err
			}
			path = l.pinned.Path()
		}
	}
	return &Cmd{Path: path, Args: argv, Env: l.Env, ExtraFiles: files}, nil
}

// Run runs the planned launch of the program at path (found with
// [Resolve]) with the launcher's own stdin, stdout and stderr: in place
// (exec) when nothing needs the launcher afterwards, else as a resident,
// non-dumpable launcher that masks the child's output, serves the shim,
// and removes file-delivered secrets when the child exits. It returns only
// on failure (nothing was started) or with the child's exit status; the
// plan is cleaned up either way.
func (l *Plan) Run(path string, argv []string) (int, error) {
	defer l.Cleanup()
	// The seal first: a sealed launch's credential files are fakes whose
	// real values the broker keeps.
	if err := l.ChooseSeal(); err != nil {
		return 0, err
	}
	if err := l.StartBroker(); err != nil {
		return 0, err
	}
	if err := l.StartSSHAgent(); err != nil {
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
	if l.sealMode != "" {
		if l.opt.Seal {
			alog.Seal(string(l.sealMode), string(l.sealBy), "")
		} else {
			alog.Seal(string(l.sealMode), "none", "not available here")
		}
	}
	// Registering the forwarded signals overlaps the shim's set-up when the
	// launcher is likely to stay resident. It is never undone: the launcher
	// exits when the child has, and a late signal cannot cut its clean-up.
	//
	// An isolated launch that needs the launcher for nothing else execs
	// envsieve-init in its place (unshareInit), which makes the namespaces
	// itself: no Go launcher stays resident, and nothing is registered.
	unshare := ""
	if set == nil && l.files == nil && l.opt.NoShim && l.broker == nil && l.sshAgent == nil {
		unshare = l.unshareInit()
	}
	var sigs *Signals
	if set != nil || l.files != nil || (l.opt.Isolate && unshare == "") || !l.opt.NoShim || l.broker != nil || l.sshAgent != nil {
		sigs = NotifySignals()
	}
	prog := path
	if l.pinned != nil {
		prog = l.pinned.Path()
	}
	sh, err := l.StartShim(prog, alog)
	if err != nil {
		return 0, err
	}
	defer sh.Close()
	if sh != nil {
		// The socket directories of launchers killed before they could
		// remove them, while this launch runs.
		defer sweepSocketDirs(l.host.socketDir())()
	}
	// A launch sealed by Landlock is never in place: its tree needs a
	// reaper and a launcher to outlive it (reap_linux.go).
	inPlace := set == nil && l.files == nil && sh == nil && l.broker == nil && l.sshAgent == nil &&
		(l.logins == nil || len(l.logins.views) == 0) // an agent's view is synced back after (agentviews.go)
	if inPlace && !l.opt.Isolate && !l.opt.Seal {
		return 0, l.execInPlace(path, argv, alog)
	}
	if inPlace && unshare != "" {
		return 0, l.execUnshared(unshare, path, argv, alog)
	}
	c, err := l.command(path, argv)
	if err != nil {
		return 0, err
	}
	r := Resident{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Signals: sigs}
	if !l.opt.Policy.AuditWarn {
		// The audit log fails closed: a write that fails ends the launch.
		abort := make(chan error, 1)
		alog.OnFail(func(err error) {
			abort <- fmt.Errorf("%w: the launch is ended (audit: {on_error: fail}, the default)", err)
		})
		r.abort = abort
	}
	if r.tree, err = holdTree(); err != nil {
		l.host.debugf("lifetime: %v", err)
	}
	switch {
	case l.opt.Isolate:
		// The child's uid map is written from here, which a non-dumpable
		// launcher cannot do; the child cannot see the launcher in its own
		// pid namespace anyway, so the launcher turns non-dumpable just
		// after the start. Nor can it see what the launcher starts for
		// exec-time grants.
		if l.opt.Seal {
			spec, err := l.sealSpec()
			if err != nil {
				return 0, err
			}
			if c, err = isolateSealedWith(c, spec, l.isolateInit()); err != nil {
				return 0, err
			}
			l.host.debugf("seal: namespaces; %d paths masked, %d read-only, %d writable", len(spec.Mask), len(spec.ReadOnly), len(spec.Write))
		} else if c, err = isolateWith(c, l.isolateInit()); err != nil {
			return 0, err
		}
		r.AfterStart = MakeNonDumpable
	default:
		if c, err = l.scope(c, sh); err != nil {
			return 0, err
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
	if err := l.auditFailed(alog); err != nil {
		return 0, err
	}
	l.host.debugf("resident launcher: redaction %v (entropy %v), pty %v, secret files %v, isolate %v, shim %v",
		set != nil, l.opt.Policy.Redact.Entropy, r.PTY, l.files != nil, l.opt.Isolate, sh != nil)
	status, err := Supervise(c, r)
	if errors.Is(err, ErrNamespaces) && l.opt.Seal && l.sealIsolates {
		// The kernel's switches allowed them, and something else refused
		// them (a container's seccomp filter): seal with Landlock, or
		// where it cannot, run `on` without the seal.
		l.opt.Isolate = false
		if lerr := seal.LandlockAvailable(); lerr == nil {
			l.sealBy = seal.Landlock
			l.host.debugf("seal: user namespaces refused (%v): sealing with Landlock", err)
			alog.Seal(string(l.sealMode), string(l.sealBy), "user namespaces refused at the start")
		} else if l.sealMode == policy.SealOn {
			l.host.warnf("seal: not available here (%v; and %v): the command runs without it, and can read your credential files", err, lerr)
			alog.Seal(string(l.sealMode), "none", "user namespaces refused at the start, and no Landlock")
			l.opt.Seal = false
		} else {
			return 0, fmt.Errorf("seal: required by the policy, and not available here: %w; and %v", err, lerr)
		}
		if inPlace && !l.opt.Seal {
			return 0, l.execInPlace(path, argv, alog)
		}
		if c, err = l.command(path, argv); err != nil {
			return 0, err
		}
		if c, err = l.scope(c, sh); err != nil {
			return 0, err
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
	// What the programs started for grants left, once the shim is closed
	// and starts no more.
	if n, terr := r.tree.end(); terr != nil {
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

// ChooseServerSeal settles the seal of a command a resident server starts
// (the daemon's session/exec): mode is what the policy asks. Such a
// command is sealed by Landlock (the server is its parent; no namespaces).
// Where Landlock cannot seal, `required` is an error and nothing may
// start; `on` runs unsealed, and notice says so for the client. Call it
// before StartShim: the programs started for rules are sealed with it.
func (l *Plan) ChooseServerSeal(mode policy.SealMode) (notice string, err error) {
	if mode.Stronger(policy.SealOff) == policy.SealOff {
		return "", nil
	}
	l.sealMode = mode
	if lerr := seal.LandlockAvailable(); lerr != nil {
		if mode == policy.SealRequired {
			return "", fmt.Errorf("seal: required by the policy, and not available here: %w", lerr)
		}
		return fmt.Sprintf("seal: not available here (%v): the command runs without it, and can read your credential files", lerr), nil
	}
	l.opt.Seal, l.sealBy = true, seal.Landlock
	return "", nil
}

// Scoped returns c as a resident server's command: sealed by Landlock when
// ChooseServerSeal sealed the launch (an error then means nothing may
// start), else in a Landlock domain of its own when the shim may start
// granted programs, else c itself.
func (l *Plan) Scoped(c *Cmd, sh *ShimRun) (*Cmd, error) { return l.scope(c, sh) }

// Sealed reports whether the launch's tree is sealed (ChooseSeal or
// ChooseServerSeal made the seal).
func (l *Plan) Sealed() bool { return l.opt.Seal }
