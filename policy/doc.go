// Package policy reads envsieve's policy files and compiles them into an
// immutable [Policy] that the engine (package sieve) evaluates.
//
// # Loading
//
// [Load] reads a file the way envsieve trusts one ([ReadFile]: a regular
// file of the user's or root's, at most 1 MiB, never through a
// symbolic link or a FIFO), then validates and compiles it. [Parse] does the
// same from bytes, naming them for error positions. [Default] returns the
// embedded default policy (the safe base, the proxy and tls groups, the
// built-in profiles), decoded at build time so that it costs no parse at
// run time. Decoding is strict: an unknown key, a wrong type, an invalid
// variable name or glob, a key both set and denied at one level, a profile
// that extends an unknown one are errors.
//
// # Errors
//
// A malformed policy gives an [ErrorList] of [*Error], each with the file,
// line and column ([Pos]) and an excerpt of the policy's own text: every bad
// entry is reported at once, sorted by position. Use errors.As. Looking up a
// profile the policy does not define wraps [ErrUnknownProfile] (use errors.Is);
// a file that is not one envsieve reads a policy from is refused. No error
// quotes bytes that are not the policy's own text.
//
// # Immutability
//
// A *Policy, and everything reachable from it (levels, rules, profiles,
// effective policies, tables), is built once and never changed afterwards: it is safe
// for concurrent use, and the engine relies on its compiled tables not
// moving. Callers must not modify its fields; a caller that needs another
// policy loads or narrows one ([Policy.Narrow] returns a new Policy).
//
// # The compiled types
//
// The types a compiled policy is made of ([Level], [Rule], [Effective],
// [Tables], [Source], [Pos], [Secret] and the rest) are declared in the
// module's internal/compiled package and named here by alias: policy.Rule
// is that package's Rule. The engine reads them there, and
// [Policy.Compiled], so that it does not link this package's YAML parser.
//
// # Narrowing
//
// A project-local policy (.envsieve.yaml, [LocalName]) may only narrow the
// user's: [Policy.Narrow] rejects, as an escalation naming the key and the
// line, anything that would admit more, switch enforce to audit, raise a
// limit or turn block_iteration off. A sub-agent's profile (`parent:`) may
// only narrow its parent's; [Policy.CheckNarrows] checks the same for
// profiles chosen at run time (the daemon's sub-agent sessions).
//
// # Security
//
// The policy decides what reaches an agent's processes, so where it comes
// from matters as much as what it says. The user's policy and
// ENVSIEVE_POLICY are trusted; a file an agent can write (its repository's
// .envsieve.yaml) can only narrow. An agent can write the user's policy
// file too unless the tree is sealed (docs/design.md section 9.7, "The
// seal"), and a launch that loads a policy at every command (`envsieve sh` as a command
// prefix) obeys whatever the file says at that moment. The guard (a
// sensitive key is admitted only by an allow entry that names it exactly,
// never by a glob) and the code-injection floor are the engine's, not the
// policy's: no policy, however broad, turns them off.
package policy
