package policy

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// The decoder walks goccy/go-yaml's syntax tree itself instead of decoding into
// structs, so that every entry keeps its own position and every unknown key,
// wrong type, anchor or tag is an error at the place it was written.

// str is a scalar with the place it was written.
type str struct {
	V   string
	Pos Pos
}

type num struct {
	V   int
	Pos Pos
}

type rawSet struct {
	Key   str
	Value str
}

// boolv is a boolean with the place it was written.
type boolv struct {
	V   bool
	Pos Pos
}

type rawLimits struct {
	MaxKeys, MaxBytes, MaxValueBytes *num
}

// rawLevel is the part shared by the global policy, profiles and rules.
type rawLevel struct {
	Pos         Pos
	Keys        map[string]Pos // every key written, for the narrowing checks
	Description *str
	Base        *str
	Mode        *str
	Groups      []str
	Allow       []str
	Deny        []str
	Set         []rawSet
	Limits      rawLimits
	BlockIter   *boolv
	Seal        *str
	SealMask    []str // seal: {mask: [...]}
	SealWrite   []str // seal: {write: [...]}
	Hide        []str
	Brokered    []str
	Extends     []str // profiles only
	Parent      *str  // profiles only
	Passthrough []str // profiles only: shell_env_passthrough
	ClientEnv   *str  // profiles only
	StateDirs   []str // profiles only
}

type rawProfile struct {
	Name str
	rawLevel
}

type rawRule struct {
	Pos       Pos
	Name      *str
	Command   *str
	Path      *str
	SHA256    *str
	Args      []str
	ArgsExact *boolv
	Pass      []str
	rawLevel
}

type rawTool struct {
	Name        str
	Description *str
	InjectsEnv  []str
}

type rawSecret struct {
	Name    str
	From    *str
	Command []str
	Service *str // from: keychain
	Account *str // from: keychain
	Ref     *str // from: op
	Timeout *str
	Deliver *str
	Broker  *rawBinding
}

type rawRedact struct {
	Pos              Pos
	Enabled          *bool
	MinSecretLen     *num
	Entropy          *bool
	EntropyMinLen    *num
	EntropyThreshold *float64
	ThresholdPos     Pos
}

type rawFile struct {
	Version  *num
	Shell    *str
	Audit    *str // audit: {path: ...}
	AuditErr *str // audit: {on_error: ...}
	AuditPos Pos
	Redact   *rawRedact
	Global   rawLevel
	Profiles []rawProfile
	Rules    []rawRule
	Tools    []rawTool
	Secrets  []rawSecret
	Broker   *rawBroker
	SSH      *rawSSH
}

type decoder struct {
	file string
	src  []byte
	errs ErrorList
}

func (d *decoder) pos(tk *token.Token) Pos {
	if tk == nil || tk.Position == nil {
		return Pos{File: d.file}
	}
	return Pos{File: d.file, Line: tk.Position.Line, Col: tk.Position.Column}
}

func (d *decoder) errorAt(p Pos, format string, args ...any) {
	d.errs = append(d.errs, &Error{Pos: p, Msg: fmt.Sprintf(format, args...), Excerpt: excerpt(d.src, p)})
}

func (d *decoder) errorf(n ast.Node, format string, args ...any) {
	d.errorAt(d.nodePos(n), format, args...)
}

// nodePos returns where a node starts. A mapping starts at its first key,
// not at the ':' token the parser hands back for it.
func (d *decoder) nodePos(n ast.Node) Pos {
	switch m := n.(type) {
	case nil:
		return Pos{File: d.file}
	case *ast.MappingValueNode:
		return d.nodePos(m.Key)
	case *ast.MappingNode:
		if !m.IsFlowStyle && len(m.Values) > 0 {
			return d.nodePos(m.Values[0].Key)
		}
	}
	return d.pos(n.GetToken())
}

