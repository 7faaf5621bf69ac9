package policy

import "github.com/envsieve/envsieve/internal/compiled"

// The compiled types live in internal/compiled, which the engine (package
// sieve) reads without linking the YAML parser; these aliases are their
// names for library users. Their fields are exported to be read: a loaded
// policy is immutable (see the package comment).
type (
	// Mode says whether a policy is enforced or only recorded.
	Mode = compiled.Mode
	// SealMode says whether a launch gets the sealed filesystem view
	// (package seal).
	SealMode = compiled.SealMode
	// Base names one of the built-in base sets: "safe", "minimal" or "none".
	Base = compiled.Base
	// Limits bound the size of a child's environment.
	Limits = compiled.Limits
	// Source says where a decision came from.
	Source = compiled.Source
	// Pos is a place in a policy source.
	Pos = compiled.Pos
	// Entry is one compiled allow or deny pattern.
	Entry = compiled.Entry
	// Setting is one literal value from a set list.
	Setting = compiled.Setting
	// Level is one compiled level of a policy.
	Level = compiled.Level
	// ClientEnv says how a daemon session treats its client's environment
	// snapshot.
	ClientEnv = compiled.ClientEnv
	// Rule is a command rule.
	Rule = compiled.Rule
	// Tool is a tool-managed secret tier.
	Tool = compiled.Tool
	// SecretFrom names where a secret's value comes from.
	SecretFrom = compiled.SecretFrom
	// Delivery says how a secret reaches the child.
	Delivery = compiled.Delivery
	// Secret says where a named secret comes from and how it is delivered.
	Secret = compiled.Secret
	// Binding says where a brokered secret's real value may go.
	Binding = compiled.Binding
	// Catalog is the built-in, curated data: the base sets and the groups.
	Catalog = compiled.Catalog
	// Group is a named, curated list of exact variable names.
	Group = compiled.Group
	// Admit says how a name was admitted without a wildcard.
	Admit = compiled.Admit
	// Tables are allow and deny entries compiled for lookup.
	Tables = compiled.Tables
	// Effective is a profile's effective policy: the merged view of the
	// global level, the profile's levels and the project-local level.
	Effective = compiled.Effective
)

// The modes.
const (
	Enforce = compiled.Enforce
	Audit   = compiled.Audit
)

// The seal modes.
const (
	SealOff      = compiled.SealOff
	SealOn       = compiled.SealOn
	SealRequired = compiled.SealRequired
)

// Client environment treatments.
const (
	clientFiltered = compiled.ClientFiltered
	ClientFull     = compiled.ClientFull
)

// Secret sources.
const (
	FromEnv     = compiled.FromEnv
	FromStore   = compiled.FromStore
	FromCommand = compiled.FromCommand
	// FromKeychain and FromOp are read by a helper, as FromCommand is.
	FromKeychain = compiled.FromKeychain
	FromOp       = compiled.FromOp
)

// Deliveries.
const (
	deliverEnv  = compiled.DeliverEnv
	DeliverFile = compiled.DeliverFile
)

// ValidName reports whether s is a valid environment variable name:
// [A-Za-z_][A-Za-z0-9_]*.
func ValidName(s string) bool { return compiled.ValidName(s) }

var (
	baseRank = compiled.BaseRank
	sealRank = compiled.SealRank
)

func isNameByte(c byte) bool { return compiled.IsNameByte(c) }
