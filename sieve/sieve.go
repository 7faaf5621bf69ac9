// Package sieve is envsieve's engine: a pure function from a parent
// environment, a compiled policy and a request to the child's environment,
// one decision per input key, and an error when the launch must not happen.
//
// # The pipeline
//
// [Build] follows docs/design.md section 2 step by step:
//
//  1. Parse the parent environment. An entry without '=' or whose name is not
//     [A-Za-z_][A-Za-z0-9_]* is dropped (invalid-name); a duplicated key keeps
//     its first value, what getenv sees, and the rest are dropped (duplicate).
//  2. Resolve the levels: the global policy, the profile and the profiles it
//     extends, the first matching command rule, the tool, the requested
//     secrets, and a project-local file. Lists are unions; scalars (limits,
//     mode) are overridden by the later, narrower level.
//  3. Admit a key found in the base set, an included group, or an allow entry.
//  4. Guard: a sensitive key passes only by an allow entry that names it
//     exactly. Sensitive means a credential-like name, a credential-like value,
//     or a variable that injects code into the child. Base and group names are
//     curated and skip the name test, not the value test.
//  5. Deny: every deny entry of every level removes, after all admits,
//     including set values and secrets. A requested secret that a deny removes
//     is an error.
//  6. Set literal values from the policy.
//  7. Inject secrets by name (tool-managed and user-requested tiers), with
//     values the caller fetched (see [SecretNames]).
//  8. Check the limits; exceeding one is a [*LimitError] and nothing starts.
//  9. In audit mode hand over the parent environment minus the code-injection
//     floor, and mark what enforce would have dropped.
//
// # Purity
//
// The engine reads no environment, no clock and no file. The parent
// environment, the policy and the secrets come in as values, so a build is
// deterministic and safe for concurrent use. A linter test keeps os, os/exec,
// net and syscall out of this package, and the YAML parser out of its
// dependencies: the engine reads a compiled policy (package policy compiles
// it, into the types of internal/compiled that package policy names), never
// a policy file.
package sieve

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/envsieve/envsieve/internal/compiled"
	"github.com/envsieve/envsieve/internal/detect"
)

// Reason says why a key was kept or dropped. Its String form is stable: it
// appears in `envsieve explain --json` and in the audit log. (A Reason is one
// byte, so that the decisions of a 300-key build stay small.)
type Reason uint8

// Reasons for keeping a key.
const (
	Base   Reason = iota + 1 // "base": a key of the base set
	Group                    // "group": a key of an included group
	Allow                    // "allow": an allow entry
	Set                      // "set": a literal value from the policy
	Secret                   // "secret": an injected secret (tool-managed or requested)

	// Reasons for dropping a key.

	InvalidName    // "invalid-name": no '=' or not [A-Za-z_][A-Za-z0-9_]*
	InvalidValue   // "invalid-value": the value holds a NUL byte
	Duplicate      // "duplicate": a later copy of a key; the first value wins
	NotAllowed     // "not-allowed": nothing admits it
	SensitiveName  // "sensitive-name": a credential-like name admitted only by a wildcard
	SensitiveValue // "sensitive-value": a credential-like value not admitted by exact name
	CodeInjection  // "code-injection": injects code into the child; needs an exact name
	Denied         // "deny": a deny entry removes it
)

var reasonNames = [...]string{"", "base", "group", "allow", "set", "secret", "invalid-name", "invalid-value",
	"duplicate", "not-allowed", "sensitive-name", "sensitive-value", "code-injection", "deny"}

