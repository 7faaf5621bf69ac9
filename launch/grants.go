package launch

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/envsieve/envsieve/audit"
	"github.com/envsieve/envsieve/internal/nest"
	"github.com/envsieve/envsieve/internal/trust"
	"github.com/envsieve/envsieve/pin"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/shim"
	"github.com/envsieve/envsieve/sieve"
)

// ShimRun is the shim's side of one launch: its socket, the exec-time
// grants it answers, and what the child's processes reported through it.
// A nil *ShimRun (no shim) is valid for all its methods.
type ShimRun struct {
	srv  *shim.Server
	l    *Plan
	alog *audit.Log
	// base is the launch's environment by key (before the shim's own
	// variables), hidden the keys the shim hides in the first program.
	base   map[string]string
	hidden map[string]bool
	// grants asks the shim for exec-time grants: the policy has rules.
	grants bool
	// noScope says why the tree runs in no Landlock domain and no pid
	// namespace, so that the programs started with grants would be in its
	// reach: grants are then declined.
	noScope error

	mu       sync.Mutex
	reads    map[string]bool // keys read by getenv or secure_getenv
	logged   map[string]bool // "op key" pairs already in the audit log
	granted  map[string]bool // every key ever granted at an exec
	statics  map[string]bool // static programs already noted
	refused  int
	decision map[string]*sieve.Decision
	// built caches grantEnv's results (see grantEnvCached).
	built map[builtKey]builtEnv
}

// builtKey names one grantEnv build: the rule, and a SHA-256 of everything
// else it depends on that changes from one start to the next.
type builtKey struct {
	rule *policy.Rule
	sum  [sha256.Size]byte
}

type builtEnv struct{ env, keys []string }

// maxBuilt bounds the cache of built environments; when it is full it is
// emptied.
const maxBuilt = 64

// maxLogged bounds the access events of one launch.
const maxLogged = 10000

// ErrShimNeeded is wrapped when the policy needs the shim and it cannot
// load. Use errors.Is.
var ErrShimNeeded = errors.New("the shim is needed")

