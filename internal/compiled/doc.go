// Package compiled holds a policy's compiled, immutable values: what package
// policy builds from a policy file and what the engine (package sieve)
// evaluates. It exists so that the engine reads a policy without linking the
// YAML parser: package policy parses, validates and compiles; this package
// holds the result and the lookups over it, and imports no parser, no os and
// no other envsieve package but internal/pattern.
//
// # What it holds
//
// The compiled types ([Level], [Rule], [Effective], [Tables], [Source], [Pos],
// [Secret], [Catalog] and the small enums), the hash the tables are keyed by
// ([HashName], [HashEntry]), the variable-name test ([ValidName]), and
// [Policy], the part of a compiled policy that the engine reads besides its
// effective policies. Package policy re-exports the types as aliases (policy.Rule is
// [Rule]), so that library users name them there; nothing outside this
// module can import this package.
//
// # Immutability
//
// Every value is built once, by package policy's builder through [NewLevel],
// [SetLimitSource], [NewRuleTables] and [Merge], and never changed
// afterwards: the engine relies on the tables not moving. The exported fields
// are exported so that policy's aliases can show them; callers must not
// modify them, nor the maps [BaseRank] and [SealRank].
package compiled
