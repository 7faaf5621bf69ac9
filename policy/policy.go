package policy

import (
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/envsieve/envsieve/internal/pattern"
)

// Mode says whether a policy is enforced or only recorded.
type Mode string

const (
	// Enforce hands the child only what the policy admits.
	Enforce Mode = "enforce"
	// Audit hands the child the parent environment minus the code-injection
	// floor, and records what Enforce would have dropped (the migration mode).
	Audit Mode = "audit"
)

// SealMode says whether a launch gets the sealed filesystem view (package
// seal): off; on (sealed where the system allows it, else a notice and no
// seal); required (no launch without it).
type SealMode string

// The seal modes.
const (
	SealOff      SealMode = "off"
	SealOn       SealMode = "on"
	SealRequired SealMode = "required"
)

// sealRank orders the modes from the least to the most sealed: a level that
// may only narrow may only raise it.
var sealRank = map[SealMode]int{"": 0, SealOff: 0, SealOn: 1, SealRequired: 2}

// Stronger returns the more sealed of a and b ("" counts as off).
func (a SealMode) Stronger(b SealMode) SealMode {
	if sealRank[b] > sealRank[a] {
		return b
	}
	if a == "" {
		return SealOff
	}
	return a
}

// Base names one of the built-in base sets: "safe", "minimal" or "none".
type Base string

// DefaultBase is the base of a policy that does not name one.
const DefaultBase Base = "safe"

// Limits bound the size of a child's environment. A zero field means the
// field's default (see [DefaultLimits]).
type Limits struct {
	MaxKeys       int // number of variables
	MaxBytes      int // sum of len(key)+len(value)+2 over all variables
	MaxValueBytes int // the longest single value
}

// DefaultLimits apply where no level of a policy sets a limit. MaxValueBytes
// stays well below the kernel's 128 KiB limit on one environment string.
var DefaultLimits = Limits{MaxKeys: 1000, MaxBytes: 1 << 20, MaxValueBytes: 64 << 10}

// kernelMaxString is the Linux limit on one argv or environment string,
// including its NUL (MAX_ARG_STRLEN).
const kernelMaxString = 128 << 10

// Source says where a decision came from: which level of which policy, which
// list, the entry as it was written, and where.
type Source struct {
	Level string // "global", "profile claude", "rule gh", "tool web", "local", "request"
	List  string // "base", "group", "allow", "deny", "set", "injects_env", "secret"
	Entry string // the entry as written: "MYAPP_*", "safe", "proxy", "GITHUB_TOKEN"
	Pos   Pos
}

// String describes s for people: `allow "MYAPP_*" of profile claude (p.yaml:3:9)`.
func (s *Source) String() string {
	if s == nil {
		return ""
	}
	out := fmt.Sprintf("%s %q of %s", s.List, s.Entry, s.Level)
	if s.Pos.File != "" {
		out += " (" + s.Pos.String() + ")"
	}
	return out
}

// Entry is one compiled allow or deny pattern.
type Entry struct {
	Glob   *pattern.Glob
	Source *Source
}

// Setting is one literal value from a set list.
type Setting struct {
	Key, Value string
	Env        string // "Key=Value", built once
	Source     *Source
}

// Level is one compiled level of a policy: the global policy, a profile, a
// rule, a tool or a project-local file. Nil pointer fields were not written.
type Level struct {
	Name          string // "global", "profile claude", "rule gh", "local"
	Pos           Pos
	Description   string
	Base          *Base
	BaseSource    *Source
	Mode          *Mode
	Groups        []*Source // List "group", Entry the group name
	Allow         []Entry
	Deny          []Entry
	Set           []Setting
	MaxKeys       *int
	MaxBytes      *int
	MaxValueBytes *int
	// BlockIteration asks the shim to hide the level's hidden keys from
	// environ; nil when the level does not say.
	BlockIteration *bool
	BlockSource    *Source
	// Seal asks for the sealed filesystem view; nil when the level does
	// not say.
	Seal       *SealMode
	SealSource *Source
	// SealMask are more paths the seal masks (seal: {mask: [...]}): "~/"
	// and a clean path below HOME, or a clean absolute path.
	SealMask []string
	// Hide names keys the shim hides besides the sensitive keys admitted by
	// exact name (List "hide").
	Hide []*Source
	// Brokered names keys whose real value the child never gets: it gets
	// a fake, and the broker swaps it on the way to the binding's hosts
	// (List "brokered"; each has a binding, the policy's or the catalog's).
	Brokered []*Source
	// Passthrough and ClientEnv are for daemon sessions (profiles only):
	// the daemon's own variables handed to layer 1, and how the client's
	// snapshot is treated.
	Passthrough []*Source
	ClientEnv   *ClientEnv
	// StateDirs are the directories under HOME the profile's agent keeps
	// its state in, "~/" and a clean relative path (profiles only).
	StateDirs    []string
	limitSources map[string]*Source
	raw          *rawLevel
}