// StartShim decides whether the shim is used for the program at path and,
// when it is, starts its socket and adds its variables to the plan's Env
// (the engine's result is not changed). It returns nil when the shim is off: --no-shim or not built
// (an error instead when the policy hides keys). A statically linked program
// cannot load it: the launcher says which settings therefore do not hold in
// it, and still serves the dynamic programs it starts.
func (l *Plan) StartShim(path string, alog *audit.Log) (*ShimRun, error) {
	res := l.Result
	h := l.host
	needHide := res.BlockIteration && len(res.Hide) > 0
	if needHide {
		if err := shim.CheckHide(res.Hide); err != nil {
			return nil, fmt.Errorf("block_iteration: %w", err)
		}
	}
	grants := len(l.opt.Policy.Rules) > 0
	if l.opt.NoShim {
		if needHide {
			return nil, fmt.Errorf("block_iteration: %w to hide %s, and --no-shim turns it off", ErrShimNeeded, strings.Join(res.Hide, ", "))
		}
		return nil, nil
	}
	lib, static, err := h.FindShim(path)
	if errors.Is(err, shim.ErrNotFound) {
		if needHide {
			return nil, fmt.Errorf("block_iteration: %w to hide %s: %w", ErrShimNeeded, strings.Join(res.Hide, ", "), err)
		}
		if grants {
			h.warnMissing(alog, err, "the rules grant nothing at exec (a program they name, started in the tree, runs without its grant)")
		} else {
			h.debugf("shim: %v", err)
		}
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if _, err := shim.LocateInit(lib); err != nil && l.opt.Isolate && (grants || needHide) {
		h.warnMissing(alog, err, "envsieve makes the namespaces itself, a slower start")
	}
	if static {
		// The program cannot load the shim, but the dynamic programs it
		// starts can: the launcher still serves them.
		var lost []string
		if needHide {
			lost = append(lost, "hiding in it ("+path+" can list "+strings.Join(res.Hide, ", ")+")")
		}
		if grants {
			lost = append(lost, "grants at the execs it makes")
		}
		lost = append(lost, "reports of what it reads")
		msg := fmt.Sprintf("%s is statically linked, so the shim cannot load into it: %s do not hold; the dynamic programs it starts load the shim", path, strings.Join(lost, ", "))
		// Said on stderr only when a setting of the policy is lost; a
		// static program that loses only the reports is common (Go tools).
		if needHide || grants {
			h.warnf("%s", msg)
		} else {
			h.debugf("%s", msg)
		}
		alog.Warn(msg)
	}
	s := &ShimRun{l: l, alog: alog, grants: grants, base: map[string]string{}, hidden: map[string]bool{},
		reads: map[string]bool{}, logged: map[string]bool{}, granted: map[string]bool{}, statics: map[string]bool{},
		decision: map[string]*sieve.Decision{}}
	for _, kv := range l.Env {
		k, v, _ := strings.Cut(kv, "=")
		s.base[k] = v
	}
	if res.BlockIteration {
		for _, k := range res.Hide {
			s.hidden[k] = true
		}
	}
	for i := range res.Decisions {
		d := &res.Decisions[i]
		if d.Key != "" && s.decision[d.Key] == nil {
			s.decision[d.Key] = d
		}
	}
	if s.srv, err = shim.Listen(h.socketDir(), s); err != nil {
		return nil, err
	}
	env := make([]string, 0, len(l.Env)+4)
	for _, kv := range l.Env {
		if !strings.HasPrefix(kv, shim.EnvPreload+"=") && !strings.HasPrefix(kv, "ENVSIEVE_SHIM_") {
			env = append(env, kv)
		}
	}
	env = append(env, shim.EnvPreload+"="+shim.Preload(lib, l.Env), shim.EnvSock+"="+s.srv.Path)
	if needHide {
		env = append(env, shim.EnvHide+"="+strings.Join(res.Hide, ","))
	}
	if res.Rule != nil {
		// The launch's first program is granted like any the shim hands
		// over: what the rule gave it, its children lose.
		keys, err := l.ruleKeys()
		gv := ""
		if err == nil {
			gv, err = shim.GrantedVar(keys)
		}
		if err != nil {
			s.srv.Close()
			return nil, fmt.Errorf("rule %s: %w", res.Rule.Name, err)
		}
		if gv != "" {
			env = append(env, gv)
		}
	}
	if grants {
		env = append(env, shim.EnvExec+"=1")
		if start, err := shim.LocateStart(lib); err == nil {
			env = append(env, shim.EnvStart+"="+start)
		} else {
			h.warnMissing(alog, err, "the rules grant nothing at exec (the programs they name run without their grants)")
		}
		if globs, ok := ruleGlobs(l.opt.Policy); ok {
			env = append(env, shim.EnvRules+"="+globs)
		}
		if denies := ruleDenies(l.opt.Policy); denies != "" {
			env = append(env, shim.EnvDeny+"="+denies)
		}
	}
	l.Env = env
	alog.Shim(lib, res.Hide, grants)
	h.debugf("shim: %s, hiding %v, exec grants %v, socket %s", lib, res.Hide, grants, s.srv.Path)
	return s, nil
}

// ruleKeys are the keys the launch's rule gives its first program: those
// whose value differs from what the launch would give without the rule.
func (l *Plan) ruleKeys() ([]string, error) {
	req := l.Request
	req.Commands, req.Path = nil, ""
	res, err := l.build(sieve.Input{Parent: l.opt.Parent, Policy: l.opt.Policy, Request: req,
		SecretValues: l.secretEnv, SecretFiles: l.secretFiles})
	if err != nil {
		return nil, err
	}
	without := map[string]string{}
	for _, kv := range l.brokerOverlay(res.Env) {
		k, v, _ := strings.Cut(kv, "=")
		without[k] = v
	}
	var keys []string
	for _, kv := range l.Env {
		k, v, _ := strings.Cut(kv, "=")
		if w, ok := without[k]; (!ok || w != v) && k != "PATH" && k != shim.EnvPreload && !strings.HasPrefix(k, "ENVSIEVE_SHIM_") {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

// FindShim locates the shim (the host's Shim, next to its Exe, or in
// ../lib/envsieve/) and says whether the program at path is statically
// linked, so cannot load it. The error wraps shim.ErrNotFound when there is
// no shim.
func (h *Host) FindShim(path string) (lib string, static bool, err error) {
	if lib, err = shim.Locate(h.Shim, h.Exe); err != nil {
		return "", false, err
	}
	static, err = shim.Static(path)
	return lib, static, err
}

// ruleGlobs returns the rules' command globs, one per line, for the shim to
// ask only about programs a rule may match; false when a rule matches on a
// path, which the shim leaves to the launcher.
func ruleGlobs(p *policy.Policy) (string, bool) {
	var globs []string
	for _, r := range p.Rules {
		if r.ByPath || r.Command == nil {
			return "", false
		}
		globs = append(globs, r.Command.String())
	}
	return strings.Join(globs, "\n"), true
}

// ruleDenies returns the deny globs of every rule, one per line: without an
// answer from the launcher, the shim removes what they match from a program
// a rule may match (fail closed).
func ruleDenies(p *policy.Policy) string {
	var globs []string
	for _, r := range p.Rules {
		for _, e := range r.Level.Deny {
			if !slices.Contains(globs, e.Glob.String()) {
				globs = append(globs, e.Glob.String())
			}
		}
	}
	return strings.Join(globs, "\n")
}

// Close stops the socket once what the child's processes sent is read.
func (s *ShimRun) Close() {
	if s == nil {
		return
	}
	if err := s.srv.Close(); err != nil {
		s.alog.Warn("shim socket: " + err.Error())
	}
}

// verdict says what the policy did with a key a process accessed. The
// caller holds s.mu.
func (s *ShimRun) verdict(key string) string {
	if s.granted[key] {
		return "given"
	}
	if d := s.decision[key]; d != nil && !d.Kept {
		return "withheld"
	} else if d != nil && d.WouldDrop {
		return "would-drop"
	}
	if _, ok := s.base[key]; ok {
		return "given"
	}
	return "unset"
}

// Access implements shim.Handler.
func (s *ShimRun) Access(a *shim.Access) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if shim.Reads(a.Op) {
		s.reads[a.Name] = true
	}
	k := string(a.Op) + " " + a.Name
	if s.logged[k] || len(s.logged) >= maxLogged {
		return
	}
	s.logged[k] = true
	s.alog.Access(a.PID, shim.OpName(a.Op), a.Name, s.verdict(a.Name))
}

// Notice implements shim.Handler. A static program is noted once per path.
func (s *ShimRun) Notice(n *shim.Notice) {
	reason := n.Reason
	if reason == "static-program" {
		s.mu.Lock()
		seen := s.statics[n.Path]
		s.statics[n.Path] = true
		s.mu.Unlock()
		if seen {
			return
		}
		reason += ": the shim cannot load into it, so the programs it starts get no grants"
	}
	s.alog.NoGrant(n.PID, n.Path, reason)
}

// Refused implements shim.Handler.
func (s *ShimRun) Refused(reason string) {
	s.mu.Lock()
	s.refused++
	first := s.refused == 1
	s.mu.Unlock()
	if first {
		s.alog.Warn("shim socket: refused: " + reason)
	}
}

// Grants reports whether the shim asks for exec-time grants.
func (s *ShimRun) Grants() bool { return s != nil && s.grants }

// NoScope records that the tree cannot be kept from reading and tracing
// what the launcher starts for it (no Landlock, no --isolate): from then on
// every start request is declined, failing closed, and the user is told.
func (s *ShimRun) NoScope(err error) {
	msg := fmt.Sprintf("exec-time grants are off: %v, and without it or --isolate the agent's tree could read the environment of the programs the rules grant to", err)
	s.l.host.warnf("%s", msg)
	s.alog.Warn(msg)
	s.mu.Lock()
	s.noScope = err
	s.mu.Unlock()
}

// Start implements shim.Handler: a start request from envsieve-start,
// which the shim runs in place of a program a rule may match. The program
// a rule grants real values to is started here, outside the agent's tree,
// with an environment built as a launch builds one; the tree gets back only
// "begun" and the exit status. A program no rule grants to, or one the tree
// could have written, is declined: the caller runs it itself, with what it
// already has.
func (s *ShimRun) Start(r *shim.StartRequest) (shim.Process, string) {
	if !s.grants {
		return nil, "the policy has no rules"
	}
	s.mu.Lock()
	noScope := s.noScope
	s.mu.Unlock()
	if noScope != nil {
		s.alog.NoGrant(r.PID, r.Path, "grants are off: "+noScope.Error())
		return nil, "grants are off"
	}
	l := s.l
	t0 := time.Now()
	pol := l.opt.Policy
	path := r.Path
	if !filepath.IsAbs(path) {
		dir, err := dirOf(r.Dir)
		if err != nil {
			return nil, "the caller's working directory: " + err.Error()
		}
		path = filepath.Join(dir, path)
	}
	// The program a rule grants to: named as an administrator named it,
	// and one the agent's tree cannot have written (a copy or a link named
	// gh gets nothing), nor its #! interpreter.
	// It is resolved once: the file checked is the file started.
	name, real, writable, err := trust.ProgramFile(path, os.Geteuid())
	if err != nil {
		return nil, "the program cannot be resolved"
	}
	req := l.Request
	req.Commands, req.Path, req.Untrusted = [][]string{r.Argv}, name, writable != nil
	// A rule that pins the program's bytes is checked against a sealed
	// copy, and the copy is what starts.
	var prog *pin.Program
	var pinErr error
	if pins(pol, name) {
		if prog, pinErr = pin.Open(real); pinErr == nil {
			defer prog.Close()
			req.Digest = prog.SHA256
		}
	}
	rule := sieve.ChooseRule(pol, req)
	if rule == nil {
		if pinErr != nil {
			s.alog.NoGrant(r.PID, r.Path, pinErr.Error())
			return nil, "the program a rule pins cannot be read"
		}
		if prog != nil {
			if why := pinMismatch(pol, name, prog.SHA256); why != "" {
				s.alog.NoGrant(r.PID, r.Path, why)
				return nil, "the program is not the one a rule pins"
			}
		}
		if writable != nil && sieve.ChooseRule(pol, sieve.Request{Commands: req.Commands}) != nil {
			s.alog.NoGrant(r.PID, r.Path, "the program is in a place the agent's tree can write: "+writable.Error())
			return nil, "the program is in a place the agent's tree can write"
		}
		return nil, "no rule grants to the program"
	}
	if rule.SHA256 == "" {
		prog = nil // closed by the defer; the file itself starts
	}
	env, keys, err := s.grantEnvCached(r, req, rule)
	if err != nil {
		s.alog.NoGrant(r.PID, r.Path, "rule "+rule.Name+": "+err.Error())
		return nil, "rule " + rule.Name + ": the environment cannot be built"
	}
	script := real
	if prog != nil {
		script = prog.Path() // its #! line is the copy's
	}
	if err := checkInterpreter(script, envValue(env, "PATH"), os.Geteuid()); err != nil {
		s.alog.NoGrant(r.PID, r.Path, "rule "+rule.Name+": "+err.Error())
		return nil, "the program's interpreter is in a place the agent's tree can write"
	}
	t1 := time.Now()
	p, err := startGranted(real, r.Argv, env, r, prog)
	l.host.debugf("grant: %s: decided in %v, started in %v", r.Path, t1.Sub(t0), time.Since(t1))
	if err != nil {
		s.alog.NoGrant(r.PID, r.Path, "rule "+rule.Name+": start: "+err.Error())
		return nil, "the launcher could not start the program"
	}
	argv0 := ""
	if len(r.Argv) > 0 {
		argv0 = r.Argv[0]
	}
	s.mu.Lock()
	for _, k := range keys {
		s.granted[k] = true
	}
	s.mu.Unlock()
	s.alog.Grant(r.PID, r.Path, argv0, rule.Name, keys, nil)
	return p, ""
}

// grantEnvCached is grantEnv, remembered: a shell runs the same program
// with the same environment many times, and the engine is pure (the
// launch's parent, policy, secrets, decisions and shim variables do not
// change during the launch). The key covers the rule and, by SHA-256, the
// request's varying fields and the caller's whole environment, each
// length-prefixed, so two different starts never share an entry. A host
// Builder is not assumed pure: its builds are not cached.
func (s *ShimRun) grantEnvCached(r *shim.StartRequest, req sieve.Request, rule *policy.Rule) (env, keys []string, err error) {
	if s.l.opt.Builder != nil {
		return s.grantEnv(r, req, rule)
	}
	h := sha256.New()
	var n [8]byte
	field := func(v string) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(v)))
		h.Write(n[:])
		h.Write([]byte(v))
	}
	field(req.Path)
	field(req.Digest)
	field(strconv.FormatBool(req.Untrusted))
	field(strconv.Itoa(len(req.Commands)))
	for _, c := range req.Commands {
		field(strconv.Itoa(len(c)))
		for _, a := range c {
			field(a)
		}
	}
	field(strconv.Itoa(len(r.Env)))
	for _, kv := range r.Env {
		field(kv)
	}
	k := builtKey{rule: rule}
	h.Sum(k.sum[:0])
	s.mu.Lock()
	b, ok := s.built[k]
	s.mu.Unlock()
	if ok {
		return b.env, b.keys, nil
	}
	if env, keys, err = s.grantEnv(r, req, rule); err != nil {
		return nil, nil, err
	}
	env, keys = slices.Clip(env), slices.Clip(keys)
	s.mu.Lock()
	if s.built == nil || len(s.built) >= maxBuilt {
		s.built = map[builtKey]builtEnv{}
	}
	s.built[k] = builtEnv{env, keys}
	s.mu.Unlock()
	return env, keys, nil
}

