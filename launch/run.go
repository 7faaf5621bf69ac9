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

	"github.com/envsieve/envsieve/internal/audit"
	"github.com/envsieve/envsieve/internal/pin"
	"github.com/envsieve/envsieve/internal/proc"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/seal"
	"github.com/envsieve/envsieve/shim"
)

// chooseSeal takes the seal the decision record settled (decide): the
// stronger of the options' Seal and what the policy asks, made by the
// mechanism this system offers. Where it offers none, `on` runs without
// the seal, and sealNotice says so; `required` is an error and nothing
// starts.
func (l *Plan) chooseSeal() error {
	d := &l.d
	l.isolated, l.sealed, l.sealBy = d.Isolate, d.Sealed, d.SealBy
	if d.Seal == policy.SealOff {
		return nil
	}
	l.sealMode = d.Seal
	if !d.Sealed {
		if d.Seal == policy.SealRequired {
			return fmt.Errorf("%w: %w", ErrSealRequired, l.sealErr)
		}
		l.sealNotice = fmt.Sprintf("seal: not available here (%v): the command runs without it, and can read your credential files", l.sealErr)
	}
	return nil
}

// scope returns c as the tree's first program outside --isolate: sealed
// with Landlock when the launch is (an error then means nothing may
// start), else in a Landlock domain of its own when the shim may start
// granted programs (the domain keeps the tree from reading or tracing
// them; without it the shim declines every start), else c itself.
// viaInit says the tree's reaper may be envsieve-init, where it is
// installed: for a Cmd that proc starts (it inherits the ruleset at the
// start); else it is envsieve itself.
func (l *Plan) scope(c *proc.Cmd, sh *shimRun, viaInit bool) (*proc.Cmd, error) {
	reaper := func() string {
		if !viaInit {
			return ""
		}
		return l.isolateInit()
	}
	if l.sealed && l.sealBy == seal.Landlock {
		spec, err := l.sealSpec()
		if err != nil {
			return nil, err
		}
		init := reaper()
		sc, err := proc.ScopeSealedWith(c, spec, init)
		if err != nil {
			return nil, err
		}
		l.host.debugf("seal: landlock; %d paths masked, %d read-only, %d writable; the tree's reaper is %s",
			len(spec.Mask), len(spec.ReadOnly), len(spec.Write), reaperName(init))
		return sc, nil
	}
	if sh.Grants() {
		sc, err := proc.ScopeWith(c, reaper())
		if err != nil {
			sh.NoScope(err)
			return c, nil
		}
		return sc, nil
	}
	return c, nil
}

// reaperName names the reaper of a Landlock launch's tree, for the debug
// log: envsieve-init's Landlock init at init, or envsieve re-executed.
func reaperName(init string) string {
	if init == "" {
		return "envsieve, re-executed"
	}
	return "envsieve-init"
}