// parseYAML parses src into its single document body.
func (d *decoder) parseYAML() ast.Node {
	f, err := parser.ParseBytes(d.src, 0)
	if err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) {
			msg := ye.GetMessage()
			d.errorAt(d.pos(ye.GetToken()), "yaml: %s", msg)
		} else {
			d.errorAt(Pos{File: d.file}, "yaml: %v", err)
		}
		return nil
	}
	var docs []*ast.DocumentNode
	for _, doc := range f.Docs {
		if doc != nil && doc.Body != nil {
			docs = append(docs, doc)
		}
	}
	switch len(docs) {
	case 0:
		d.errorAt(Pos{File: d.file, Line: 1, Col: 1}, "the policy is empty (it needs at least \"version: 1\")")
		return nil
	case 1:
		return docs[0].Body
	}
	d.errorf(docs[1].Body, "a policy file holds one YAML document, not %d", len(docs))
	return nil
}

// plain rejects what a policy never needs and a reader could misread:
// anchors, aliases, tags and merge keys.
func (d *decoder) plain(n ast.Node) bool {
	switch n.(type) {
	case *ast.AnchorNode:
		d.errorf(n, "anchors are not supported in a policy; write the value out")
		return false
	case *ast.AliasNode:
		d.errorf(n, "aliases are not supported in a policy; write the value out")
		return false
	case *ast.TagNode:
		d.errorf(n, "tags are not supported in a policy")
		return false
	case *ast.MergeKeyNode:
		d.errorf(n, "merge keys are not supported in a policy")
		return false
	}
	return true
}

// fields walks a mapping and calls the handler named by each key. An unknown
// key is an error that lists the known ones. A null node is an empty mapping.
func (d *decoder) fields(n ast.Node, what string, handlers map[string]func(key str, v ast.Node)) map[string]Pos {
	seen := map[string]Pos{}
	d.eachPair(n, what, func(key str, v ast.Node) {
		h, ok := handlers[key.V]
		if !ok {
			d.errorAt(key.Pos, "%s: unknown key %q%s (known: %s)", what, key.V, DidYouMean(key.V, slices.Sorted(maps.Keys(handlers))), knownKeys(handlers))
			return
		}
		seen[key.V] = key.Pos
		h(key, v)
	})
	return seen
}

func knownKeys(handlers map[string]func(str, ast.Node)) string {
	keys := make([]string, 0, len(handlers))
	for k := range handlers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// eachPair calls fn for each key and value of a mapping, in source order.
func (d *decoder) eachPair(n ast.Node, what string, fn func(key str, v ast.Node)) {
	if n == nil || !d.plain(n) {
		return
	}
	var pairs []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.NullNode:
		return
	case *ast.MappingNode:
		pairs = m.Values
	case *ast.MappingValueNode:
		pairs = []*ast.MappingValueNode{m}
	default:
		d.errorf(n, "%s: want a mapping, got %s", what, kind(n))
		return
	}
	for _, p := range pairs {
		if !d.plain(p.Key) {
			continue
		}
		k, ok := p.Key.(*ast.StringNode)
		if !ok {
			d.errorf(p.Key, "%s: a key must be a string, got %s", what, kind(p.Key))
			continue
		}
		if p.Value != nil && !d.plain(p.Value) {
			continue
		}
		fn(str{V: k.Value, Pos: d.nodePos(k)}, p.Value)
	}
}

func kind(n ast.Node) string {
	switch n.(type) {
	case nil, *ast.NullNode:
		return "nothing"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode, *ast.LiteralNode:
		return "a string"
	case *ast.IntegerNode:
		return "a number"
	case *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "a number"
	case *ast.BoolNode:
		return "a boolean"
	}
	return strings.ToLower(n.Type().String())
}