// grantEnv builds the environment of a program rule grants to, as a launch
// builds one: the caller's environment is the parent, except that what the
// launch withheld from the tree or hid in it comes from the launch's own
// parent (the caller cannot have it), and PATH is the launch's (a caller's
// PATH would choose what a granted program runs). The engine then applies
// the base, the rule, the guard and the code-injection floor; brokered
// secrets become their fakes; PYTHONPATH, NODE_PATH, PERL5LIB and RUBYLIB
// count as code injection (dropped unless the rule names them); and the
// shim's variables are added, with the granted keys named so that the
// program's children lose them. keys are the granted keys: those whose
// value the caller does not have.
func (s *ShimRun) grantEnv(r *shim.StartRequest, req sieve.Request, rule *policy.Rule) (env, keys []string, err error) {
	l := s.l
	parent := make([]string, 0, len(r.Env)+8)
	from := map[string]bool{}
	for _, kv := range l.opt.Parent {
		k, _, _ := strings.Cut(kv, "=")
		if d := s.decision[k]; (d != nil && !d.Kept) || s.hidden[k] {
			parent = append(parent, kv)
			from[k] = true
		}
	}
	caller := make(map[string]string, len(r.Env))
	for _, kv := range r.Env {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := caller[k]; !dup {
			caller[k] = v
		}
		if !from[k] && k != "PATH" && k != shim.EnvPreload && !strings.HasPrefix(k, "ENVSIEVE_") {
			parent = append(parent, kv)
		}
	}
	if p, ok := s.base["PATH"]; ok {
		parent = append(parent, "PATH="+p)
	}
	res, err := l.build(sieve.Input{Parent: parent, Policy: l.opt.Policy, Request: req,
		SecretValues: l.secretEnv, SecretFiles: l.secretFiles})
	if err != nil {
		return nil, nil, err
	}
	built := l.brokerOverlay(res.Env)
	env = make([]string, 0, len(built)+8)
	for _, kv := range built {
		k, v, _ := strings.Cut(kv, "=")
		exact := false
		if a, ok := rule.Tables.Admit(k); ok && a.Exact {
			exact = true
		}
		// A key hidden from the first program's children is granted again
		// only when the rule itself names it.
		if s.hidden[k] && !exact {
			continue
		}
		if grantInjection[k] && !exact {
			continue
		}
		if k == shim.EnvPreload || strings.HasPrefix(k, "ENVSIEVE_SHIM_") {
			continue
		}
		env = append(env, kv)
		// Granted: a value the caller does not have (not the tree's
		// marker, which a caller may have removed: the program's children
		// keep it).
		if cv, has := caller[k]; !has || cv != v {
			if k != "PATH" && k != nest.Var {
				keys = append(keys, k)
			}
		}
	}
	for _, kv := range l.Env {
		k, _, _ := strings.Cut(kv, "=")
		if (k == shim.EnvPreload || strings.HasPrefix(k, "ENVSIEVE_SHIM_")) && k != shim.EnvHide && k != shim.EnvGranted {
			env = append(env, kv)
		}
	}
	gv, err := shim.GrantedVar(keys)
	if err != nil {
		return nil, nil, err
	}
	if gv != "" {
		env = append(env, gv)
	}
	return env, keys, nil
}

