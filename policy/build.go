package policy

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/envsieve/envsieve/internal/compiled"
	"github.com/envsieve/envsieve/internal/pattern"
	"github.com/envsieve/envsieve/profiles"
	"github.com/envsieve/envsieve/secret"
)

// ErrUnknownProfile is returned (wrapped) for a profile name the policy does
// not define and no built-in profile has. Use errors.Is.
var ErrUnknownProfile = errors.New("unknown profile")

// Load reads (as [ReadFile] does), validates and compiles the policy file at
// path. The error is an [ErrorList] when the file is malformed.
func Load(path string) (*Policy, error) {
	src, err := ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load policy %s: %w", path, err)
	}
	return Parse(path, src)
}

// Parse validates and compiles a policy from src; name is used in positions.
// Every bad entry is reported at once, as an [ErrorList].
func Parse(name string, src []byte) (*Policy, error) {
	c, err := catalog()
	if err != nil {
		return nil, err
	}
	d := &decoder{file: name, src: src}
	raw := embeddedRaw(name, src) // the embedded default, decoded at build time
	if raw == nil {
		root := d.parseYAML()
		if root == nil {
			return nil, d.errs
		}
		raw = d.decodeFile(root)
	}
	b := &builder{d: d, c: c}
	p, err := b.build(raw)
	if err != nil {
		return nil, err
	}
	if len(d.errs) > 0 {
		sortErrors(d.errs)
		return nil, d.errs
	}
	p.File, p.raw, p.src = name, raw, src
	return p, nil
}

// Default returns the embedded default policy.
func Default() (*Policy, error) {
	p, err := Parse("embedded:default.yaml", profiles.Default)
	if err != nil {
		return nil, fmt.Errorf("embedded default policy: %w", err)
	}
	return p, nil
}

// builtinProfiles parses the embedded agent profiles once. They are kept raw
// and compiled into each policy, because a profile's effective policy includes the
// global level of the policy that uses it.
var builtinProfiles = sync.OnceValues(func() ([]rawProfile, error) {
	d := &decoder{file: "embedded:builtin.yaml", src: profiles.Builtin}
	raw := embeddedRaw(d.file, d.src) // decoded at build time
	if raw == nil {
		root := d.parseYAML()
		if root == nil {
			return nil, fmt.Errorf("built-in profiles: %w", d.errs)
		}
		raw = d.decodeFile(root)
	}
	for _, p := range raw.Profiles {
		for k, pos := range p.Keys {
			if k != "description" && k != "allow" && k != "seal" && k != "brokered" && k != "state_dirs" {
				d.errorAt(pos, "built-in profile %s: only description, allow, seal, brokered and state_dirs are used", p.Name.V)
			}
		}
	}
	if len(raw.Global.Keys) != 2 || len(d.errs) > 0 {
		d.errorAt(Pos{File: d.file}, "built-in profiles: only version and profiles are used")
		return nil, fmt.Errorf("built-in profiles: %w", d.errs)
	}
	return raw.Profiles, nil
})

type builder struct {
	d     *decoder
	c     *Catalog
	local *Level // the project-local level, or nil
}

