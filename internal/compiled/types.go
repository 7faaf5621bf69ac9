package compiled

import (
	"fmt"
	"path"
	"sort"
	"strings"
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

// SealRank orders the modes from the least to the most sealed: a level that
// may only narrow may only raise it. Read it, never change it.
var SealRank = map[SealMode]int{"": 0, SealOff: 0, SealOn: 1, SealRequired: 2}

// Stronger returns the more sealed of a and b ("" counts as off).
func (a SealMode) Stronger(b SealMode) SealMode {
	if SealRank[b] > SealRank[a] {
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
	// SealWrite are more places under HOME the sealed tree may write
	// (seal: {write: [...]}), in the same forms as SealMask.
	SealWrite []string
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
	StateDirs []string
	// Set once by the policy's builder (see [NewLevel]), read by
	// [Merge] and [Escalations].
	limitSources map[string]*Source
	modePos      Pos // where mode was written
	clientEnvPos Pos // where client_env was written
	raw          any // the policy's decoded level, for its own positions
}

// NewLevel returns an empty level named name, written at pos. raw is the
// policy package's decoded level ([Raw] returns it); modePos and
// clientEnvPos are where its mode and client_env were written, if they
// were. For the policy package's builder.
func NewLevel(name string, pos Pos, raw any, modePos, clientEnvPos Pos) *Level {
	return &Level{Name: name, Pos: pos, raw: raw, modePos: modePos, clientEnvPos: clientEnvPos, limitSources: map[string]*Source{}}
}

// SetLimitSource records where a level's limit (max_keys, max_bytes,
// max_value_bytes) was written, while the policy's builder fills it in.
func SetLimitSource(l *Level, limit string, s *Source) { l.limitSources[limit] = s }

// Raw returns the raw value [NewLevel] was given, nil for a level built
// otherwise.
func Raw(l *Level) any { return l.raw }

// ClientEnv says how a daemon session treats its client's environment
// snapshot.
type ClientEnv string

// Client environment treatments.
const (
	ClientFiltered ClientEnv = "filtered" // through the same admit, guard and deny steps
	ClientFull     ClientEnv = "full"     // as it is, minus the code-injection floor
)

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
	// Pass are the keys a caller may set for the program the rule grants
	// to (pass:, e.g. git's GIT_DIR for git's own children): the program
	// gets the caller's value of each, or none where the caller has none.
	// Every other key comes from the launch. A key that [Steers] never
	// passes, whatever glob matches it.
	Pass   []*pattern.Glob
	Level  *Level
	Tables *Tables
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
	// The stores people keep secrets in, each read by its own program as
	// a FromCommand helper is (Secret.Command holds its argv).
	FromKeychain SecretFrom = "keychain" // the OS keychain: secret-tool (libsecret) or security (macOS)
	FromOp       SecretFrom = "op"       // 1Password: op read op://...
)

// Helper reports whether secrets from f come from a helper program run
// with Secret.Command as its argv.
func (f SecretFrom) Helper() bool {
	return f == FromCommand || f == FromKeychain || f == FromOp
}

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
	Name string
	Pos  Pos
	From SecretFrom
	// FromDefault says the policy names no source for the secret (it is
	// not listed, or listed without from:): it comes from the launcher's
	// environment, else from the store.
	FromDefault bool
	Command     []string      // From.Helper(): the helper and its arguments
	Timeout     time.Duration // From.Helper(): zero means DefaultSecretTimeout
	Deliver     Delivery
	// Broker is the secret's own binding (secrets.NAME.broker): wherever
	// it reaches a child, the child gets a fake and the broker keeps the
	// real value. nil when the policy gives none (the catalog may; see
	// policy.Policy.Binding).
	Broker *Binding
}

// DefaultSecretTimeout bounds a secret helper command.
const DefaultSecretTimeout = 10 * time.Second

// Pos is a place in a policy source: a file name and a 1-based line and column.
// The zero Pos means "no position" (a value that came from a flag, not a file).
type Pos struct {
	File string
	Line int
	Col  int
}

// IsValid reports whether p names a place in a file.
func (p Pos) IsValid() bool { return p.Line > 0 }

// String returns "file:line:col", or the file name alone when p has no line.
func (p Pos) String() string {
	if !p.IsValid() {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Binding says where a brokered secret's real value may go (package
// broker): secrets.NAME.broker in a policy, or an entry of the built-in
// catalog (profiles/brokers.yaml). The child gets a fake; the broker swaps
// it for the real value only on requests to Hosts (proxy mode) or through
// BaseURL's endpoint (base-URL mode), in the places In names.
type Binding struct {
	// Name is the secret's variable name.
	Name string
	Pos  Pos
	// Hosts are "host", "host:port" or "*.suffix"; nil means base-URL
	// mode only.
	Hosts []string
	// In are "header:NAME" or "query:NAME"; nil means the broker's
	// default, the authorization headers.
	In []string
	// Methods and Paths, when set, are the only request methods and path
	// prefixes the real value is given to.
	Methods, Paths []string
	// BaseURL is the endpoint variable of base-URL mode; "" means none.
	BaseURL string
	// Upstream is where base-URL mode forwards when the user's environment
	// does not set BaseURL.
	Upstream string
	// Builtin is true for a binding of the catalog.
	Builtin bool
}

// Catalog is the built-in, curated data: the base sets and the groups. Their
// names pass the sensitive-name test (SSH_AUTH_SOCK is a capability, not a
// secret); their values still face the value test.
type Catalog struct {
	Bases  map[Base]*Group
	Groups map[string]*Group
}

// Group is a named, curated list of exact variable names.
type Group struct {
	Name        string
	Description string
	Keys        []string // exact names, as written
	Groups      []string // bases only: the groups a base includes
}

// AllKeys returns the group's keys and those of the groups it includes,
// without duplicates, in order.
func (c *Catalog) AllKeys(g *Group) []string {
	n := len(g.Keys)
	for _, name := range g.Groups {
		n += len(c.Groups[name].Keys)
	}
	if n == 0 {
		return nil
	}
	seen := make(map[string]bool, n)
	out := make([]string, 0, n)
	add := func(keys []string) {
		for _, k := range keys {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	add(g.Keys)
	for _, name := range g.Groups {
		add(c.Groups[name].Keys)
	}
	return out
}

// GroupNames returns the group names in sorted order.
func (c *Catalog) GroupNames() []string {
	names := make([]string, 0, len(c.Groups))
	for n := range c.Groups {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// BaseRank orders bases from the narrowest up; every base holds the keys of
// those below it. Read it, never change it.
var BaseRank = map[Base]int{"none": 0, "minimal": 1, "safe": 2}

// ValidName reports whether s is a valid environment variable name:
// [A-Za-z_][A-Za-z0-9_]*.
func ValidName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !IsNameByte(s[i]) {
			return false
		}
	}
	return true
}

// IsNameByte reports whether c may appear in a variable name: [A-Za-z0-9_].
func IsNameByte(c byte) bool {
	return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

// Policy is the part of a compiled policy that the engine reads besides its
// effective policies: the rules, the tools, the secrets and the project-local level. Its
// fields are those of the same name of the policy package's Policy, the
// same values, never copied or changed.
type Policy struct {
	LocalLvl *Level
	Rules    []*Rule
	Tools    map[string]*Tool
	Secrets  map[string]*Secret
}