// ClientEnv says how a daemon session treats its client's environment
// snapshot.
type ClientEnv string

// Client environment treatments.
const (
	ClientFiltered ClientEnv = "filtered" // through the same admit, guard and deny steps
	ClientFull     ClientEnv = "full"     // as it is, minus the code-injection floor
)

// Profile is a named set of levels: its own, after those it extends or the
// parent it narrows.
type Profile struct {
	Name        string // as written; built-in profiles are "builtin:NAME"
	Description string
	Extends     []string
	Parent      string // a sub-agent profile: may only narrow its parent
	Level       *Level
	Plan        *Plan // the merged view the engine uses
}

// Rule is a command rule: when a request's command matches, its level joins
// the resolution. The first matching rule wins.
type Rule struct {
	Name    string
	Pos     Pos
	Command *pattern.Glob // matches the basename, or the path when it holds a '/'
	// Path names one program by its absolute path (match: path), in place
	// of Command.
	Path   string
	ByPath bool // Command holds a '/', or Path is set
	// SHA256 pins the program at Path to one content (lowercase hex): the
	// rule applies only to those bytes, wherever Path is, and the launcher
	// runs the very bytes it hashed. "" when the rule pins nothing.
	SHA256 string
	Args   []*pattern.Glob // leading arguments, in order
	// ArgsExact pins the whole argv: no argument may follow Args.
	ArgsExact bool
	Level     *Level
	Tables    *Tables
}

// MatchArgv reports whether argv (argv[0] is the program as written, or a
// path) matches the rule.
func (r *Rule) MatchArgv(argv []string) bool {
	return len(argv) > 0 && r.MatchProgram(argv[0]) && r.MatchArgs(argv[1:])
}

// MatchArgs reports whether a program's arguments (argv without argv[0])
// match the rule's: its Args lead them, and with ArgsExact nothing follows.
func (r *Rule) MatchArgs(args []string) bool {
	if len(args) < len(r.Args) || r.ArgsExact && len(args) != len(r.Args) {
		return false
	}
	for i, g := range r.Args {
		if !g.Match(args[i]) {
			return false
		}
	}
	return true
}

// MatchProgram reports whether the program name or path matches the rule's
// command pattern. A path pattern needs a path; a name pattern is matched
// against the basename.
func (r *Rule) MatchProgram(prog string) bool {
	if r.Path != "" {
		return strings.Contains(prog, "/") && path.Clean(prog) == r.Path
	}
	if r.Command == nil {
		return false
	}
	if r.ByPath {
		return strings.Contains(prog, "/") && r.Command.Match(path.Clean(prog))
	}
	return r.Command.Match(path.Base(prog))
}

// Tool is a tool-managed secret tier: a request naming the tool receives the
// variables it injects.
type Tool struct {
	Name        string
	Description string
	Pos         Pos
	InjectsEnv  []*Source // List "injects_env", Entry the variable name
}

// SecretFrom names where a secret's value comes from.
type SecretFrom string

// Secret sources.
const (
	FromEnv     SecretFrom = "env"     // the launcher's own environment
	FromStore   SecretFrom = "store"   // the encrypted store of `envsieve secrets`
	FromCommand SecretFrom = "command" // a helper program's standard output
)

// Delivery says how a secret reaches the child.
type Delivery string

// Deliveries.
const (
	DeliverEnv  Delivery = "env"  // as the variable NAME
	DeliverFile Delivery = "file" // in a private 0600 file whose path is NAME_FILE
)