func (b *builder) build(raw *rawFile) (*Policy, error) {
	p := &Policy{profiles: map[string]*Profile{}, Tools: map[string]*Tool{}, Secrets: map[string]*Secret{}, catalog: b.c, LocalLvl: b.local}
	p.Global = b.level("global", &raw.Global)
	if raw.Shell != nil {
		if !filepath.IsAbs(raw.Shell.V) {
			b.d.errorAt(raw.Shell.Pos, "shell: want an absolute path, got %q", raw.Shell.V)
		}
		p.Shell = raw.Shell.V
	}
	for i := range raw.Profiles {
		rp := &raw.Profiles[i]
		if !validProfileName(rp.Name.V) {
			b.d.errorAt(rp.Name.Pos, "profile %q: a profile name is lower-case letters, digits, '-', '_' and '.'", rp.Name.V)
			continue
		}
		p.profiles[rp.Name.V] = b.profile(rp.Name.V, rp)
		p.order = append(p.order, rp.Name.V)
	}
	// Built-in profiles are compiled now only when a user profile refers to
	// one; otherwise on first use (see Policy.Profile), so that a launch
	// without a profile never pays for them.
	if refersToBuiltins(raw) {
		builtins, err := builtinProfiles()
		if err != nil {
			return nil, err
		}
		p.builtinsEager = true
		b.addBuiltins(p, builtins)
	}
	b.resolve(p)
	for i := range raw.Rules {
		p.Rules = append(p.Rules, b.rule(i, &raw.Rules[i]))
	}
	for _, rt := range raw.Tools {
		t := &Tool{Name: rt.Name.V, Pos: rt.Name.Pos}
		if !validProfileName(rt.Name.V) {
			b.d.errorAt(rt.Name.Pos, "tool %q: a tool name is lower-case letters, digits, '-', '_' and '.'", rt.Name.V)
		}
		if rt.Description != nil {
			t.Description = rt.Description.V
		}
		for _, k := range rt.InjectsEnv {
			if !ValidName(k.V) {
				b.d.errorAt(k.Pos, "tool %s: injects_env: %q is not a variable name", rt.Name.V, k.V)
				continue
			}
			t.InjectsEnv = append(t.InjectsEnv, &Source{Level: "tool " + rt.Name.V, List: "injects_env", Entry: k.V, Pos: k.Pos})
		}
		p.Tools[t.Name] = t
	}
	if raw.Audit != nil {
		if raw.Audit.V == "" {
			b.d.errorAt(raw.Audit.Pos, "audit: path: want a file path or \"-\" for stderr")
		}
		p.AuditPath = raw.Audit.V
	}
	if e := raw.AuditErr; e != nil {
		if e.V != "fail" && e.V != "warn" {
			b.d.errorAt(e.Pos, "audit: on_error: want fail or warn, got %q", e.V)
		}
		p.AuditWarn = e.V == "warn"
	}
	p.Redact = Redact{Enabled: true, MinSecretLen: 8, Entropy: true}
	if r := raw.Redact; r != nil {
		if r.Enabled != nil {
			p.Redact.Enabled = *r.Enabled
		}
		if r.Entropy != nil {
			p.Redact.Entropy = *r.Entropy
		}
		if n := r.EntropyMinLen; n != nil {
			if n.V < 8 || n.V > 1024 {
				b.d.errorAt(n.Pos, "redact: entropy_min_len must be from 8 to 1024, got %d", n.V)
			} else {
				p.Redact.EntropyMinLen = n.V
			}
		}
		if t := r.EntropyThreshold; t != nil {
			if *t <= 0 || *t > 1 {
				b.d.errorAt(r.ThresholdPos, "redact: entropy_threshold must be above 0 and at most 1, got %g", *t)
			} else {
				p.Redact.EntropyThreshold = *t
			}
		}
		if n := r.MinSecretLen; n != nil {
			if n.V < 4 || n.V > 1024 {
				b.d.errorAt(n.Pos, "redact: min_secret_len must be from 4 to 1024, got %d", n.V)
			} else {
				p.Redact.MinSecretLen = n.V
			}
		}
	}
	for _, rs := range raw.Secrets {
		if sec := b.secret(rs); sec != nil {
			p.Secrets[sec.Name] = sec
		}
	}
	if rb := raw.Broker; rb != nil {
		if rb.Egress != nil {
			switch rb.Egress.V {
			case "open":
			case "bound-only":
				p.Broker.BoundOnly = true
			default:
				b.d.errorAt(rb.Egress.Pos, "broker: egress: want open or bound-only, got %q", rb.Egress.V)
			}
		}
		for _, ca := range rb.UpstreamCA {
			if !filepath.IsAbs(ca.V) && !strings.HasPrefix(ca.V, "~/") {
				b.d.errorAt(ca.Pos, "broker: upstream_ca: want an absolute path (or ~/...), got %q", ca.V)
				continue
			}
			p.Broker.UpstreamCA = append(p.Broker.UpstreamCA, ca.V)
		}
	}
	p.SSH = b.sshSettings(raw.SSH)
	// Every brokered name needs a binding: the policy's own or the
	// catalog's.
	levels := []*Level{p.Global}
	for _, name := range p.order {
		levels = append(levels, p.profiles[name].Level)
	}
	for _, r := range p.Rules {
		levels = append(levels, r.Level)
	}
	if p.LocalLvl != nil {
		levels = append(levels, p.LocalLvl)
	}
	for _, l := range levels {
		for _, s := range l.Brokered {
			if p.Binding(s.Entry) == nil {
				b.d.errorAt(s.Pos, "%s: brokered: %s has no binding: give it one under secrets.%s.broker (hosts or base_url), or broker a name of the built-in catalog ('envsieve profiles' lists them)", l.Name, s.Entry, s.Entry)
			}
		}
	}
	p.engine = compiled.Policy{LocalLvl: p.LocalLvl, Rules: p.Rules, Tools: p.Tools, Secrets: p.Secrets}
	return p, nil
}

