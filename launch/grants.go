package launch

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/envsieve/envsieve/audit"
	"github.com/envsieve/envsieve/internal/trust"
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

	mu       sync.Mutex
	reads    map[string]bool // keys read by getenv or secure_getenv
	logged   map[string]bool // "op key" pairs already in the audit log
	granted  map[string]bool // every key ever granted at an exec
	statics  map[string]bool // static programs already noted
	refused  int
	decision map[string]*sieve.Decision
}

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
		h.debugf("shim: %v", err)
		return nil, nil
	}
	if err != nil {
		return nil, err
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
	if s.srv, err = shim.Listen(h.runtimeDir(), s); err != nil {
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
	if grants {
		env = append(env, shim.EnvExec+"=1")
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

// Exec implements shim.Handler: the environment changes of one exec. The
// program gets what the first rule matching it grants on top of the
// launch's environment, and loses what that rule denies and every key
// granted to another program.
func (s *ShimRun) Exec(x *shim.Exec) (set, del []string, ok bool) {
	if !s.grants {
		return nil, nil, false
	}
	l := s.l
	pol := l.opt.Policy
	req := l.Request
	req.Commands, req.Path, req.Untrusted = [][]string{x.Argv}, x.Path, false
	// The program a rule grants to: named as an administrator named it, and
	// one the agent's tree cannot have written (a copy or a link named gh
	// gets nothing).
	if x.Path != "" {
		if name, writable, err := trust.Program(x.Path, os.Geteuid()); err == nil {
			req.Path, req.Untrusted = name, writable != nil
			if writable != nil && sieve.ChooseRule(pol, sieve.Request{Commands: req.Commands}) != nil {
				s.alog.NoGrant(x.PID, x.Path, "the program is in a place the agent's tree can write: "+writable.Error())
			}
		} else {
			req.Untrusted = true
		}
	}
	var res *sieve.Result
	var rule *policy.Rule
	if rule = sieve.ChooseRule(pol, req); rule != nil {
		var err error
		res, err = l.build(sieve.Input{Parent: l.opt.Parent, Policy: pol, Request: req,
			SecretValues: l.secretEnv, SecretFiles: l.secretFiles})
		if err != nil {
			s.alog.NoGrant(x.PID, x.Path, "rule "+rule.Name+": "+err.Error())
			rule, res = nil, nil
		}
		if res != nil {
			// A grant holds fakes of brokered secrets, never their real
			// values, and reaches their hosts through the broker.
			res.Env = l.brokerOverlay(res.Env)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	have := map[string]bool{}
	if res != nil {
		for _, kv := range res.Env {
			k, v, _ := strings.Cut(kv, "=")
			have[k] = true
			// A key hidden from the first program's children is granted
			// again only when the rule itself names it.
			if s.hidden[k] {
				if a, ok := rule.Tables.Admit(k); !ok || !a.Exact {
					continue
				}
			}
			if bv, inBase := s.base[k]; !inBase || bv != v || s.hidden[k] {
				set = append(set, kv)
				keys = append(keys, k)
			}
		}
		for k := range s.base {
			if !have[k] && !s.hidden[k] {
				del = append(del, k)
			}
		}
	}
	for k := range s.granted {
		if !slices.Contains(keys, k) {
			del = append(del, k)
		}
	}
	for _, k := range keys {
		s.granted[k] = true
	}
	sort.Strings(del)
	if len(keys) > 0 {
		set = append(set, shim.EnvGranted+"="+strings.Join(keys, ","))
	} else {
		del = append(del, shim.EnvGranted)
	}
	argv0 := ""
	if len(x.Argv) > 0 {
		argv0 = x.Argv[0]
	}
	if rule != nil {
		s.alog.Grant(x.PID, x.Path, argv0, rule.Name, keys, del)
	}
	return set, del, true
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