// optStr returns a handler that decodes an optional string into *dst.
// optBool returns a handler that decodes a boolean into *dst.
func (d *decoder) optBool(what string, dst **boolv) func(str, ast.Node) {
	return func(_ str, v ast.Node) {
		b, ok := v.(*ast.BoolNode)
		if !ok {
			d.errorf(v, "%s: want true or false, got %s", what, kind(v))
			return
		}
		*dst = &boolv{V: b.Value, Pos: d.nodePos(v)}
	}
}

func (d *decoder) optStr(what string, dst **str) func(str, ast.Node) {
	return func(_ str, v ast.Node) {
		if s, ok := d.str(what, v); ok {
			*dst = &s
		}
	}
}

// str decodes a string scalar.
func (d *decoder) str(what string, n ast.Node) (str, bool) {
	if n == nil {
		d.errorAt(Pos{File: d.file}, "%s: want a string, got nothing", what)
		return str{}, false
	}
	switch s := n.(type) {
	case *ast.StringNode:
		return d.checkText(what, str{V: s.Value, Pos: d.nodePos(n)})
	case *ast.LiteralNode:
		return d.checkText(what, str{V: s.Value.Value, Pos: d.nodePos(n)})
	}
	d.errorf(n, "%s: want a string, got %s", what, kind(n))
	return str{}, false
}

func (d *decoder) checkText(what string, s str) (str, bool) {
	if strings.IndexByte(s.V, 0) >= 0 {
		d.errorAt(s.Pos, "%s: a NUL byte cannot be part of an environment string", what)
		return str{}, false
	}
	return s, true
}

// profileRef decodes a profile reference. goccy/go-yaml reads the plain
// scalar builtin:NAME in a flow list ([builtin:claude]) as a one-pair
// mapping; when the source has no space around the ':', it is the reference.
func (d *decoder) profileRef(what string, n ast.Node) (str, bool) {
	if s, ok := d.colonScalar(n, "builtin"); ok {
		return str{V: builtinPrefix + strings.TrimPrefix(s.V, "builtin:"), Pos: s.Pos}, true
	}
	return d.str(what, n)
}

// colonScalar reads back a plain scalar KEY:VALUE (no space around the
// ':') that goccy/go-yaml parsed as a one-pair mapping in a flow list, for
// the keys given; ok is false for anything else.
func (d *decoder) colonScalar(n ast.Node, keys ...string) (str, bool) {
	var pair *ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingValueNode:
		pair = m
	case *ast.MappingNode:
		if len(m.Values) == 1 {
			pair = m.Values[0]
		}
	}
	if pair != nil {
		k, kok := pair.Key.(*ast.StringNode)
		v, vok := pair.Value.(*ast.StringNode)
		if kok && vok && slices.Contains(keys, k.Value) {
			kp, vp := d.nodePos(k), d.nodePos(v)
			if kp.Line == vp.Line && vp.Col == kp.Col+len(k.Value)+1 {
				return str{V: k.Value + ":" + v.Value, Pos: kp}, true
			}
		}
	}
	return str{}, false
}

// value decodes the value of a set entry. Numbers are taken as written;
// booleans must be quoted, because YAML's yes/no/on/off are easy to misread.
func (d *decoder) value(what string, n ast.Node) (str, bool) {
	switch v := n.(type) {
	case *ast.IntegerNode:
		return str{V: v.GetToken().Value, Pos: d.nodePos(n)}, true
	case *ast.FloatNode:
		return str{V: v.GetToken().Value, Pos: d.nodePos(n)}, true
	case *ast.BoolNode:
		d.errorf(n, "%s: write a boolean value as a quoted string (\"%s\")", what, v.GetToken().Value)
		return str{}, false
	case *ast.NullNode:
		d.errorf(n, "%s: want a string value, got nothing (use \"\" for an empty value)", what)
		return str{}, false
	}
	return d.str(what, n)
}