func (b *builder) secret(rs rawSecret) *Secret {
	what := "secret " + rs.Name.V
	if !ValidName(rs.Name.V) {
		b.d.errorAt(rs.Name.Pos, "secrets: %q is not a variable name", rs.Name.V)
		return nil
	}
	s := &Secret{Name: rs.Name.V, Pos: rs.Name.Pos, From: FromEnv, FromDefault: rs.From == nil, Deliver: deliverEnv}
	if rs.From != nil {
		switch f := SecretFrom(rs.From.V); f {
		case FromEnv, FromStore, FromCommand, FromKeychain, FromOp:
			s.From = f
		default:
			b.d.errorAt(rs.From.Pos, "%s: from: want env, store, command, keychain or op, got %q", what, rs.From.V)
		}
	}
	for _, c := range rs.Command {
		s.Command = append(s.Command, c.V)
	}
	// Each field belongs to one source.
	for _, f := range []struct {
		v     *str
		field string
		from  SecretFrom
	}{{rs.Service, "service", FromKeychain}, {rs.Account, "account", FromKeychain}, {rs.Ref, "ref", FromOp}} {
		if f.v != nil && s.From != f.from {
			b.d.errorAt(f.v.Pos, "%s: %s is used only with from: %s", what, f.field, f.from)
		}
	}
	switch {
	case s.From == FromCommand && len(s.Command) == 0:
		b.d.errorAt(rs.Name.Pos, "%s: from command needs a command list, such as [pass, show, name]", what)
	case s.From != FromCommand && len(s.Command) > 0:
		b.d.errorAt(rs.Command[0].Pos, "%s: command is used only with from: command", what)
	case s.From == FromKeychain && (rs.Service == nil || rs.Account == nil):
		b.d.errorAt(rs.From.Pos, "%s: from keychain needs a service and an account, such as {from: keychain, service: github, account: me}", what)
	case s.From == FromKeychain:
		argv, err := secret.HostKeychainArgv(rs.Service.V, rs.Account.V)
		if err != nil {
			b.d.errorAt(rs.From.Pos, "%s: %v", what, err)
		}
		s.Command = argv
	case s.From == FromOp && rs.Ref == nil:
		b.d.errorAt(rs.From.Pos, "%s: from op needs a ref, such as {from: op, ref: op://vault/item/field}", what)
	case s.From == FromOp:
		argv, err := secret.OnePasswordArgv(rs.Ref.V)
		if err != nil {
			b.d.errorAt(rs.Ref.Pos, "%s: ref: %v", what, err)
		}
		s.Command = argv
	}
	if rs.Timeout != nil {
		d, err := time.ParseDuration(rs.Timeout.V)
		switch {
		case err != nil || d <= 0:
			b.d.errorAt(rs.Timeout.Pos, "%s: timeout: want a duration such as 5s, got %q", what, rs.Timeout.V)
		case !s.From.Helper():
			b.d.errorAt(rs.Timeout.Pos, "%s: timeout is used only with from: command, keychain or op", what)
		default:
			s.Timeout = d
		}
	}
	if rs.Deliver != nil {
		switch dl := Delivery(rs.Deliver.V); dl {
		case deliverEnv, DeliverFile:
			s.Deliver = dl
		default:
			b.d.errorAt(rs.Deliver.Pos, "%s: deliver: want env or file, got %q", what, rs.Deliver.V)
		}
	}
	if rs.Broker != nil {
		s.Broker = b.d.checkBinding(what+": broker", s.Name, rs.Broker)
		if s.Deliver == DeliverFile {
			b.d.errorAt(rs.Broker.Pos, "%s: broker: a brokered secret is delivered as its fake in the environment, not as a file", what)
		}
	}
	return s
}

