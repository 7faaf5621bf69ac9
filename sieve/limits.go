package sieve

import (
	"fmt"
	"slices"
	"strings"

	"github.com/envsieve/envsieve/internal/compiled"
)

// LimitError reports an environment that exceeds a limit. It names the limit,
// the actual figure, the maximum and the largest contributors, never a value.
type LimitError struct {
	Limit  string // "max_keys", "max_bytes" or "max_value_bytes"
	Actual int
	Max    int
	// Top are the largest variables, biggest first, by len(key)+len(value)+2.
	Top []Contributor
}

// Contributor is one variable's share of an environment's size.
type Contributor struct {
	Key   string
	Bytes int
}

func (e *LimitError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "limit %s exceeded: %d > %d", e.Limit, e.Actual, e.Max)
	if len(e.Top) > 0 {
		b.WriteString("; largest: ")
		for i, c := range e.Top {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%s (%d bytes)", c.Key, c.Bytes)
		}
	}
	return b.String()
}

// CheckLimits checks a whole environment (KEY=VALUE entries) against the
// limits, counting as the engine does (key, '=', value and a NUL each),
// and names the largest variables, never a value. The engine calls it on
// every result; the daemon on its merged layers.
func CheckLimits(env []string, lim compiled.Limits) error {
	total, longest := 0, 0
	for _, kv := range env {
		total += len(kv) + 1 // key + '=' + value + NUL
		if v := len(kv) - strings.IndexByte(kv, '=') - 1; v > longest {
			longest = v
		}
	}
	switch {
	case len(env) > lim.MaxKeys:
		return &LimitError{Limit: "max_keys", Actual: len(env), Max: lim.MaxKeys, Top: top(env, 3)}
	case total > lim.MaxBytes:
		return &LimitError{Limit: "max_bytes", Actual: total, Max: lim.MaxBytes, Top: top(env, 3)}
	case longest > lim.MaxValueBytes:
		return &LimitError{Limit: "max_value_bytes", Actual: longest, Max: lim.MaxValueBytes, Top: top(env, 1)}
	}
	return nil
}

// top returns the n largest variables; it runs only on the error path.
func top(env []string, n int) []Contributor {
	cs := make([]Contributor, 0, len(env))
	for _, kv := range env {
		cs = append(cs, Contributor{Key: kv[:strings.IndexByte(kv, '=')], Bytes: len(kv) + 1})
	}
	slices.SortStableFunc(cs, func(a, b Contributor) int { return b.Bytes - a.Bytes })
	return cs[:min(n, len(cs))]
}