func (d *decoder) strList(what string, n ast.Node) []str {
	if n == nil || !d.plain(n) {
		return nil
	}
	switch s := n.(type) {
	case *ast.NullNode:
		return nil
	case *ast.SequenceNode:
		out := make([]str, 0, len(s.Values))
		for _, v := range s.Values {
			if v != nil && !d.plain(v) {
				continue
			}
			if x, ok := d.str(what+" entry", v); ok {
				out = append(out, x)
			}
		}
		return out
	}
	d.errorf(n, "%s: want a list, got %s", what, kind(n))
	return nil
}

func (d *decoder) num(what string, n ast.Node) *num {
	v, ok := n.(*ast.IntegerNode)
	if !ok {
		d.errorf(n, "%s: want a whole number, got %s", what, kind(n))
		return nil
	}
	i, err := strconv.Atoi(strings.ReplaceAll(v.GetToken().Value, "_", ""))
	if err != nil || i < 0 {
		d.errorf(n, "%s: want a whole number from 0 up, got %s", what, v.GetToken().Value)
		return nil
	}
	return &num{V: i, Pos: d.nodePos(n)}
}

func (d *decoder) sequence(what string, n ast.Node, fn func(ast.Node)) {
	if n == nil || !d.plain(n) {
		return
	}
	switch s := n.(type) {
	case *ast.NullNode:
		return
	case *ast.SequenceNode:
		for _, v := range s.Values {
			if v != nil && d.plain(v) {
				fn(v)
			}
		}
		return
	}
	d.errorf(n, "%s: want a list, got %s", what, kind(n))
}

// levelHandlers returns the handlers for the keys every level shares.
func (d *decoder) levelHandlers(what string, l *rawLevel) map[string]func(str, ast.Node) {
	return map[string]func(str, ast.Node){
		"base":   d.optStr(what+": base", &l.Base),
		"mode":   d.optStr(what+": mode", &l.Mode),
		"groups": func(_ str, v ast.Node) { l.Groups = d.strList(what+": groups", v) },
		"allow":  func(_ str, v ast.Node) { l.Allow = d.strList(what+": allow", v) },
		"deny":   func(_ str, v ast.Node) { l.Deny = d.strList(what+": deny", v) },
		"set": func(_ str, v ast.Node) {
			d.eachPair(v, what+": set", func(key str, val ast.Node) {
				if x, ok := d.value(what+": set "+key.V, val); ok {
					l.Set = append(l.Set, rawSet{Key: key, Value: x})
				}
			})
		},
		"hide":            func(_ str, v ast.Node) { l.Hide = d.strList(what+": hide", v) },
		"brokered":        func(_ str, v ast.Node) { l.Brokered = d.strList(what+": brokered", v) },
		"block_iteration": d.optBool(what+": block_iteration", &l.BlockIter),
		"seal": func(_ str, v ast.Node) {
			mode := v
			switch v.(type) {
			case *ast.MappingNode, *ast.MappingValueNode:
				mode = nil
				d.fields(v, what+": seal", map[string]func(str, ast.Node){
					"mode":  func(_ str, v ast.Node) { mode = v },
					"mask":  func(_ str, v ast.Node) { l.SealMask = d.strList(what+": seal: mask", v) },
					"write": func(_ str, v ast.Node) { l.SealWrite = d.strList(what+": seal: write", v) },
				})
				if mode == nil {
					return
				}
			}
			s, ok := d.str(what+": seal: mode", mode)
			if !ok {
				return
			}
			if _, known := sealRank[SealMode(s.V)]; !known {
				d.errorf(mode, "%s: seal: want off, on or required, got %q", what, s.V)
				return
			}
			l.Seal = &s
		},
		"limits": func(_ str, v ast.Node) {
			d.fields(v, what+": limits", map[string]func(str, ast.Node){
				"max_keys":        func(_ str, v ast.Node) { l.Limits.MaxKeys = d.num(what+": limits: max_keys", v) },
				"max_bytes":       func(_ str, v ast.Node) { l.Limits.MaxBytes = d.num(what+": limits: max_bytes", v) },
				"max_value_bytes": func(_ str, v ast.Node) { l.Limits.MaxValueBytes = d.num(what+": limits: max_value_bytes", v) },
			})
		},
	}
}