func (r Reason) String() string {
	if int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// MarshalText writes the stable name.
func (r Reason) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// Decision is what happened to one key.
type Decision struct {
	Key string // "" for an entry without '=', whose text is never repeated
	// Source is the policy entry behind the decision: the allow or deny
	// entry, the base or group, the set entry or the secret request. It is nil
	// for reasons that no entry causes (invalid-name, duplicate, not-allowed).
	Source *compiled.Source
	Reason Reason
	Kept   bool
	// WouldDrop is set in audit mode on a key that was kept but that enforce
	// mode would drop for Reason.
	WouldDrop bool
	// Added is true for a key the parent environment did not have: a set
	// value or an injected secret.
	Added bool
	// detail is what Detail needs beyond Reason and Key: the Index of a
	// sensitive value's kind, or detailFile for a secret delivered as a file.
	detail uint8
}

// detailFile is the detail of a secret delivered as a file.
const detailFile = 1

// Detail refines the reason: the credential word of a sensitive name
// ("TOKEN"), the kind of a sensitive value ("github-token"), or "delivered
// as a file" for such a secret; "" otherwise. It is worked out when asked
// for, which keeps a decision at 32 bytes: a build allocates one per key.
func (d *Decision) Detail() string {
	switch {
	case d.Reason == SensitiveName:
		word, _ := detect.SensitiveName(d.Key)
		return word
	case d.Reason == SensitiveValue:
		return string(detect.KindAt(d.detail))
	case d.Reason == Secret && d.detail == detailFile:
		return "delivered as a file"
	}
	return ""
}

// Request is what the caller wants to run and with which extras.
type Request struct {
	// Commands are the simple commands the launch will run, each an argv
	// (argv[0] as the user wrote it). A rule applies only when every command's
	// first matching rule is the same rule. No commands means no rule.
	Commands [][]string
	// Path is the resolved path of Commands[0][0] (its real path, symbolic
	// links followed, so that a link named gh to another program is that
	// program), for the rules; "" when unknown.
	Path string
	// Untrusted says that the program at Path is one the child's uid could
	// have written (a copy named gh in the agent's directory): no rule
	// applies to it, whatever its name, but one that pins its bytes.
	Untrusted bool
	// Digest is the SHA-256 (lowercase hex) of the program at Path, taken
	// by a caller that will run the very bytes it hashed; "" when none was.
	// A rule that pins a digest (match: sha256) applies only to a first
	// command whose Digest it is.
	Digest string
	// Profile names the profile; "" means the global level only.
	Profile string
	// Tool names a tool whose injects_env secrets the child receives.
	Tool string
	// Secrets are user-requested secret names.
	Secrets []string
	// Mode overrides the policy's mode; "" keeps it. A project-local policy
	// that says enforce still wins.
	Mode compiled.Mode
}

// compiledPolicy is a compiled policy as the engine reads it. A
// *policy.Policy is the one implementation: the engine names this
// interface, not that type, so that it does not link the YAML parser that
// package policy imports. It is unexported because its methods are the
// engine's plumbing (they return internal/compiled's types): callers pass
// a *policy.Policy.
type compiledPolicy interface {
	// Effective returns the effective policy of a profile, the merged
	// view of its levels; "" means no profile.
	Effective(profile string) (*compiled.Effective, error)
	// Compiled returns the rules, tools, secrets and local level; nil for
	// a nil policy.
	Compiled() *compiled.Policy
}

// Input is everything a build depends on.
type Input struct {
	// Parent is the parent environment, as os.Environ returns it. A nil
	// Parent is an error: the engine never guesses an environment.
	Parent []string
	// Policy is the compiled policy: a *policy.Policy. A nil Policy is an
	// error ([ErrNilPolicy]).
	Policy compiledPolicy
	Request
	// SecretValues holds the value of every name [SecretNames] returned, from
	// the caller's secret sources.
	SecretValues map[string]string
	// SecretFiles holds, for secrets delivered as files, the path of the file
	// the caller wrote: the child gets NAME_FILE=path instead of NAME.
	SecretFiles map[string]string
}

// Result is a built environment and the decisions behind it.
type Result struct {
	// Env is the child's environment, sorted by key, one entry per key.
	Env       []string
	Decisions []Decision
	Profile   string
	Rule      *compiled.Rule // nil when no rule applies
	Mode      compiled.Mode
	Limits    compiled.Limits
	Injected  []string // names of the injected secrets
	// BlockIteration is true when the shim is to hide Hide from environ.
	BlockIteration bool
	// Seal is the seal the launch asks for: the profile's (or the
	// global level's), raised by the rule's or the local policy's.
	Seal compiled.SealMode
	// SealMask are the policy's own paths the seal masks besides the
	// built-in list: the effective policy's and the rule's ("~/" not yet expanded).
	SealMask []string
	// SealWrite are the policy's own places the sealed tree may write
	// besides its work and caches: the effective policy's and the rule's.
	SealWrite []string
	// Hide names the keys of Env the shim hides when BlockIteration is on:
	// every sensitive key admitted by exact name, every injected secret, and
	// the policy's hide entries. Nil when BlockIteration is off.
	Hide []string
	// Brokered names the keys of Env whose value the child must get as a
	// fake, the real value kept by the broker (package broker): the
	// levels' brokered names, and every secret with its own binding
	// (secrets.NAME.broker). The engine leaves the real value in Env; the
	// launcher replaces it. Sorted; nil when none.
	Brokered []string
}

// Errors callers branch on. Use errors.Is.
var (
	ErrNilParent   = errors.New("sieve: nil parent environment")
	ErrNilPolicy   = errors.New("sieve: nil policy")
	ErrUnknownTool = errors.New("unknown tool")
)

// SecretError reports a requested or tool-managed secret that cannot be
// given. It never holds the secret's value.
type SecretError struct {
	Name   string
	Reason string           // "denied", "not found", "not a variable name"
	Source *compiled.Source // the deny entry, for "denied"
}

func (e *SecretError) Error() string {
	if e.Source != nil {
		return fmt.Sprintf("secret %s: %s by %s", e.Name, e.Reason, e.Source)
	}
	return fmt.Sprintf("secret %s: %s", e.Name, e.Reason)
}

// SecretNames returns the secrets a request needs, in order and without
// duplicates: the tool's injects_env, then the requested names. The caller
// fetches their values and passes them as Input.SecretValues.
func SecretNames(p compiledPolicy, req Request) ([]string, error) {
	return secretNames(compiledOf(p), req)
}

// compiledOf returns p.Compiled(), nil for a nil p.
func compiledOf(p compiledPolicy) *compiled.Policy {
	if p == nil {
		return nil
	}
	return p.Compiled()
}

func secretNames(p *compiled.Policy, req Request) ([]string, error) {
	var names []string
	add := func(n string) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	if req.Tool != "" {
		t, ok := p.Tools[req.Tool]
		if !ok {
			return nil, fmt.Errorf("tool %q: %w", req.Tool, ErrUnknownTool)
		}
		for _, s := range t.InjectsEnv {
			add(s.Entry)
		}
	}
	for _, n := range req.Secrets {
		if !compiled.ValidName(n) {
			return nil, &SecretError{Name: n, Reason: "not a variable name"}
		}
		add(n)
	}
	return names, nil
}

// ChooseRule returns the rule that applies to a request: the first rule
// matching each command, when it is the same rule for every command.
func ChooseRule(p compiledPolicy, req Request) *compiled.Rule {
	return chooseRule(compiledOf(p), req)
}

func chooseRule(p *compiled.Policy, req Request) *compiled.Rule {
	var rule *compiled.Rule
	for i, argv := range req.Commands {
		if len(argv) == 0 {
			return nil
		}
		prog := argv[0]
		if i == 0 && req.Path != "" {
			prog = req.Path
		}
		base := path.Base(prog) // what Rule.MatchProgram matches a name pattern against
		var r *compiled.Rule
		for _, cand := range p.Rules {
			match := false
			switch {
			case cand.SHA256 != "":
				// Only the bytes hashed: the first command, hashed by a
				// caller that runs what it hashed, wherever it lives.
				match = i == 0 && req.Digest == cand.SHA256 && cand.MatchProgram(prog)
			case i == 0 && req.Untrusted:
			case cand.ByPath:
				match = cand.MatchProgram(prog)
			case cand.Command != nil:
				match = cand.Command.Match(base)
			}
			if match && cand.MatchArgs(argv[1:]) {
				r = cand
				break
			}
		}
		if r == nil || (rule != nil && r != rule) {
			return nil
		}
		rule = r
	}
	return rule
}

// override is a key whose value comes from the policy or a secret source
// rather than from the parent.
type override struct {
	key, env string
	hash     uint32 // compiled.HashName(key)
	reason   Reason
	source   *compiled.Source
	used     bool
}

// Build runs the pipeline. The result's Env is never nil on success, even
// when it is empty.
func Build(in Input) (*Result, error) {
	if in.Parent == nil {
		return nil, ErrNilParent
	}
	p := compiledOf(in.Policy)
	if p == nil {
		return nil, ErrNilPolicy
	}
	eff, err := in.Policy.Effective(in.Profile)
	if err != nil {
		return nil, err
	}
	rule := chooseRule(p, in.Request)
	res := &Result{Profile: in.Profile, Rule: rule, Mode: eff.Mode, Limits: eff.Limits}
	var rt *compiled.Tables
	if rule != nil {
		rt = rule.Tables
		lv := rule.Level
		if lv.Mode != nil {
			res.Mode = *lv.Mode
		}
		lim := &res.Limits
		for _, x := range []struct {
			v   *int
			dst *int
		}{{lv.MaxKeys, &lim.MaxKeys}, {lv.MaxBytes, &lim.MaxBytes}, {lv.MaxValueBytes, &lim.MaxValueBytes}} {
			if x.v != nil {
				*x.dst = *x.v
			}
		}
	}
	if in.Mode != "" {
		res.Mode = in.Mode
	}
	if l := p.LocalLvl; l != nil {
		if l.Mode != nil && *l.Mode == compiled.Enforce {
			res.Mode = compiled.Enforce
		}
		narrow := func(v *int, dst *int) {
			if v != nil && *v < *dst {
				*dst = *v
			}
		}
		narrow(l.MaxKeys, &res.Limits.MaxKeys)
		narrow(l.MaxBytes, &res.Limits.MaxBytes)
		narrow(l.MaxValueBytes, &res.Limits.MaxValueBytes)
	}

	denied := func(key string) (*compiled.Source, bool) {
		if s, ok := eff.Deny(key); ok {
			return s, true
		}
		if rt != nil {
			return rt.Deny(key)
		}
		return nil, false
	}

	// The keys whose values come from the policy or a secret source.
	var ovBuf [8]override // on the stack, unless there are more
	ovs := ovBuf[:0]
	setKey := func(s compiled.Setting) {
		for i := range ovs {
			if ovs[i].key == s.Key {
				ovs[i] = override{key: s.Key, env: s.Env, hash: compiled.HashName(s.Key), reason: Set, source: s.Source}
				return
			}
		}
		ovs = append(ovs, override{key: s.Key, env: s.Env, hash: compiled.HashName(s.Key), reason: Set, source: s.Source})
	}
	for _, s := range eff.Set {
		setKey(s)
	}
	if rule != nil {
		for _, s := range rule.Level.Set {
			setKey(s)
		}
	}
	names, err := secretNames(p, in.Request)
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if src, ok := denied(name); ok {
			return nil, &SecretError{Name: name, Reason: "denied", Source: src}
		}
		src := secretSource(p, in.Tool, name)
		var o override
		if path, ok := in.SecretFiles[name]; ok {
			key := name + "_FILE"
			if dsrc, ok := denied(key); ok {
				return nil, &SecretError{Name: name, Reason: "denied (as " + key + ")", Source: dsrc}
			}
			o = override{key: key, env: key + "=" + path, hash: compiled.HashName(key), reason: Secret, source: src}
		} else {
			v, ok := in.SecretValues[name]
			if !ok {
				return nil, &SecretError{Name: name, Reason: "not found in any secret source"}
			}
			if strings.IndexByte(v, 0) >= 0 {
				return nil, &SecretError{Name: name, Reason: "its value holds a NUL byte"}
			}
			o = override{key: name, env: name + "=" + v, hash: compiled.HashName(name), reason: Secret, source: src}
		}
		replaced := false
		for i := range ovs {
			if ovs[i].key == o.key {
				ovs[i], replaced = o, true
			}
		}
		if !replaced {
			ovs = append(ovs, o)
		}
		res.Injected = append(res.Injected, name)
	}

	decs := make([]Decision, len(in.Parent)+len(ovs))
	sc := getScratch(len(in.Parent))
	defer scratches.Put(sc)
	audit := res.Mode == compiled.Audit
	pt := &eff.Tables
	total, longest := 0, 0 // for the limits: the size of the environment and its longest value
	keep := func(ref, kvLen, eq int, kv string) {
		p0, p1 := keyPrefix(kv, eq)
		sc.kept = append(sc.kept, keptEntry{p0: p0, p1: p1, ref: int32(ref)})
		total += kvLen + 1
		longest = max(longest, kvLen-eq-1)
	}
	// ovBits has the bit hash&63 of each override's hash, so that most keys
	// skip findOverride.
	var ovBits uint64
	for _, o := range ovs {
		ovBits |= 1 << (o.hash & 63)
	}
	asFiles := len(in.SecretFiles) > 0
	for i, kv := range in.Parent {
		d := &decs[i]
		h, eq, ok := scanKey(kv)
		if !ok {
			switch {
			case eq == 0:
				d.Key = "="
			case eq > 0:
				d.Key = kv[:eq]
			}
			d.Reason = InvalidName
			continue
		}
		key := kv[:eq]
		d.Key = key
		if !sc.addKey(h, key, i, in.Parent) {
			d.Reason = Duplicate
			continue
		}
		val := kv[eq+1:]
		if strings.IndexByte(val, 0) >= 0 {
			d.Reason = InvalidValue
			continue
		}
		if asFiles {
			if _, file := in.SecretFiles[key]; file {
				// Delivered as a file: the value never travels in the
				// environment, whatever admits the parent's copy.
				d.Reason, d.detail, d.Source = Secret, detailFile, secretSource(p, in.Tool, key)
				continue
			}
		}
		if ovBits&(1<<(h&63)) != 0 {
			if j := findOverride(ovs, h, key); j >= 0 {
				o := &ovs[j]
				o.used = true
				if o.reason == Set {
					if src, ok := denied(key); ok {
						d.Reason, d.Source = Denied, src
						continue
					}
				}
				d.Kept, d.Reason, d.Source = true, o.reason, o.source
				keep(-1-j, len(o.env), len(o.key), o.env)
				continue
			}
		}
		inEff, inRule := pt.MayMatch(h, key), rt != nil && rt.MayMatch(h, key)
		if inEff || inRule {
			decide(d, pt, rt, inEff, inRule, h, key, val)
		} else {
			d.Reason = NotAllowed // most keys: in no table, matched by no glob
		}
		if !d.Kept && audit && !detect.Injection(key, val) {
			d.Kept, d.WouldDrop = true, true
		}
		if d.Kept {
			keep(i, len(kv), eq, kv)
		}
	}
	nd := len(in.Parent) // decisions written
	for j := range ovs {
		o := &ovs[j]
		if o.used {
			continue
		}
		d := &decs[nd]
		nd++
		d.Key, d.Added = o.key, true
		if o.reason == Set {
			if src, ok := denied(o.key); ok {
				d.Reason, d.Source = Denied, src
				continue
			}
		}
		d.Kept, d.Reason, d.Source = true, o.reason, o.source
		keep(-1-j, len(o.env), len(o.key), o.env)
	}
	res.Decisions = decs[:nd]
	text := func(e keptEntry) string {
		if e.ref >= 0 {
			return in.Parent[e.ref]
		}
		return ovs[-1-e.ref].env
	}
	lim := res.Limits
	if len(sc.kept) > lim.MaxKeys || total > lim.MaxBytes || longest > lim.MaxValueBytes {
		// The error names the largest variables, ties in the order they
		// were kept.
		env := make([]string, len(sc.kept))
		for i, e := range sc.kept {
			env[i] = text(e)
		}
		if err := CheckLimits(env, lim); err != nil {
			return nil, err
		}
	}
	if cap(sc.buf) < len(sc.kept) {
		sc.buf = make([]keptEntry, cap(sc.kept))
	}
	sorted := sortKept(sc.kept, sc.buf[:cap(sc.buf)], text)
	env := make([]string, len(sorted))
	for i, e := range sorted {
		env[i] = text(e)
	}
	res.Env = env
	res.Seal = eff.Seal
	if rule != nil && rule.Level.Seal != nil {
		res.Seal = res.Seal.Stronger(*rule.Level.Seal)
	}
	res.SealMask = eff.SealMask
	if rule != nil && len(rule.Level.SealMask) > 0 {
		res.SealMask = slices.Clip(eff.SealMask)
		for _, m := range rule.Level.SealMask {
			if !slices.Contains(res.SealMask, m) {
				res.SealMask = append(res.SealMask, m)
			}
		}
	}
	res.SealWrite = eff.SealWrite
	if rule != nil && len(rule.Level.SealWrite) > 0 {
		res.SealWrite = slices.Clip(eff.SealWrite)
		for _, w := range rule.Level.SealWrite {
			if !slices.Contains(res.SealWrite, w) {
				res.SealWrite = append(res.SealWrite, w)
			}
		}
	}
	res.BlockIteration = eff.BlockIteration
	if rule != nil && rule.Level.BlockIteration != nil {
		res.BlockIteration = *rule.Level.BlockIteration
	}
	if l := p.LocalLvl; l != nil && l.BlockIteration != nil && *l.BlockIteration {
		res.BlockIteration = true
	}
	if res.BlockIteration {
		res.Hide = hidden(res, eff, rule)
	}
	res.Brokered = brokered(res, p, eff, rule)
	return res, nil
}

