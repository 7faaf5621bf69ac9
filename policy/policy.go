package policy

import (
	"fmt"
	"strings"
	"sync"

	"github.com/envsieve/envsieve/internal/compiled"
)

// kernelMaxString is the Linux limit on one argv or environment string,
// including its NUL (MAX_ARG_STRLEN).
const kernelMaxString = 128 << 10

// Profile is a named set of levels: its own, after those it extends or the
// parent it narrows.
type Profile struct {
	Name        string // as written; built-in profiles are "builtin:NAME"
	Description string
	Extends     []string
	Parent      string // a sub-agent profile: may only narrow its parent
	Level       *Level
	Effective   *Effective // the merged view the engine uses
}

// SecretSpec returns how the named secret is fetched and delivered.
func (p *Policy) SecretSpec(name string) *Secret {
	if s, ok := p.Secrets[name]; ok {
		return s
	}
	return &Secret{Name: name, From: FromEnv, FromDefault: true, Deliver: deliverEnv}
}

// Redact configures the redaction of the child's output.
type Redact struct {
	// Enabled masks dropped and injected secret values in the child's
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
	// AuditWarn makes a failed write to the audit log a warning (the
	// launch goes on, the events lost counted); false, the default, ends
	// the launch (audit: {on_error: fail}).
	AuditWarn bool
	// Broker are the top-level broker settings.
	Broker BrokerSettings
	// SSH are the ssh agent filter's settings (ssh:).
	SSH      SSHSettings
	profiles map[string]*Profile // user and built-in, by name
	order    []string            // user profiles in file order, then built-ins
	noneProf *Effective          // the effective policy when no profile is asked for
	catalog  *Catalog
	raw      *rawFile // kept to rebuild with a project-local level
	src      []byte

	engine compiled.Policy // the fields above that the engine reads

	builtinsEager bool // the built-ins are in profiles already
	lazyOnce      sync.Once
	lazy          map[string]*Profile // built-ins compiled on first use
	lazyOrder     []string
	lazyErr       error
}

// Compiled returns the part of p that the engine (package sieve) reads
// besides its effective policies: the same rules, tools, secrets and local level as p's
// fields. It returns nil for a nil p. It is for package sieve, which reads
// a policy without linking the YAML parser.
func (p *Policy) Compiled() *compiled.Policy {
	if p == nil {
		return nil
	}
	return &p.engine
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

// Effective returns the effective policy of a profile name, the merged
// view of its levels; "" means no profile.
func (p *Policy) Effective(profile string) (*Effective, error) {
	if profile == "" {
		return p.noneProf, nil
	}
	pr, ok := p.Profile(profile)
	if !ok {
		if p.lazyErr != nil {
			return nil, p.lazyErr
		}
		return nil, fmt.Errorf("profile %q: %w%s", profile, ErrUnknownProfile, DidYouMean(profile, p.ProfileNames()))
	}
	return pr.Effective, nil
}

// ProfileNames returns the names a profile can be asked for by: the
// user's, then the built-ins' without their "builtin:" prefix (a user
// profile of the same name hides the built-in one).
func (p *Policy) ProfileNames() []string { return profileNames(p, true) }

// profileNames is ProfileNames; while the policy is being built (lazy
// false) only the profiles already made are named.
func profileNames(p *Policy, lazy bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range p.order {
		n = strings.TrimPrefix(n, builtinPrefix)
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	if lazy && !p.builtinsEager {
		_, order := p.lazyBuiltins()
		for _, n := range order {
			n = strings.TrimPrefix(n, builtinPrefix)
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// Catalog returns the built-in bases and groups the policy was compiled with.
func (p *Policy) Catalog() *Catalog { return p.catalog }

const builtinPrefix = "builtin:"
