package redact

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"slices"
)

// defaultMinLen is the shortest secret value and the shortest encoded form that are
// masked when [Options.MinLen] is zero.
const defaultMinLen = 8

// minMinLen is the smallest [Options.MinLen] that [Compile] accepts: masking shorter
// strings would destroy ordinary output and buys no secrecy.
const minMinLen = 4

// minKeyLen is the shortest HMAC key that [Compile] accepts. Use 32 random bytes.
const minKeyLen = 16

// errKey is returned (wrapped) by [Compile] for a key shorter than minKeyLen.
var errKey = errors.New("redact: HMAC key too short")

// Options tunes [Compile]. The zero value is the default.
type Options struct {
	// MinLen is the length in bytes below which a secret value is not masked at all
	// (it is reported by [Set.Skipped]) and below which an encoded form is not
	// searched for. Zero means defaultMinLen; a value below minMinLen is an error.
	MinLen int
}

// Secret is a value to mask and the name it is known by. The name is only used in
// reports such as [Set.Skipped]; it is never matched.
//
// Printing a Secret with the fmt or log/slog packages shows its name only.
type Secret struct {
	Name  string
	Value []byte
}

// Format prints the name only, whatever the verb, so a Secret dropped into a log line
// or an error by mistake does not leak its value.
func (s Secret) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, "redact.Secret{Name: %q, Value: <%d bytes masked>}", s.Name, len(s.Value))
}

// LogValue makes log/slog record the name only.
func (s Secret) LogValue() slog.Value {
	return slog.GroupValue(slog.String("name", s.Name), slog.Int("len", len(s.Value)))
}

// Set is a compiled, immutable set of secrets and their encoded forms. It is safe for
// concurrent use by any number of writers. Its fmt output never shows a pattern.
type Set struct {
	mt      *matcher // nil when there are no patterns
	tokens  [][]byte // token index -> "[MASKED:xxxxxxxx]"
	skipped []string
	npat    int
	// pats and patToks are kept for the tests' reference redactor.
	pats    [][]byte
	patToks []int32
}

// Compile builds the [Set] for secrets under the HMAC key (the per-install key; see
// [Token]). A secret whose value is shorter than the minimum length is skipped and
// reported by [Set.Skipped]; it is not an error. Zero secrets, or zero long enough,
// give a Set whose writers copy their input unchanged.
//
// When two secrets share a pattern (the same value under two names, or a lossy
// encoding that coincides), the pattern gets the token of the first one in secrets.
func Compile(key []byte, secrets []Secret, opt Options) (*Set, error) {
	if len(key) < minKeyLen {
		return nil, fmt.Errorf("%w: %d bytes, need at least %d", errKey, len(key), minKeyLen)
	}
	minLen := opt.MinLen
	if minLen == 0 {
		minLen = defaultMinLen
	}
	if minLen < minMinLen {
		return nil, fmt.Errorf("redact: MinLen %d is below the minimum %d", opt.MinLen, minMinLen)
	}
	s := &Set{}
	seen := make(map[string]bool)
	tokOf := make(map[string]int32) // value -> token index
	for _, sec := range secrets {
		if len(sec.Value) < minLen {
			s.skipped = append(s.skipped, sec.Name)
			continue
		}
		tok, ok := tokOf[string(sec.Value)]
		if !ok {
			tok = int32(len(s.tokens))
			tokOf[string(sec.Value)] = tok
			s.tokens = append(s.tokens, []byte(Token(key, sec.Value)))
		}
		values := [][]byte{sec.Value}
		if t := bytes.TrimSpace(sec.Value); len(t) != len(sec.Value) && len(t) >= minLen {
			values = append(values, t)
		}
		for _, v := range values {
			for _, f := range forms(v) {
				if len(f.b) < minLen || seen[string(f.b)] {
					continue
				}
				seen[string(f.b)] = true
				s.pats = append(s.pats, f.b)
				s.patToks = append(s.patToks, tok)
			}
		}
	}
	s.npat = len(s.pats)
	if s.npat > 0 {
		s.mt = newMatcher(s.pats, s.patToks)
	}
	return s, nil
}

// Skipped returns the names of the secrets that are not masked because their values
// are shorter than the minimum length, in the order given to [Compile], so that callers
// can say so.
func (s *Set) Skipped() []string { return slices.Clone(s.skipped) }

// Len returns the number of distinct patterns searched for: every secret value and its
// encoded forms that are long enough.
func (s *Set) Len() int { return s.npat }

// Format prints counts only, never a pattern.
func (s *Set) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, "redact.Set{patterns: %d, secrets: %d, skipped: %d}", s.npat, len(s.tokens), len(s.skipped))
}
