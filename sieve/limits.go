package sieve

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/envsieve/envsieve/policy"
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

func checkLimits(env []string, lim policy.Limits) error {
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

// keySet finds duplicate keys in one pass: an open-addressing table of
// indexes into a parallel slice of keys, sized once per build.
type keySet struct {
	slots  []int32 // 0 empty, else 1 + index into keys
	hashes []uint32
	keys   []string
	mask   uint32
}

// keySets recycles the tables: a build's only scratch memory.
var keySets = sync.Pool{New: func() any { return new(keySet) }}

func newKeySet(n int) *keySet {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	s := keySets.Get().(*keySet)
	if cap(s.slots) >= size {
		s.slots = s.slots[:size]
		clear(s.slots)
	} else {
		s.slots = make([]int32, size)
	}
	clear(s.keys)
	s.hashes, s.keys, s.mask = s.hashes[:0], s.keys[:0], uint32(size-1)
	return s
}

// add inserts key and reports whether it was new.
func (s *keySet) add(h uint32, key string) bool {
	for i := h & s.mask; ; i = (i + 1) & s.mask {
		slot := s.slots[i]
		if slot == 0 {
			s.keys = append(s.keys, key)
			s.hashes = append(s.hashes, h)
			s.slots[i] = int32(len(s.keys))
			return true
		}
		if s.hashes[slot-1] == h && s.keys[slot-1] == key {
			return false
		}
	}
}

// nameHash checks that key is a valid variable name and returns its hash,
// policy.HashName (FNV-1a), in the same pass.
func nameHash(key string) (uint32, bool) {
	if c := key[0]; c >= '0' && c <= '9' {
		return 0, false
	}
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return 0, false
		}
		h = (h ^ uint32(c)) * 16777619
	}
	return h, true
}