func (d *decoder) decodeFile(root ast.Node) *rawFile {
	f := &rawFile{}
	h := d.levelHandlers("global", &f.Global)
	h["version"] = func(_ str, v ast.Node) { f.Version = d.num("version", v) }
	h["shell"] = d.optStr("shell", &f.Shell)
	h["description"] = d.optStr("description", &f.Global.Description)
	h["profiles"] = func(_ str, v ast.Node) {
		d.eachPair(v, "profiles", func(name str, pv ast.Node) {
			p := rawProfile{Name: name}
			p.Pos = name.Pos
			what := "profile " + name.V
			ph := d.levelHandlers(what, &p.rawLevel)
			ph["description"] = d.optStr(what+": description", &p.Description)
			ph["extends"] = func(_ str, v ast.Node) {
				d.sequence(what+": extends", v, func(n ast.Node) {
					if s, ok := d.profileRef(what+": extends entry", n); ok {
						p.Extends = append(p.Extends, s)
					}
				})
			}
			ph["shell_env_passthrough"] = func(_ str, v ast.Node) {
				p.Passthrough = d.strList(what+": shell_env_passthrough", v)
			}
			ph["client_env"] = d.optStr(what+": client_env", &p.ClientEnv)
			ph["state_dirs"] = func(_ str, v ast.Node) {
				p.StateDirs = d.strList(what+": state_dirs", v)
			}
			ph["parent"] = func(_ str, v ast.Node) {
				if s, ok := d.profileRef(what+": parent", v); ok {
					p.Parent = &s
				}
			}
			p.Keys = d.fields(pv, what, ph)
			f.Profiles = append(f.Profiles, p)
		})
	}
	h["rules"] = func(_ str, v ast.Node) {
		d.sequence("rules", v, func(rv ast.Node) {
			r := rawRule{Pos: d.nodePos(rv)}
			r.rawLevel.Pos = r.Pos
			what := fmt.Sprintf("rule %d", len(f.Rules)+1)
			rh := d.levelHandlers(what, &r.rawLevel)
			delete(rh, "base") // the base belongs to the policy and profiles
			rh["name"] = d.optStr(what+": name", &r.Name)
			rh["description"] = d.optStr(what+": description", &r.Description)
			rh["pass"] = func(_ str, v ast.Node) { r.Pass = d.strList(what+": pass", v) }
			rh["match"] = func(key str, v ast.Node) {
				d.fields(v, what+": match", map[string]func(str, ast.Node){
					"command":    d.optStr(what+": match: command", &r.Command),
					"path":       d.optStr(what+": match: path", &r.Path),
					"sha256":     d.optStr(what+": match: sha256", &r.SHA256),
					"args":       func(_ str, v ast.Node) { r.Args = d.strList(what+": match: args", v) },
					"args_exact": d.optBool(what+": match: args_exact", &r.ArgsExact),
				})
				switch {
				case r.Command == nil && r.Path == nil:
					d.errorAt(key.Pos, "%s: match needs a command or a path", what)
				case r.Command != nil && r.Path != nil:
					d.errorAt(r.Path.Pos, "%s: match: path and command name the program twice: keep one", what)
				}
			}
			r.Keys = d.fields(rv, what, rh)
			if _, ok := r.Keys["match"]; !ok {
				d.errorAt(r.Pos, "%s: a rule needs a match", what)
			}
			f.Rules = append(f.Rules, r)
		})
	}
	h["tools"] = func(_ str, v ast.Node) {
		d.eachPair(v, "tools", func(name str, tv ast.Node) {
			t := rawTool{Name: name}
			what := "tool " + name.V
			d.fields(tv, what, map[string]func(str, ast.Node){
				"description": d.optStr(what+": description", &t.Description),
				"injects_env": func(_ str, v ast.Node) { t.InjectsEnv = d.strList(what+": injects_env", v) },
			})
			f.Tools = append(f.Tools, t)
		})
	}
	h["audit"] = func(key str, v ast.Node) {
		f.AuditPos = key.Pos
		d.fields(v, "audit", map[string]func(str, ast.Node){
			"path":     d.optStr("audit: path", &f.Audit),
			"on_error": d.optStr("audit: on_error", &f.AuditErr),
		})
	}
	h["redact"] = func(key str, v ast.Node) {
		r := &rawRedact{Pos: key.Pos}
		boolean := func(what string, dst **bool) func(str, ast.Node) {
			return func(_ str, v ast.Node) {
				b, ok := v.(*ast.BoolNode)
				if !ok {
					d.errorf(v, "redact: %s: want true or false, got %s", what, kind(v))
					return
				}
				*dst = &b.Value
			}
		}
		d.fields(v, "redact", map[string]func(str, ast.Node){
			"enabled":         boolean("enabled", &r.Enabled),
			"min_secret_len":  func(_ str, v ast.Node) { r.MinSecretLen = d.num("redact: min_secret_len", v) },
			"entropy":         boolean("entropy", &r.Entropy),
			"entropy_min_len": func(_ str, v ast.Node) { r.EntropyMinLen = d.num("redact: entropy_min_len", v) },
			"entropy_threshold": func(_ str, v ast.Node) {
				f, ok := v.(*ast.FloatNode)
				if !ok {
					d.errorf(v, "redact: entropy_threshold: want a number such as 0.75, got %s", kind(v))
					return
				}
				r.EntropyThreshold, r.ThresholdPos = &f.Value, d.nodePos(v)
			},
		})
		f.Redact = r
	}
	h["secrets"] = func(_ str, v ast.Node) {
		d.eachPair(v, "secrets", func(name str, sv ast.Node) {
			sec := rawSecret{Name: name}
			what := "secret " + name.V
			d.fields(sv, what, map[string]func(str, ast.Node){
				"from":    d.optStr(what+": from", &sec.From),
				"command": func(_ str, v ast.Node) { sec.Command = d.strList(what+": command", v) },
				"service": d.optStr(what+": service", &sec.Service),
				"account": d.optStr(what+": account", &sec.Account),
				"ref":     d.optStr(what+": ref", &sec.Ref),
				"timeout": d.optStr(what+": timeout", &sec.Timeout),
				"deliver": d.optStr(what+": deliver", &sec.Deliver),
				"broker":  func(_ str, v ast.Node) { sec.Broker = d.binding(what+": broker", v) },
			})
			f.Secrets = append(f.Secrets, sec)
		})
	}
	h["broker"] = func(key str, v ast.Node) {
		rb := &rawBroker{Pos: key.Pos}
		d.fields(v, "broker", map[string]func(str, ast.Node){
			"egress":      d.optStr("broker: egress", &rb.Egress),
			"upstream_ca": func(_ str, v ast.Node) { rb.UpstreamCA = d.strList("broker: upstream_ca", v) },
		})
		f.Broker = rb
	}
	h["ssh"] = func(key str, v ast.Node) {
		rs := &rawSSH{Pos: key.Pos}
		d.fields(v, "ssh", map[string]func(str, ast.Node){
			"keys":  func(_ str, v ast.Node) { rs.Keys = d.strList("ssh: keys", v) },
			"hosts": func(_ str, v ast.Node) { rs.Hosts = d.strList("ssh: hosts", v) },
		})
		f.SSH = rs
	}
	f.Global.Pos = d.nodePos(root)
	f.Global.Keys = d.fields(root, "policy", h)
	if f.Version == nil {
		d.errorAt(Pos{File: d.file, Line: 1, Col: 1}, "policy: missing \"version: 1\"")
	} else if f.Version.V != 1 {
		d.errorAt(f.Version.Pos, "version: this envsieve reads version 1, not %d", f.Version.V)
	}
	return f
}