// refersToBuiltins reports whether a user profile extends or narrows a
// profile that is not another user profile.
func refersToBuiltins(raw *rawFile) bool {
	user := map[string]bool{}
	for _, rp := range raw.Profiles {
		user[rp.Name.V] = true
	}
	for _, rp := range raw.Profiles {
		refs := rp.Extends
		if rp.Parent != nil {
			refs = append(refs, *rp.Parent)
		}
		for _, r := range refs {
			if !user[r.V] || r.V == rp.Name.V {
				return true
			}
		}
	}
	return false
}

// addBuiltins compiles the built-in profiles into p. Their positions name
// the embedded file.
func (b *builder) addBuiltins(p *Policy, builtins []rawProfile) {
	bd := &builder{d: &decoder{file: "embedded:builtin.yaml", src: profiles.Builtin}, c: b.c}
	for i := range builtins {
		name := builtinPrefix + builtins[i].Name.V
		p.profiles[name] = bd.profile(name, &builtins[i])
		p.order = append(p.order, name)
	}
	b.d.errs = append(b.d.errs, bd.d.errs...)
}

// lazyBuiltins compiles the built-in profiles on first use, for a policy
// that did not need them at load time. Built-ins neither extend nor narrow,
// so each effective policy is the global level, the profile's own, and the local level.
func (p *Policy) lazyBuiltins() (map[string]*Profile, []string) {
	p.lazyOnce.Do(func() {
		builtins, err := builtinProfiles()
		if err != nil {
			p.lazyErr = err
			return
		}
		bd := &builder{d: &decoder{file: "embedded:builtin.yaml", src: profiles.Builtin}, c: p.catalog}
		p.lazy = map[string]*Profile{}
		for i := range builtins {
			name := builtinPrefix + builtins[i].Name.V
			pr := bd.profile(name, &builtins[i])
			pr.Effective = compiled.Merge(name, []*Level{p.Global, pr.Level}, p.LocalLvl, p.catalog)
			p.lazy[name] = pr
			p.lazyOrder = append(p.lazyOrder, name)
		}
	})
	return p.lazy, p.lazyOrder
}