// brokered lists the keys of Env that are brokered.
func brokered(res *Result, p *compiled.Policy, eff *compiled.Effective, rule *compiled.Rule) []string {
	var out []string
	for _, kv := range res.Env {
		key, _, _ := strings.Cut(kv, "=")
		is := slices.Contains(eff.Brokered, key)
		if !is && rule != nil {
			is = slices.ContainsFunc(rule.Level.Brokered, func(s *compiled.Source) bool { return s.Entry == key })
		}
		if !is {
			if s, ok := p.Secrets[key]; ok && s.Broker != nil {
				is = true
			}
		}
		if is {
			out = append(out, key)
		}
	}
	return out
}

// hidden lists the kept keys the shim hides: secrets, sensitive keys that an
// exact allow entry admitted, and the hide entries of the effective policy and the rule.
func hidden(res *Result, eff *compiled.Effective, rule *compiled.Rule) []string {
	extra := eff.Hide
	if rule != nil {
		for _, s := range rule.Level.Hide {
			extra = append(extra[:len(extra):len(extra)], s.Entry)
		}
	}
	var out []string
	for _, kv := range res.Env {
		key, val, _ := strings.Cut(kv, "=")
		hide := slices.Contains(extra, key)
		if !hide {
			d := res.decision(key)
			switch {
			case d == nil || d.WouldDrop:
			case d.Reason == Secret:
				hide = true
			case d.Reason == Allow:
				hide = detect.Sensitive(key, val) || detect.Injection(key, val)
			}
		}
		if hide {
			out = append(out, key)
		}
	}
	return out
}

