// Package layers holds no code: its test keeps the module's imports
// pointing down (docs/design.md section 7). The pure engine and the
// foundation packages under internal/ reach no process, network or
// program-side package; the pure engine (with internal/compiled, the
// compiled policy it reads) links no YAML parser, not even through package
// policy; launch reaches no daemon; the credential broker links nothing of
// the project but its own packages and the SigV4 signer; nothing but the
// two programs reaches cmd/internal.
package layers