// grantInjection are variables that make an interpreter load code from a
// place the caller chose: for a program that holds a real value they are
// code injection.
var grantInjection = map[string]bool{"PYTHONPATH": true, "NODE_PATH": true, "PERL5LIB": true, "PERLLIB": true, "RUBYLIB": true}

func envValue(env []string, key string) string {
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v
		}
	}
	return ""
}

// checkInterpreter follows the #! lines of the script at path (up to four,
// as the kernel does) and checks that each interpreter, and the program
// `#!/usr/bin/env NAME` finds in pathEnv, is a file uid cannot have
// written.
func checkInterpreter(path, pathEnv string, uid int) error {
	for depth := 0; depth < 4; depth++ {
		interp, arg, ok := shebang(path)
		if !ok {
			return nil
		}
		real, err := filepath.EvalSymlinks(interp)
		if err != nil {
			return fmt.Errorf("the #! interpreter %s: %w", interp, err)
		}
		if err := trust.Check(real, uid); err != nil {
			return fmt.Errorf("the #! interpreter %s: %w", interp, err)
		}
		if filepath.Base(real) == "env" {
			if arg == "" || strings.HasPrefix(arg, "-") {
				return fmt.Errorf("the #! line runs %s %s, whose program cannot be checked", interp, arg)
			}
			// env searches PATH when the script runs: every directory it
			// looks in before the one that has NAME must be out of the
			// tree's reach too, or NAME could be planted there after this
			// check.
			found := ""
			for _, dir := range filepath.SplitList(pathEnv) {
				if !filepath.IsAbs(dir) {
					return fmt.Errorf("the #! interpreter %s is looked up in a relative PATH entry %q", arg, dir)
				}
				rd, err := filepath.EvalSymlinks(dir)
				if err == nil {
					err = trust.Check(rd, uid)
				}
				if err != nil {
					return fmt.Errorf("the #! interpreter %s is looked up in %s: %w", arg, dir, err)
				}
				c := filepath.Join(dir, arg)
				if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
					found = c
					break
				}
			}
			if found == "" {
				return fmt.Errorf("the #! interpreter %s is not in PATH", arg)
			}
			if real, err = filepath.EvalSymlinks(found); err == nil {
				err = trust.Check(real, uid)
			}
			if err != nil {
				return fmt.Errorf("the #! interpreter %s (%s): %w", arg, found, err)
			}
		}
		path = real
	}
	return nil
}

