// Package layers holds no code: its test keeps the module's imports
// pointing down (docs/design.md section 7). The pure engine and the
// foundation packages under internal/ reach no process, network or
// program-side package; the pure engine (with internal/compiled, the
// compiled policy it reads) links no YAML parser, not even through package
// policy; launch reaches no daemon; nothing but the two programs reaches
// cmd/internal.
package layers
