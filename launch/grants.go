package launch

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/envsieve/envsieve/internal/audit"
	"github.com/envsieve/envsieve/internal/compiled"
	"github.com/envsieve/envsieve/internal/nest"
	"github.com/envsieve/envsieve/internal/pin"
	"github.com/envsieve/envsieve/internal/shimwire"
	"github.com/envsieve/envsieve/internal/trust"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/shim"
	"github.com/envsieve/envsieve/sieve"
)

// shimRun is the shim's side of one launch: its socket, the exec-time
// grants it answers, and what the child's processes reported through it.
// A nil *shimRun (no shim) is valid for all its methods.
type shimRun struct {
	srv  *shimwire.Server
	l    *Plan
	alog *audit.Log
	// base is the launch's environment by key (before the shim's own
	// variables), hidden the keys the shim hides in the first program.
	base   map[string]string
	hidden map[string]bool
	// ready is closed when startShim has finished the launch's environment
	// (l.Env, tree): a start request waits for it, which also orders
	// those writes before its reads.
	ready chan struct{}
	// tree is what the launch gives its tree by key without the launch's
	// own rule (treeEnv; base when the first program matched none): a
	// granted program's value that differs from it is a grant.
	tree map[string]string
	// grants asks the shim for exec-time grants: the policy has rules.
	grants bool
	// noScope says why the tree runs in no Landlock domain and no pid
	// namespace, so that the programs started with grants would be in its
	// reach: grants are then declined.
	noScope error
	// sealed: the tree is sealed, so the programs started for rules are
	// too, from the granter's thread (made at the first start; grErr when
	// it cannot be, and every start is then declined).
	sealed bool
	grOnce sync.Once
	gr     *granter
	grErr  error

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

// errShimNeeded is wrapped when the policy needs the shim and it cannot
// load. Use errors.Is.
var errShimNeeded = errors.New("the shim is needed")

// startShim decides whether the shim is used for the program at path and,
// when it is, starts its socket and adds its variables to the plan's Env
// (the engine's result is not changed). It returns nil when the shim is off: --no-shim or not built
// (an error instead when the policy hides keys). A statically linked program
// cannot load it: the launcher says which settings therefore do not hold in
// it, and still serves the dynamic programs it starts.
func (l *Plan) startShim(path string, alog *audit.Log) (*shimRun, error) {
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
			return nil, fmt.Errorf("block_iteration: %w to hide %s, and --no-shim turns it off", errShimNeeded, strings.Join(res.Hide, ", "))
		}
		return nil, nil
	}
	lib, static, err := l.shimLib, l.shimStatic, l.shimErr
	if !l.shimFound {
		lib, static, err = h.FindShim(path)
	}
	if errors.Is(err, shim.ErrNotFound) {
		if needHide {
			return nil, fmt.Errorf("block_iteration: %w to hide %s: %w", errShimNeeded, strings.Join(res.Hide, ", "), err)
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
	if _, err := shim.LocateInit(lib); err != nil && l.isolated && (grants || needHide) {
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
	s := &shimRun{l: l, alog: alog, grants: grants, sealed: l.sealed, base: map[string]string{}, hidden: map[string]bool{},
		reads: map[string]bool{}, logged: map[string]bool{}, granted: map[string]bool{}, statics: map[string]bool{},
		decision: map[string]*sieve.Decision{}}
	for _, kv := range l.Env {
		k, v, _ := strings.Cut(kv, "=")
		s.base[k] = v
	}
	s.tree = s.base
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
	s.ready = make(chan struct{})
	if s.srv, err = shimwire.Listen(h.socketDir(), s); err != nil {
		return nil, err
	}
	defer close(s.ready)
	env := make([]string, 0, len(l.Env)+4)
	for _, kv := range l.Env {
		if !strings.HasPrefix(kv, shimwire.EnvPreload+"=") && !strings.HasPrefix(kv, "ENVSIEVE_SHIM_") {
			env = append(env, kv)
		}
	}
	env = append(env, shimwire.EnvPreload+"="+shim.Preload(lib, l.Env), shimwire.EnvSock+"="+s.srv.Path)
	if needHide {
		env = append(env, shimwire.EnvHide+"="+strings.Join(res.Hide, ","))
	}
	if res.Rule != nil {
		// The launch's first program is granted like any the shim hands
		// over: what the rule gave it, its children lose. What the tree is
		// given is then the launch without its rule.
		without, err := l.treeEnv()
		gv := ""
		if err == nil {
			s.tree = without
			gv, err = shim.GrantedVar(l.ruleKeys(without))
		}
		if err != nil {
			s.srv.Close()
			return nil, fmt.Errorf("rule %s: %w", res.Rule.Name, err)
		}
		if gv != "" {
			env = append(env, gv)
			if l.interp != "" {
				env = append(env, shimwire.EnvInterp+"="+l.interp)
			}
		}
	}
	if grants {
		env = append(env, shimwire.EnvExec+"=1")
		if start, err := shim.LocateStart(lib); err == nil {
			env = append(env, shimwire.EnvStart+"="+start)
		} else {
			h.warnMissing(alog, err, "the rules grant nothing at exec (the programs they name run without their grants)")
		}
		drops, dv := ruleDrops(l.opt.Policy)
		if globs, ok := ruleGlobs(l.opt.Policy, drops); ok {
			env = append(env, shimwire.EnvRules+"="+globs)
			if dv != "" {
				env = append(env, shimwire.EnvDrop+"="+dv)
			}
		}
		if denies := ruleDenies(l.opt.Policy); denies != "" {
			env = append(env, shimwire.EnvDeny+"="+denies)
		}
	}
	l.Env = env
	alog.Shim(lib, res.Hide, grants)
	h.debugf("shim: %s, hiding %v, exec grants %v, socket %s", lib, res.Hide, grants, s.srv.Path)
	return s, nil
}

// treeEnv is the environment the launch gives its tree without its own
// rule (by key): what the user's shell gave envsieve, through the policy
// for no command. A value a program started for a rule holds that differs
// from it is a grant, whatever the first program was given.
func (l *Plan) treeEnv() (map[string]string, error) {
	req := l.Request
	req.Commands, req.Path = nil, ""
	res, err := l.build(sieve.Input{Parent: l.opt.Parent, Policy: l.opt.Policy, Request: req,
		SecretValues: l.secretEnv, SecretFiles: l.secretFiles})
	if err != nil {
		return nil, err
	}
	without := map[string]string{}
	for _, kv := range l.sshOverlay(l.brokerOverlay(res.Env)) {
		k, v, _ := strings.Cut(kv, "=")
		without[k] = v
	}
	return without, nil
}

// ruleKeys are the keys the launch's rule gives its first program: those
// whose value differs from what the launch would give without the rule
// (without, from treeEnv).
func (l *Plan) ruleKeys(without map[string]string) []string {
	var keys []string
	for _, kv := range l.Env {
		k, v, _ := strings.Cut(kv, "=")
		if w, ok := without[k]; (!ok || w != v) && k != "PATH" && k != shimwire.EnvPreload && !strings.HasPrefix(k, "ENVSIEVE_SHIM_") {
			keys = append(keys, k)
		}
	}
	return keys
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

// ruleGlobs returns the command globs of the rules the launcher decides,
// one per line, for the shim to ask only about programs such a rule may
// match; false when a rule matches on a path, which the shim leaves to the
// launcher. The rules of drops (deny-only, applied in place) are left out.
func ruleGlobs(p *policy.Policy, drops map[*policy.Rule]bool) (string, bool) {
	var globs []string
	for _, r := range p.Rules {
		if r.ByPath || r.Command == nil {
			return "", false
		}
		if !drops[r] {
			globs = append(globs, r.Command.String())
		}
	}
	return strings.Join(globs, "\n"), true
}

// maxDrop bounds ENVSIEVE_SHIM_DROP's value (the shim's buffer is 4096).
const maxDrop = 4000

// denyOnly reports whether a rule only removes keys: it matches a program
// by its name alone (no arguments, path or pin) and its level denies keys
// and says nothing else. Such a rule is applied by the calling process's
// shim in place, with no launcher hop: it grants nothing, so there is
// nothing to start elsewhere.
func denyOnly(r *policy.Rule) bool {
	v := r.Level
	if r.Command == nil || r.ByPath || r.SHA256 != "" || len(r.Args) > 0 || r.ArgsExact || len(r.Pass) > 0 || v == nil {
		return false
	}
	if len(v.Deny) == 0 || strings.ContainsAny(r.Command.String(), "\t\n") {
		return false
	}
	for _, e := range v.Deny {
		if strings.ContainsAny(e.Glob.String(), "\t\n") {
			return false
		}
	}
	return v.Base == nil && v.BaseSource == nil && v.Mode == nil && len(v.Groups) == 0 && len(v.Allow) == 0 &&
		len(v.Set) == 0 && v.MaxKeys == nil && v.MaxBytes == nil && v.MaxValueBytes == nil && v.BlockIteration == nil &&
		v.Seal == nil && len(v.SealMask) == 0 && len(v.Hide) == 0 && len(v.Brokered) == 0
}

// ruleDrops returns the deny-only rules the shim applies in place, and
// ENVSIEVE_SHIM_DROP's value for them ("command TAB deny TAB ..." per
// line, in the policy's order). The shim applies one only to a program no
// other rule's command glob matches, so the first matching rule still
// wins: where another rule may match, the launcher decides, arguments and
// all. None is applied in place when the list would not fit the shim's
// buffer.
func ruleDrops(p *policy.Policy) (map[*policy.Rule]bool, string) {
	drops := map[*policy.Rule]bool{}
	var lines []string
	for _, r := range p.Rules {
		if !denyOnly(r) {
			continue
		}
		line := r.Command.String()
		for _, e := range r.Level.Deny {
			line += "\t" + e.Glob.String()
		}
		drops[r] = true
		lines = append(lines, line)
	}
	v := strings.Join(lines, "\n")
	if len(v) > maxDrop {
		return nil, ""
	}
	return drops, v
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
func (s *shimRun) Close() {
	if s == nil {
		return
	}
	if err := s.srv.Close(); err != nil {
		s.alog.Warn("shim socket: " + err.Error())
	}
}

// verdict says what the policy did with a key a process accessed. The
// caller holds s.mu.
func (s *shimRun) verdict(key string) string {
	if s.granted[key] {
		return "given"
	}
	if d := s.decision[key]; d != nil && !d.Kept {
		return "dropped"
	} else if d != nil && d.WouldDrop {
		return "would-drop"
	}
	if _, ok := s.base[key]; ok {
		return "given"
	}
	return "unset"
}

// Access implements shimwire.Handler.
func (s *shimRun) Access(a *shimwire.Access) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if shimwire.Reads(a.Op) {
		s.reads[a.Name] = true
	}
	k := string(a.Op) + " " + a.Name
	if s.logged[k] || len(s.logged) >= maxLogged {
		return
	}
	s.logged[k] = true
	s.alog.Access(a.PID, shimwire.OpName(a.Op), a.Name, s.verdict(a.Name))
}

// Notice implements shimwire.Handler. A static program is noted once per path.
func (s *shimRun) Notice(n *shimwire.Notice) {
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

// Refused implements shimwire.Handler.
func (s *shimRun) Refused(reason string) {
	s.mu.Lock()
	s.refused++
	first := s.refused == 1
	s.mu.Unlock()
	if first {
		s.alog.Warn("shim socket: refused: " + reason)
	}
}

// Grants reports whether the shim asks for exec-time grants.
func (s *shimRun) Grants() bool { return s != nil && s.grants }

// NoScope records that the tree cannot be kept from reading and tracing
// what the launcher starts for it (no Landlock, no --isolate): from then on
// every start request is declined, failing closed, and the user is told.
func (s *shimRun) NoScope(err error) {
	msg := fmt.Sprintf("exec-time grants are off: %v, and without it or --isolate the agent's tree could read the environment of the programs the rules grant to", err)
	s.l.host.warnf("%s", msg)
	s.alog.Warn(msg)
	s.mu.Lock()
	s.noScope = err
	s.mu.Unlock()
}

// Start implements shimwire.Handler: a start request from envsieve-start,
// which the shim runs in place of a program a rule may match. The program
// a rule grants real values to is started here, outside the agent's tree,
// with an environment built as a launch builds one; the tree gets back only
// "begun" and the exit status. A program no rule grants to, or one the tree
// could have written, is declined: the caller runs it itself, with what it
// already has.
func (s *shimRun) Start(r *shimwire.StartRequest) (shimwire.Process, string) {
	if !s.grants {
		return nil, "the policy has no rules"
	}
	if s.ready != nil { // nil only in a shimRun not made by startShim
		<-s.ready
	}
	// No grant the audit log could not record (audit: {on_error: fail}).
	if err := s.l.auditFailed(s.alog); err != nil {
		return nil, "the audit log cannot be written"
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
	interp, err := checkInterpreter(script, envValue(env, "PATH"), os.Geteuid())
	if err != nil {
		s.alog.NoGrant(r.PID, r.Path, "rule "+rule.Name+": "+err.Error())
		return nil, "the program's interpreter is in a place the agent's tree can write"
	}
	if interp != "" {
		env = append(slices.Clip(env), shimwire.EnvInterp+"="+interp)
	}
	t1 := time.Now()
	var g *granter
	if s.sealed {
		var gerr error
		if g, gerr = s.granter(); gerr != nil {
			s.alog.NoGrant(r.PID, r.Path, "rule "+rule.Name+": "+gerr.Error())
			return nil, "the seal cannot be made for the program"
		}
	}
	// Decided: only now does the caller send its descriptors 0-2, so a
	// launcher stopped before this point holds none of them, and a request
	// its caller gave up on (it ran the program itself at the bound) ends
	// here, not started.
	if err := r.AskStdio(); err != nil {
		s.alog.NoGrant(r.PID, r.Path, "rule "+rule.Name+": "+err.Error())
		return nil, "the caller gave up waiting"
	}
	var p shimwire.Process
	if g != nil {
		g.do(func() { p, err = startGranted(real, r.Argv, env, r, prog) })
	} else {
		p, err = startGranted(real, r.Argv, env, r, prog)
	}
	if err == nil {
		seenBy(p, r.Peer)
	}
	l.host.debugf("grant: %s: decided in %v, started in %v", r.Path, t1.Sub(t0), time.Since(t1))
	if errors.Is(err, errCallerGone) {
		s.alog.NoGrant(r.PID, r.Path, "rule "+rule.Name+": "+err.Error())
		return nil, "the caller gave up waiting"
	}
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

// granter returns the sealed thread that starts the programs of a sealed
// launch's grants, made at the first call; an error (said once) when the
// seal cannot be made there: every start is then declined.
func (s *shimRun) granter() (*granter, error) {
	s.grOnce.Do(func() {
		spec, err := s.l.sealSpec()
		if err == nil {
			s.gr, err = newGranter(spec)
		}
		if err != nil {
			s.grErr = err
			msg := fmt.Sprintf("exec-time grants are off: %v; a program started for a rule must be in the same seal as the tree", err)
			s.l.host.warnf("%s", msg)
			s.alog.Warn(msg)
		}
	})
	return s.gr, s.grErr
}

// grantEnvCached is grantEnv, remembered: a shell runs the same program
// with the same environment many times, and the engine is pure (the
// launch's parent, policy, secrets, decisions and shim variables do not
// change during the launch). The key covers the rule and, by SHA-256,
// the request's varying fields and what grantEnv takes from the caller
// (callerKeys and the working directory), each length-prefixed, so two
// different starts never share an entry. A host Builder is not assumed
// pure: its builds are not cached.
func (s *shimRun) grantEnvCached(r *shimwire.StartRequest, req sieve.Request, rule *policy.Rule) (env, keys []string, err error) {
	if s.l.opt.Builder != nil {
		return s.grantEnv(r, req, rule)
	}
	own, pwd := callerKeys(r, rule)
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
	field(pwd)
	field(strconv.Itoa(len(own)))
	for _, kv := range own {
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

// terminalKeys are the caller's keys a granted program always gets: they
// describe the caller's terminal, not where a credential goes.
var terminalKeys = map[string]bool{"TERM": true, "COLUMNS": true, "LINES": true}

// passes reports whether the rule lets the caller set key for the program
// it grants to: a terminal key, or one of the rule's pass: globs that does
// not steer (compiled.Steers).
func passes(rule *policy.Rule, key string) bool {
	if terminalKeys[key] {
		return true
	}
	if compiled.Steers(key) {
		return false
	}
	for _, g := range rule.Pass {
		if g.Match(key) {
			return true
		}
	}
	return false
}

// callerKeys returns, sorted, what a granted program takes from the
// caller's environment ("KEY=VALUE", the first value of each key the rule
// passes) and the caller's working directory ("" when unknown), the PWD
// the program gets.
func callerKeys(r *shimwire.StartRequest, rule *policy.Rule) (own []string, pwd string) {
	seen := map[string]bool{}
	for _, kv := range r.Env {
		k, _, _ := strings.Cut(kv, "=")
		if !seen[k] && passes(rule, k) {
			own = append(own, kv)
		}
		seen[k] = true
	}
	sort.Strings(own)
	if r.Dir != nil {
		pwd, _ = dirOf(r.Dir)
	}
	return own, pwd
}

// grantEnv builds the environment of a program a rule grants to from the
// launch, never from the caller (docs/design.md, "Exec-time grants"): the
// parent is the launch's own (what the user's shell gave envsieve), the
// engine applies the base, the profile, the rule, the guard and the
// code-injection floor, and brokered secrets become their fakes. From the
// caller come only the terminal keys (TERM, COLUMNS, LINES), the keys the
// rule passes (pass:, never one that steers: compiled.Steers; a passed key
// the caller does not have is removed) and PWD, its working directory. So
// the tree cannot point a granted program at a config, proxy, CA or
// loader of its own. PYTHONPATH, NODE_PATH, PERL5LIB and RUBYLIB count as
// code injection (dropped unless the rule names them), and the shim's
// variables are added, with the granted keys named so that the program's
// children lose them. keys are the granted keys: those whose value the
// tree was not given (s.tree).
func (s *shimRun) grantEnv(r *shimwire.StartRequest, req sieve.Request, rule *policy.Rule) (env, keys []string, err error) {
	l := s.l
	res, err := l.build(sieve.Input{Parent: l.opt.Parent, Policy: l.opt.Policy, Request: req,
		SecretValues: l.secretEnv, SecretFiles: l.secretFiles})
	if err != nil {
		return nil, nil, err
	}
	ownList, pwd := callerKeys(r, rule)
	own := make(map[string]string, len(ownList)+1)
	for _, kv := range ownList {
		k, v, _ := strings.Cut(kv, "=")
		own[k] = v
	}
	if pwd != "" {
		own["PWD"] = pwd
	}
	built := l.sshOverlay(l.brokerOverlay(res.Env))
	env = make([]string, 0, len(built)+len(own)+8)
	for _, kv := range built {
		k, v, _ := strings.Cut(kv, "=")
		if o, ok := own[k]; ok {
			env = append(env, k+"="+o)
			delete(own, k)
			continue
		}
		exact := false
		if a, ok := rule.Tables.Admit(k); ok && a.Exact {
			exact = true
		}
		if passes(rule, k) && !terminalKeys[k] && !exact {
			continue // passed, and the caller has none
		}
		// A key hidden from the first program's children is granted again
		// only when the rule itself names it.
		if s.hidden[k] && !exact {
			continue
		}
		if grantInjection[k] && !exact {
			continue
		}
		if k == shimwire.EnvPreload || strings.HasPrefix(k, "ENVSIEVE_SHIM_") {
			continue
		}
		env = append(env, kv)
		// Granted: a value the tree was not given (not the tree's marker:
		// the program's children keep it).
		if tv, has := s.tree[k]; (!has || tv != v) && k != "PATH" && k != nest.Var {
			keys = append(keys, k)
		}
	}
	for _, kv := range ownList {
		if k, v, _ := strings.Cut(kv, "="); own[k] == v {
			env = append(env, kv)
		}
	}
	if pwd != "" && own["PWD"] == pwd {
		env = append(env, "PWD="+pwd)
	}
	for _, kv := range l.Env {
		k, _, _ := strings.Cut(kv, "=")
		if (k == shimwire.EnvPreload || strings.HasPrefix(k, "ENVSIEVE_SHIM_")) && k != shimwire.EnvHide && k != shimwire.EnvGranted {
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
// written. A PATH directory that does not exist is skipped when uid cannot
// create it (its nearest existing ancestor is out of uid's reach), else the
// check fails: the tree could plant NAME there after the check.
//
// interp is, for a chain with a `#!/usr/bin/env NAME` line, the value of
// the shim's ENVSIEVE_SHIM_INTERP for the program started with the grant:
// "NAME:REAL", REAL the real file env finds. The shim loaded in env passes
// the granted keys on to that one exec only (docs/shim.md); without it env
// would withhold them from the interpreter, as from any program the granted
// one starts. "" when no env line is on the way.
func checkInterpreter(path, pathEnv string, uid int) (interp string, err error) {
	for depth := 0; depth < 4; depth++ {
		in, arg, ok := shebang(path)
		if !ok {
			return interp, nil
		}
		real, err := filepath.EvalSymlinks(in)
		if err != nil {
			return "", fmt.Errorf("the #! interpreter %s: %w", in, err)
		}
		if err := trust.Check(real, uid); err != nil {
			return "", fmt.Errorf("the #! interpreter %s: %w", in, err)
		}
		// A link named env to a multi-call program (busybox) is env too.
		if filepath.Base(real) == "env" || filepath.Base(in) == "env" {
			// Only a plain program name: an option (-S, -i, -u), an
			// assignment (env X=1 SCRIPT runs the script itself again) or
			// a path would have env do something else than run NAME on
			// the script.
			if !plainName(arg) {
				return "", fmt.Errorf("the #! line runs %s %q, whose program cannot be checked", in, arg)
			}
			// env searches PATH when the script runs: every directory it
			// looks in before the one that has NAME must be out of the
			// tree's reach too, or NAME could be planted there after this
			// check.
			found := ""
			for _, dir := range filepath.SplitList(pathEnv) {
				if !filepath.IsAbs(dir) {
					return "", fmt.Errorf("the #! interpreter %s is looked up in a relative PATH entry %q", arg, dir)
				}
				rd, err := filepath.EvalSymlinks(dir)
				if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
					// Missing: harmless unless the tree can create it.
					if err := creatable(dir, uid); err != nil {
						return "", fmt.Errorf("the #! interpreter %s is looked up in %s, which does not exist: %w", arg, dir, err)
					}
					continue
				}
				if err == nil {
					err = trust.Check(rd, uid)
				}
				if err != nil {
					return "", fmt.Errorf("the #! interpreter %s is looked up in %s: %w", arg, dir, err)
				}
				c := filepath.Join(dir, arg)
				if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
					found = c
					break
				}
			}
			if found == "" {
				return "", fmt.Errorf("the #! interpreter %s is not in PATH", arg)
			}
			if real, err = filepath.EvalSymlinks(found); err == nil {
				err = trust.Check(real, uid)
			}
			if err != nil {
				return "", fmt.Errorf("the #! interpreter %s (%s): %w", arg, found, err)
			}
			// The shim passes the grant through one env only, to NAME:
			// a NAME that is itself a script (a version manager's shim,
			// a wrapper) would hand it on to nothing but its own
			// interpreter, which withholds it from what it runs.
			if _, _, script := shebang(real); script {
				return "", fmt.Errorf("the #! interpreter %s (%s) is itself a script, which the grant would stop at", arg, found)
			}
			if interp == "" {
				interp = arg + ":" + real
			}
		}
		path = real
	}
	return interp, nil
}

// plainName reports whether s is a program name env runs as it is: not
// empty, not an option, only letters, digits and . _ + - (no =, no
// blank, no /, no :).
func plainName(s string) bool {
	if s == "" || s[0] == '-' || len(s) > 255 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._+-", c)) {
			return false
		}
	}
	return true
}

// creatable returns nil when uid cannot create the missing directory dir:
// its nearest existing ancestor is a real directory (no symbolic link on
// the way that could lead elsewhere) that neither uid nor anything above
// it lets uid write (see trust.Check; a sticky or world-writable one such
// as /tmp is writable: anyone may add an entry).
func creatable(dir string, uid int) error {
	p := filepath.Clean(dir)
	for {
		if _, err := os.Lstat(p); err == nil {
			break
		}
		if p == "/" {
			return errors.New("no part of it exists")
		}
		p = filepath.Dir(p)
	}
	real, err := filepath.EvalSymlinks(p)
	if err != nil {
		return err
	}
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symbolic link to %s", p, real)
	}
	return trust.Check(real, uid)
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

// droppedReads returns, sorted, the keys the child's processes read that
// the policy dropped (or, in audit mode, that enforce would drop).
func (s *shimRun) droppedReads(verdict string) []string {
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

// ExplainFailure says, after a failed child, which dropped keys it read:
// a missing variable is the cause agents most often chase in the wrong
// place. In audit mode it warns of what enforce would have dropped.
func (s *shimRun) ExplainFailure(status int) {
	if s == nil {
		return
	}
	if keys := s.droppedReads("would-drop"); len(keys) > 0 {
		s.l.host.warnf("audit mode: the command read %s, which enforce would drop; see 'envsieve explain --mode audit'", listed(keys))
	}
	if status == 0 {
		return
	}
	if keys := s.droppedReads("dropped"); len(keys) > 0 {
		fmt.Fprintf(s.l.host.stderr(), "envsieve: the command read %s, which the policy dropped; see 'envsieve explain'\n", listed(keys))
	}
}