// Secret says where a named secret comes from and how it is delivered. A
// name the policy does not declare comes from the launcher's environment, as
// an environment variable.
type Secret struct {
	Name    string
	Pos     Pos
	From    SecretFrom
	Command []string      // FromCommand: the helper and its arguments
	Timeout time.Duration // FromCommand: zero means DefaultSecretTimeout
	Deliver Delivery
	// Broker is the secret's own binding (secrets.NAME.broker): wherever
	// it reaches a child, the child gets a fake and the broker keeps the
	// real value. nil when the policy gives none (the catalog may; see
	// Policy.Binding).
	Broker *Binding
}

// DefaultSecretTimeout bounds a secret helper command.
const DefaultSecretTimeout = 10 * time.Second

// SecretSpec returns how the named secret is fetched and delivered.
func (p *Policy) SecretSpec(name string) *Secret {
	if s, ok := p.Secrets[name]; ok {
		return s
	}
	return &Secret{Name: name, From: FromEnv, Deliver: DeliverEnv}
}

// Redact configures the redaction of the child's output.
type Redact struct {
	// Enabled masks withheld and injected secret values in the child's
	// stdout and stderr; default true.
	Enabled bool
	// MinSecretLen is the shortest value that is masked (shorter values,
	// such as "docker", would mask ordinary words); default 8.
	MinSecretLen int
	// Entropy also masks credential-looking strings nobody named: known
	// token formats and high-entropy tokens; default true.
	Entropy bool
	// EntropyMinLen is the shortest token the entropy test judges; 0 means
	// the detector's default (20).
	EntropyMinLen int
	// EntropyThreshold is the least Shannon entropy of a flagged token, as a
	// share of the most its length and alphabet allow; 0 means the
	// detector's default (0.75).
	EntropyThreshold float64
}

// Policy is a loaded, validated and compiled policy. It is immutable and safe
// for concurrent use.
type Policy struct {
	File     string // where it came from: a path, or "embedded:default.yaml"
	Local    string // the project-local file merged in, if any
	Shell    string // the shell `envsieve sh` runs; "" means /bin/sh
	Global   *Level
	LocalLvl *Level
	Rules    []*Rule
	Tools    map[string]*Tool
	Secrets  map[string]*Secret
	Redact   Redact
	// AuditPath is where the audit log goes: a file ("~/" is the home
	// directory), "-" for stderr, "" for no log.
	AuditPath string
	// Broker are the top-level broker settings.
	Broker   BrokerSettings
	profiles map[string]*Profile // user and built-in, by name
	order    []string            // user profiles in file order, then built-ins
	noneProf *Plan               // the plan when no profile is asked for
	catalog  *Catalog
	raw      *rawFile // kept to rebuild with a project-local level
	src      []byte

	builtinsEager bool // the built-ins are in profiles already
	lazyOnce      sync.Once
	lazy          map[string]*Profile // built-ins compiled on first use
	lazyOrder     []string
	lazyErr       error
}

// Profile returns the named profile: the user's, else the built-in of that
// name. The name "builtin:NAME" always means the built-in.
func (p *Policy) Profile(name string) (*Profile, bool) {
	if pr, ok := p.profiles[name]; ok {
		return pr, true
	}
	if pr, ok := p.profiles[builtinPrefix+name]; ok {
		return pr, true
	}
	if p.builtinsEager {
		return nil, false
	}
	lazy, _ := p.lazyBuiltins()
	if pr, ok := lazy[name]; ok {
		return pr, true
	}
	pr, ok := lazy[builtinPrefix+name]
	return pr, ok
}

// Profiles returns every profile, the user's in file order, then the built-ins.
func (p *Policy) Profiles() []*Profile {
	out := make([]*Profile, 0, len(p.order))
	for _, n := range p.order {
		out = append(out, p.profiles[n])
	}
	if !p.builtinsEager {
		lazy, order := p.lazyBuiltins()
		for _, n := range order {
			out = append(out, lazy[n])
		}
	}
	return out
}

// Plan returns the merged plan for a profile name; "" means no profile.
func (p *Policy) Plan(profile string) (*Plan, error) {
	if profile == "" {
		return p.noneProf, nil
	}
	pr, ok := p.Profile(profile)
	if !ok {
		if p.lazyErr != nil {
			return nil, p.lazyErr
		}
		return nil, fmt.Errorf("profile %q: %w", profile, ErrUnknownProfile)
	}
	return pr.Plan, nil
}

// Catalog returns the built-in bases and groups the policy was compiled with.
func (p *Policy) Catalog() *Catalog { return p.catalog }

const builtinPrefix = "builtin:"