// level compiles the fields every level shares.
func (b *builder) level(name string, r *rawLevel) *Level {
	var modePos, clientEnvPos Pos
	if r.Mode != nil {
		modePos = r.Mode.Pos
	}
	if r.ClientEnv != nil {
		clientEnvPos = r.ClientEnv.Pos
	}
	l := compiled.NewLevel(name, r.Pos, r, modePos, clientEnvPos)
	if r.Description != nil {
		l.Description = r.Description.V
	}
	if r.Base != nil {
		base := Base(r.Base.V)
		if _, ok := baseRank[base]; !ok {
			b.d.errorAt(r.Base.Pos, "%s: base: want safe, minimal or none, got %q", name, r.Base.V)
		} else {
			l.Base = &base
			l.BaseSource = &Source{Level: name, List: "base", Entry: r.Base.V, Pos: r.Base.Pos}
		}
	}
	if r.Mode != nil {
		m := Mode(r.Mode.V)
		if m != Enforce && m != Audit {
			b.d.errorAt(r.Mode.Pos, "%s: mode: want enforce or audit, got %q", name, r.Mode.V)
		} else {
			l.Mode = &m
		}
	}
	for _, g := range r.Groups {
		if b.c.Groups[g.V] == nil {
			b.d.errorAt(g.Pos, "%s: groups: unknown group %q%s (known: %s)", name, g.V, DidYouMean(g.V, b.c.GroupNames()), strings.Join(b.c.GroupNames(), ", "))
			continue
		}
		l.Groups = append(l.Groups, &Source{Level: name, List: "group", Entry: g.V, Pos: g.Pos})
	}
	l.Allow = b.entries(name, "allow", r.Allow)
	l.Deny = b.entries(name, "deny", r.Deny)
	seen := map[string]Pos{}
	for _, s := range r.Set {
		if !ValidName(s.Key.V) {
			b.d.errorAt(s.Key.Pos, "%s: set: %q is not a variable name", name, s.Key.V)
			continue
		}
		if prev, dup := seen[s.Key.V]; dup {
			b.d.errorAt(s.Key.Pos, "%s: set: %s is set twice (first at %s)", name, s.Key.V, prev)
			continue
		}
		seen[s.Key.V] = s.Key.Pos
		for _, e := range l.Deny {
			if e.Glob.Match(s.Key.V) {
				b.d.errorAt(s.Key.Pos, "%s: %s is both set and denied (deny %q at %s)", name, s.Key.V, e.Source.Entry, e.Source.Pos)
			}
		}
		l.Set = append(l.Set, Setting{Key: s.Key.V, Value: s.Value.V, Env: s.Key.V + "=" + s.Value.V,
			Source: &Source{Level: name, List: "set", Entry: s.Key.V, Pos: s.Key.Pos}})
	}
	limit := func(key string, n *num, dst **int, max int) {
		if n == nil {
			return
		}
		if n.V < 1 || n.V > max {
			b.d.errorAt(n.Pos, "%s: limits: %s must be from 1 to %d, got %d", name, key, max, n.V)
			return
		}
		v := n.V
		*dst = &v
		compiled.SetLimitSource(l, key, &Source{Level: name, List: "limits", Entry: fmt.Sprintf("%s: %d", key, v), Pos: n.Pos})
	}
	if r.BlockIter != nil {
		v := r.BlockIter.V
		l.BlockIteration = &v
		l.BlockSource = &Source{Level: name, List: "block_iteration", Entry: fmt.Sprint(v), Pos: r.BlockIter.Pos}
	}
	if r.Seal != nil {
		v := SealMode(r.Seal.V)
		l.Seal = &v
		l.SealSource = &Source{Level: name, List: "seal", Entry: r.Seal.V, Pos: r.Seal.Pos}
	}
	for _, s := range r.SealMask {
		if !validMaskPath(s.V) {
			b.d.errorAt(s.Pos, "%s: seal: mask: %q is not ~/ and a clean path below HOME, nor a clean absolute path", name, s.V)
			continue
		}
		if !slices.Contains(l.SealMask, s.V) {
			l.SealMask = append(l.SealMask, s.V)
		}
	}
	for _, s := range r.SealWrite {
		if !validMaskPath(s.V) {
			b.d.errorAt(s.Pos, "%s: seal: write: %q is not ~/ and a clean path below HOME, nor a clean absolute path", name, s.V)
			continue
		}
		if !slices.Contains(l.SealWrite, s.V) {
			l.SealWrite = append(l.SealWrite, s.V)
		}
	}
	l.Hide = b.names(name, "hide", r.Hide)
	l.Brokered = b.names(name, "brokered", r.Brokered)
	l.Passthrough = b.names(name, "shell_env_passthrough", r.Passthrough)
	for _, s := range r.StateDirs {
		if !belowHome(s.V) {
			b.d.errorAt(s.Pos, "%s: state_dirs: %q is not ~/ and a clean path below HOME", name, s.V)
			continue
		}
		l.StateDirs = append(l.StateDirs, s.V)
	}
	if r.ClientEnv != nil {
		switch ce := ClientEnv(r.ClientEnv.V); ce {
		case clientFiltered, ClientFull:
			l.ClientEnv = &ce
		default:
			b.d.errorAt(r.ClientEnv.Pos, "%s: client_env: want filtered or full, got %q", name, r.ClientEnv.V)
		}
	}
	limit("max_keys", r.Limits.MaxKeys, &l.MaxKeys, 1<<20)
	limit("max_bytes", r.Limits.MaxBytes, &l.MaxBytes, 1<<30)
	limit("max_value_bytes", r.Limits.MaxValueBytes, &l.MaxValueBytes, kernelMaxString-2)
	return l
}

// rawOf returns the decoded level l was compiled from.
func rawOf(l *Level) *rawLevel {
	r, _ := compiled.Raw(l).(*rawLevel)
	return r
}