// decision returns the kept decision for key, or nil.
func (r *Result) decision(key string) *Decision {
	for i := range r.Decisions {
		if d := &r.Decisions[i]; d.Key == key && d.Kept {
			return d
		}
	}
	return nil
}

// findOverride returns the index of key's override, or -1. h is
// compiled.HashName(key).
func findOverride(ovs []override, h uint32, key string) int {
	for i := range ovs {
		if ovs[i].hash == h && ovs[i].key == key {
			return i
		}
	}
	return -1
}

func secretSource(p *compiled.Policy, tool, name string) *compiled.Source {
	if t, ok := p.Tools[tool]; ok {
		for _, s := range t.InjectsEnv {
			if s.Entry == name {
				return s
			}
		}
	}
	return &compiled.Source{Level: "request", List: "secret", Entry: name}
}

// decide runs admit, guard and deny for one parent key under enforce and
// fills in d, whose Key is set and the rest zero. h is compiled.HashName(key);
// inPlan and inRule are effective policy.MayMatch and rt.MayMatch of it (false for a
// nil rt).
func decide(d *Decision, eff, rt *compiled.Tables, inEff, inRule bool, h uint32, key, val string) {
	var (
		a    compiled.Admit
		ok   bool
		deny *compiled.Source
	)
	if inEff {
		a, ok, deny = eff.Lookup(h, key)
	}
	if inRule {
		ra, rok, rdeny := rt.Lookup(h, key)
		if rok && (!ok || !a.Exact && (ra.Exact || ra.Curated && !a.Curated)) {
			a, ok = ra, true
		}
		if deny == nil {
			deny = rdeny
		}
	}
	if !ok {
		d.Reason = NotAllowed
		return
	}
	if !a.Exact {
		if detect.Injection(key, val) {
			d.Reason, d.Source = CodeInjection, a.Source
			return
		}
		if !a.Curated {
			if _, bad := detect.SensitiveName(key); bad {
				d.Reason, d.Source = SensitiveName, a.Source
				return
			}
		}
		if kind, bad := detect.ValueFor(key, val); bad {
			d.Reason, d.Source, d.detail = SensitiveValue, a.Source, kind.Index()
			return
		}
	}
	if deny != nil {
		d.Reason, d.Source = Denied, deny
		return
	}
	d.Kept, d.Reason, d.Source = true, reasonOf(a), a.Source
}

func reasonOf(a compiled.Admit) Reason {
	if !a.Curated {
		return Allow // an allow entry, exact or a glob
	}
	switch a.Source.List {
	case "base":
		return Base
	case "group":
		return Group
	}
	return Allow
}

// compareKeys orders "KEY=value" entries by key in one pass: at the first
// differing byte, the entry whose key has ended ('=') comes first. Keys are
// unique, so two entries always differ at or before the shorter key's '='.
func compareKeys(a, b string) int {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		switch {
		case ca == '=':
			return -1
		case cb == '=':
			return 1
		}
		return int(ca) - int(cb)
	}
	return len(a) - len(b)
}