// isolateInit returns the path of envsieve-init beside the shim, the init
// of the launch's namespaces or the reaper of its Landlock domain, or ""
// when it is not installed (envsieve re-executes itself as the init then,
// a second Go start).
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
	if !l.isolated || !proc.NoSeccomp() {
		return ""
	}
	if l.sealed && l.sealIsolates && seal.LandlockAvailable() != nil {
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
	env := proc.InitEnv(l.Env)
	fallback := "-"
	if l.sealed {
		spec, err := l.sealSpec()
		if err != nil {
			return err
		}
		text, err := spec.Encode()
		if err != nil {
			return err
		}
		env = append(env, proc.InitSeal+text)
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
	if err := proc.CheckNUL(args, env); err != nil {
		return err
	}
	// The init's own failure is envsieve's (125), not the program's 126
	// or 127: its error is not mapped as the program's would be.
	if err := proc.EndEarlySignals(); err != nil {
		alog.Exit(125, err)
		return err
	}
	err := fmt.Errorf("isolate: exec %s: %v", init, syscall.Exec(init, args, env))
	alog.Exit(125, err)
	return err
}

// landlockInit returns the path of envsieve-init when a launch sealed by
// Landlock may exec it in the launcher's place (execLandlock): it is
// installed, and the seal is Landlock's. Else "", and the launcher stays
// resident as its tree's reaper's parent.
func (l *Plan) landlockInit() string {
	if !l.sealed || l.sealBy != seal.Landlock {
		return ""
	}
	return l.isolateInit()
}

// execLandlock replaces the launcher with envsieve-init's Landlock init at
// init (shim/libenvsieve/init.c), handing it the seal's ruleset, built
// here: it forks the tree's reaper, a child subreaper that watches it,
// which puts the program alone in the domain; it passes signals on and
// exits with the program's status. What a resident launcher and its
// reaper do, with no Go process left. It returns only on failure.
func (l *Plan) execLandlock(init, path string, argv []string, alog *audit.Log) error {
	spec, err := l.sealSpec()
	if err != nil {
		return err
	}
	if l.pinned != nil {
		// As execInPlace: the init and its program inherit it.
		if err := l.pinned.KeepOpen(); err != nil {
			return err
		}
		path = l.pinned.Path()
	}
	args := append([]string{"envsieve-init", "--landlock", path}, argv...)
	env := proc.InitEnv(l.Env)
	if err := proc.CheckNUL(args, env); err != nil {
		return err
	}
	// Built last: from here the ruleset stays open across the exec.
	ruleset, err := proc.ExecScopedEnv(spec)
	if err != nil {
		return err
	}
	env = append(env, ruleset)
	l.host.debugf("seal: landlock; %d paths masked, %d read-only, %d writable", len(spec.Mask), len(spec.ReadOnly), len(spec.Write))
	l.host.debugf("exec %s in place: it reaps the tree and starts %s in the seal's domain", init, path)
	alog.Exec(path)
	if err := l.auditFailed(alog); err != nil {
		return err
	}
	// The init's own failure is envsieve's (125), not the program's.
	if err := proc.EndEarlySignals(); err != nil {
		alog.Exit(125, err)
		return err
	}
	err = fmt.Errorf("seal: exec %s: %v", init, syscall.Exec(init, args, env))
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
	if l.spec != nil {
		return *l.spec, nil
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
	for _, p := range l.ownStateDirLogins() { // CLAUDE_CONFIG_DIR, CODEX_HOME, GEMINI_CLI_HOME of the user's
		if !slices.Contains(spec.Mask, p) {
			spec.Mask = append(spec.Mask, p)
		}
	}
	if l.logins != nil {
		spec.Mask = append(spec.Mask, l.logins.masks...) // ~/.aws/config (fakeAWSConfig)
	}
	if p := awsTokenMask(awsWebIdentityTokenFile(l.opt.Parent)); p != "" && !slices.Contains(spec.Mask, p) {
		// A web identity token the user's environment names (EKS's IRSA)
		// is a credential: the broker reads it (fakeAWSWebIdentityEnv).
		if _, err := os.Lstat(p); err == nil {
			spec.Mask = append(spec.Mask, p)
		}
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
	if l.logins != nil {
		// An agent's state dir the user's variable names outside HOME,
		// with the launch's view in it: held too, so that a login made
		// there during the session does not show (the view's lock is
		// what holds a state dir in HOME: agentviews.go).
		for _, v := range l.logins.views {
			if d := filepath.Clean(v.state); !slices.Contains(spec.Hold, d) && !atOrIn(d, []string{l.host.Home}) {
				spec.Hold = append(spec.Hold, d)
			}
		}
	}
	l.spec = &spec
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
		d = filepath.Clean(d) // the same string, with no copy, when clean
		if d == "/" || strings.HasPrefix(p, d) && (len(p) == len(d) || p[len(d)] == '/') {
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
	if wd, err := os.Getwd(); l.opt.Dir != "" {
		places = append(places, place{path: l.opt.Dir, what: "the working directory"})
	} else if err == nil {
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
		if plan, err := l.opt.Policy.Effective(l.Result.Profile); err == nil {
			for _, d := range plan.StateDirs {
				places = append(places, place{path: filepath.Join(home, strings.TrimPrefix(d, "~/")), what: "state dir " + d, make: true, named: true})
			}
		}
	}
	for _, d := range l.ownStateDirs(base) { // the user's CLAUDE_CONFIG_DIR, ... in place of the default (agentown.go)
		places = append(places, place{path: d, what: "the agent's state dir " + d})
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
				_, err := proc.LookPath(c.prog, l.Env)
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
	if l.sealed {
		spec, err := l.sealSpec()
		if err != nil {
			return err
		}
		runtime.LockOSThread()
		if err := proc.Restrict(spec); err != nil {
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
	if err := proc.EndEarlySignals(); err != nil {
		alog.Exit(125, err)
		return err
	}
	err := proc.Exec(path, argv, l.Env)
	alog.Exit(125, err)
	return err
}

// command is the resident launch of the program at path: when the rule
// pins its bytes, the child runs the sealed copy, which it inherits (a
// script's interpreter opens it by name), as file-delivered secrets are
// inherited: at its own number, or as an extra file where the host passes
// those (a number of the launcher's could then be another's in the child).
func (l *Plan) command(path string, argv []string) (*proc.Cmd, error) {
	files := l.extraFiles()
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
	return &proc.Cmd{Path: path, Args: argv, Env: l.Env, ExtraFiles: files}, nil
}