// belowHome reports whether p is "~/" and a clean path below HOME, on one
// line.
func belowHome(p string) bool {
	rest, ok := strings.CutPrefix(p, "~/")
	return ok && rest != "" && filepath.Clean(rest) == rest && rest != ".." && !strings.HasPrefix(rest, "../") &&
		!strings.ContainsAny(rest, "\x00\n")
}

// validMaskPath reports whether p may be a seal mask: "~/" and a clean
// path below HOME, or a clean absolute path other than "/", on one line.
func validMaskPath(p string) bool {
	if strings.HasPrefix(p, "~/") {
		return belowHome(p)
	}
	return filepath.IsAbs(p) && filepath.Clean(p) == p && p != "/" && !strings.ContainsAny(p, "\x00\n")
}

// names checks a list of exact variable names (no globs).
func (b *builder) names(level, list string, in []str) []*Source {
	var out []*Source
	for _, s := range in {
		if !ValidName(s.V) {
			b.d.errorAt(s.Pos, "%s: %s: %q is not a variable name (this list takes exact names, no wildcards)", level, list, s.V)
			continue
		}
		out = append(out, &Source{Level: level, List: list, Entry: s.V, Pos: s.Pos})
	}
	return out
}

// entries compiles allow or deny patterns over variable names.
func (b *builder) entries(level, list string, in []str) []Entry {
	out := make([]Entry, 0, len(in))
	for _, s := range in {
		if err := namePattern(s.V); err != nil {
			b.d.errorAt(s.Pos, "%s: %s: %q: %v", level, list, s.V, err)
			continue
		}
		g, err := pattern.Compile(s.V)
		if err != nil {
			b.d.errorAt(s.Pos, "%s: %s: %q: %v", level, list, s.V, err)
			continue
		}
		out = append(out, Entry{Glob: g, Source: &Source{Level: level, List: list, Entry: s.V, Pos: s.Pos}})
	}
	return out
}

// namePattern checks that a pattern can match a variable name: name bytes
// and the wildcards '*' and '?' only.
func namePattern(s string) error {
	if s == "" {
		return errors.New("empty pattern")
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isNameByte(c) || c == '*' || c == '?') {
			return fmt.Errorf("byte %q at offset %d cannot be part of a variable name (names are letters, digits and '_'; wildcards '*' and '?')", c, i)
		}
	}
	if c := s[0]; c >= '0' && c <= '9' {
		return errors.New("a variable name cannot start with a digit")
	}
	return nil
}

func (b *builder) profile(name string, r *rawProfile) *Profile {
	pr := &Profile{Name: name, Level: b.level("profile "+name, &r.rawLevel)}
	pr.Description = pr.Level.Description
	for _, e := range r.Extends {
		pr.Extends = append(pr.Extends, e.V)
	}
	if r.Parent != nil {
		pr.Parent = r.Parent.V
		if len(r.Extends) > 0 {
			b.d.errorAt(r.Parent.Pos, "profile %s: a profile with a parent may only narrow it, so it cannot also extend", name)
		}
	}
	return pr
}

// resolve checks every profile reference, finds cycles, builds each effective policy,
// and checks that sub-agent profiles only narrow their parents.
func (b *builder) resolve(p *Policy) {
	local := p.LocalLvl
	state := map[string]int{} // 0 new, 1 visiting, 2 done
	chains := map[string][]*Level{}
	var visit func(name, from string, via Pos) []*Level
	visit = func(name, from string, via Pos) []*Level {
		pr := p.profiles[name]
		switch state[name] {
		case 1:
			b.d.errorAt(via, "profile %s: cycle in extends/parent: %s leads back to %s", from, name, from)
			return nil
		case 2:
			return chains[name]
		}
		state[name] = 1
		var chain []*Level
		add := func(levels []*Level) {
			for _, l := range levels {
				dup := false
				for _, have := range chain {
					dup = dup || have == l
				}
				if !dup {
					chain = append(chain, l)
				}
			}
		}
		refs := pr.Extends
		var refPos []Pos
		for _, e := range rawOf(pr.Level).Extends {
			refPos = append(refPos, e.Pos)
		}
		if pr.Parent != "" {
			refs = []string{pr.Parent}
			refPos = []Pos{rawOf(pr.Level).Parent.Pos}
		}
		for i, ref := range refs {
			target, ok := b.lookup(p, ref, name)
			if !ok {
				b.d.errorAt(refPos[i], "profile %s: %q: %v%s", name, ref, ErrUnknownProfile, DidYouMean(strings.TrimPrefix(ref, builtinPrefix), profileNames(p, false)))
				continue
			}
			add(visit(target, name, refPos[i]))
		}
		add([]*Level{pr.Level})
		state[name] = 2
		chains[name] = chain
		return chain
	}
	global := []*Level{p.Global}
	for _, name := range p.order {
		chain := visit(name, name, p.profiles[name].Level.Pos)
		p.profiles[name].Effective = compiled.Merge(name, append(global, chain...), local, b.c)
	}
	p.noneProf = compiled.Merge("", global, local, b.c)
	for _, name := range p.order {
		pr := p.profiles[name]
		if pr.Parent == "" {
			continue
		}
		if target, ok := b.lookup(p, pr.Parent, name); ok && p.profiles[target].Effective != nil {
			b.narrows(pr, p.profiles[target].Effective)
		}
	}
}