// shebang reads the #! line of the file at path: the interpreter and its
// one argument, as the kernel splits them.
func shebang(path string) (interp, arg string, ok bool) {
	buf, err := head(path, 256)
	if err != nil {
		return "", "", false
	}
	line, _, _ := strings.Cut(string(buf), "\n")
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return "", "", false
	}
	rest = strings.TrimLeft(rest, " \t")
	interp, arg = rest, ""
	if i := strings.IndexAny(rest, " \t"); i >= 0 {
		interp, arg = rest[:i], strings.TrimSpace(rest[i+1:])
	}
	return interp, arg, interp != ""
}

// head reads up to n bytes from the start of the file at path. It reads
// with plain system calls: os.Open would also try to register the file
// with the poller, four more calls on every granted start.
func head(path string, n int) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	buf := make([]byte, n)
	got := 0
	for got < n {
		m, err := syscall.Read(fd, buf[got:])
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, err
		}
		if m == 0 {
			break
		}
		got += m
	}
	return buf[:got], nil
}

// shellOwned are variables shells maintain themselves: a shell reading them
// says nothing about what the command needed.
var shellOwned = map[string]bool{"PWD": true, "OLDPWD": true, "SHLVL": true, "_": true}

// listed joins keys for a message, naming at most six.
func listed(keys []string) string {
	if len(keys) <= 6 {
		return strings.Join(keys, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(keys[:6], ", "), len(keys)-6)
}

// withheldReads returns, sorted, the keys the child's processes read that
// the policy withheld (or, in audit mode, that enforce would withhold).
func (s *ShimRun) withheldReads(verdict string) []string {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for k := range s.reads {
		if !shellOwned[k] && s.verdict(k) == verdict {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// ExplainFailure says, after a failed child, which withheld keys it read:
// a missing variable is the cause agents most often chase in the wrong
// place. In audit mode it warns of what enforce would have withheld.
func (s *ShimRun) ExplainFailure(status int) {
	if s == nil {
		return
	}
	if keys := s.withheldReads("would-drop"); len(keys) > 0 {
		s.l.host.warnf("audit mode: the command read %s, which enforce would withhold; see 'envsieve explain --mode audit'", listed(keys))
	}
	if status == 0 {
		return
	}
	if keys := s.withheldReads("withheld"); len(keys) > 0 {
		fmt.Fprintf(s.l.host.stderr(), "envsieve: the command read %s, which the policy withheld; see 'envsieve explain'\n", listed(keys))
	}
}