// lookup resolves a profile reference from profile from: a user profile of
// that name (other than itself), else the built-in.
func (b *builder) lookup(p *Policy, ref, from string) (string, bool) {
	if strings.HasPrefix(ref, builtinPrefix) {
		_, ok := p.profiles[ref]
		return ref, ok
	}
	if _, ok := p.profiles[ref]; ok && ref != from {
		return ref, true
	}
	if _, ok := p.profiles[builtinPrefix+ref]; ok {
		return builtinPrefix + ref, true
	}
	return ref, false
}

// narrows reports, as escalation errors, everything in a sub-agent profile
// that its parent does not already grant.
func (b *builder) narrows(child *Profile, parent *Effective) {
	compiled.Escalations(child.Level, parent, func(pos Pos, format string, args ...any) {
		b.d.errorAt(pos, "profile %s: escalation: %s (a profile with a parent may only narrow it)", child.Name, fmt.Sprintf(format, args...))
	})
}

// CheckNarrows returns nil when profile child only narrows profile parent:
// every level of child's effective policy that parent's effective policy lacks grants nothing the
// parent does not. Otherwise it returns an [ErrorList] of escalations, each
// naming the key and where it was written. Daemon sessions use it for
// sub-agent sessions, whose profiles are chosen at run time.
func (p *Policy) CheckNarrows(child, parent string) error {
	cp, err := p.Effective(child)
	if err != nil {
		return err
	}
	pp, err := p.Effective(parent)
	if err != nil {
		return err
	}
	var errs ErrorList
	esc := func(pos Pos, format string, args ...any) {
		errs = append(errs, &Error{Pos: pos, Msg: fmt.Sprintf("profile %s: escalation: %s (profile %s may only narrow %s)",
			child, fmt.Sprintf(format, args...), child, parent)})
	}
	// Scalars, as merged: a level both effective policies share can still be overridden
	// by a later level of the parent.
	if baseRank[cp.Base] > baseRank[pp.Base] {
		esc(cp.BaseSource.Pos, "base %s is wider than the parent's base %s", cp.Base, pp.Base)
	}
	if cp.Mode == Audit && pp.Mode != Audit {
		esc(sourcePos(cp.ModeSource), "mode audit widens the parent's enforce")
	}
	if !cp.BlockIteration && pp.BlockIteration {
		esc(sourcePos(cp.BlockSource), "block_iteration false widens the parent's true")
	}
	if sealRank[cp.Seal] < sealRank[pp.Seal] {
		esc(sourcePos(cp.SealSource), "seal %s widens the parent's %s", cp.Seal, pp.Seal)
	}
	if cp.ClientEnv == ClientFull && pp.ClientEnv != ClientFull {
		esc(Pos{}, "client_env full widens the parent's %s", pp.ClientEnv)
	}
	for _, x := range []struct {
		name      string
		have, max int
	}{
		{"max_keys", cp.Limits.MaxKeys, pp.Limits.MaxKeys},
		{"max_bytes", cp.Limits.MaxBytes, pp.Limits.MaxBytes},
		{"max_value_bytes", cp.Limits.MaxValueBytes, pp.Limits.MaxValueBytes},
	} {
		if x.have > x.max {
			esc(sourcePos(cp.LimitSources[x.name]), "limits: %s %d is above the parent's %d", x.name, x.have, x.max)
		}
	}
	// Lists are unions: what the child's own levels add must be granted by
	// the parent, and what the parent's own levels take away (deny, hide)
	// must be taken away by the child too.
	for _, l := range cp.Levels {
		if !slices.Contains(pp.Levels, l) {
			compiled.Escalations(l, pp, esc)
		}
	}
	for _, l := range pp.Levels {
		if slices.Contains(cp.Levels, l) {
			continue
		}
		for _, e := range l.Deny {
			if !deniesGlob(cp, e.Glob.String()) {
				esc(e.Source.Pos, "the parent's deny %q is missing", e.Source.Entry)
			}
		}
		for _, h := range l.Hide {
			if !slices.Contains(cp.Hide, h.Entry) {
				esc(h.Pos, "the parent's hide %s is missing", h.Entry)
			}
		}
		for _, h := range l.Brokered {
			if !slices.Contains(cp.Brokered, h.Entry) {
				esc(h.Pos, "the parent's brokered %s is missing", h.Entry)
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// deniesGlob reports whether a level of effective policy denies exactly glob.
func deniesGlob(eff *Effective, glob string) bool {
	for _, l := range eff.Levels {
		for _, e := range l.Deny {
			if e.Glob.String() == glob {
				return true
			}
		}
	}
	return false
}

func sourcePos(s *Source) Pos {
	if s == nil {
		return Pos{}
	}
	return s.Pos
}

func (b *builder) rule(i int, r *rawRule) *Rule {
	name := fmt.Sprintf("rule %d", i+1)
	if r.Name != nil {
		name = "rule " + r.Name.V
	}
	rule := &Rule{Name: strings.TrimPrefix(name, "rule "), Pos: r.Pos}
	rule.Level = b.level(name, &r.rawLevel)
	rule.Tables = compiled.NewRuleTables(rule.Level, b.c)
	if r.Command != nil {
		g, err := pattern.Compile(r.Command.V)
		if err != nil {
			b.d.errorAt(r.Command.Pos, "%s: match: command: %v", name, err)
		} else {
			rule.Command = g
			rule.ByPath = strings.Contains(r.Command.V, "/")
		}
	}
	if r.Path != nil {
		if p := r.Path.V; !path.IsAbs(p) || path.Clean(p) != p || strings.ContainsAny(p, "\x00") {
			b.d.errorAt(r.Path.Pos, "%s: match: path: %q is not an absolute, clean path (one file, no globs)", name, p)
		} else {
			rule.Path, rule.ByPath = p, true
		}
	}
	if r.SHA256 != nil {
		h := strings.ToLower(r.SHA256.V)
		switch {
		case r.Path == nil:
			b.d.errorAt(r.SHA256.Pos, "%s: match: sha256 pins the file that match: path names: add a path", name)
		case len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "":
			b.d.errorAt(r.SHA256.Pos, "%s: match: sha256: want 64 hexadecimal digits (what sha256sum prints), got %d characters", name, len(r.SHA256.V))
		default:
			rule.SHA256 = h
		}
	}
	for _, a := range r.Args {
		g, err := pattern.Compile(a.V)
		if err != nil {
			b.d.errorAt(a.Pos, "%s: match: args: %v", name, err)
			continue
		}
		rule.Args = append(rule.Args, g)
	}
	rule.ArgsExact = r.ArgsExact != nil && r.ArgsExact.V
	for _, k := range r.Pass {
		g, err := pattern.Compile(k.V)
		switch {
		case err != nil:
			b.d.errorAt(k.Pos, "%s: pass: %v", name, err)
		case compiled.Steers(k.V):
			b.d.errorAt(k.Pos, "%s: pass: %s decides where a program sends its credential, which config it reads or what code it loads: a caller may not set it for a granted program", name, k.V)
		default:
			rule.Pass = append(rule.Pass, g)
		}
	}
	return rule
}

func validProfileName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}
