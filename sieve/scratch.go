package sieve

import (
	"cmp"
	"sync"

	"github.com/envsieve/envsieve/internal/compiled"
)

// scratch is a build's working memory that does not outlive it: the table
// that finds duplicate keys and the list of kept entries. Neither holds a
// pointer, so filling, clearing and sorting them costs no write barriers
// and gives the garbage collector nothing to scan. The Result's own slices
// are allocated per build: the caller keeps them.
type scratch struct {
	// slots is an open-addressing table of the keys seen so far, keyed by
	// their hash: 0 is empty, else 1 + the key's index into the parent
	// environment, where the key is compared.
	slots []int32
	mask  uint32
	kept  []keptEntry
	buf   []keptEntry // for sorting kept
}

// keptEntry is one entry of the child's environment before sorting: the
// first 16 bytes of its key, and where its "KEY=value" text is.
type keptEntry struct {
	p0, p1 uint64 // see keyPrefix
	ref    int32  // >= 0: an index into the parent; < 0: -1 - an index into the overrides
}

var scratches = sync.Pool{New: func() any { return new(scratch) }}

// getScratch returns an empty scratch for a parent of n entries.
func getScratch(n int) *scratch {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	s := scratches.Get().(*scratch)
	if cap(s.slots) >= size {
		s.slots = s.slots[:size]
		clear(s.slots)
	} else {
		s.slots = make([]int32, size)
	}
	s.mask = uint32(size - 1)
	s.kept = s.kept[:0]
	return s
}

// addKey inserts the key of parent[i], whose hash is h, and reports whether
// it was new.
func (s *scratch) addKey(h uint32, key string, i int, parent []string) bool {
	for j := h & s.mask; ; j = (j + 1) & s.mask {
		slot := s.slots[j]
		if slot == 0 {
			s.slots[j] = int32(i + 1)
			return true
		}
		if kv := parent[slot-1]; len(kv) > len(key) && kv[len(key)] == '=' && kv[:len(key)] == key {
			return false
		}
	}
}

// keyPrefix returns the first 16 bytes of the key of kv, whose '=' is at
// eq, as two big-endian words padded with zeros. Name bytes are never
// zero, so the words order keys as compareKeys does, up to their 16th
// byte.
func keyPrefix(kv string, eq int) (p0, p1 uint64) {
	p0 = load8(kv, 0, eq)
	if eq > 8 {
		p1 = load8(kv, 8, eq)
	}
	return p0, p1
}

// load8 returns s[off:end], at most 8 bytes of it, big-endian in a word
// padded with zeros.
func load8(s string, off, end int) uint64 {
	n := end - off
	if len(s) < off+8 {
		var p uint64
		for i := 0; i < min(n, 8); i++ {
			p |= uint64(s[off+i]) << (56 - 8*i)
		}
		return p
	}
	s = s[off : off+8]
	p := uint64(s[0])<<56 | uint64(s[1])<<48 | uint64(s[2])<<40 | uint64(s[3])<<32 |
		uint64(s[4])<<24 | uint64(s[5])<<16 | uint64(s[6])<<8 | uint64(s[7])
	if n < 8 {
		p &= ^uint64(0) << (64 - 8*n)
	}
	return p
}

// sortKept sorts kept entries by key, as compareKeys orders their texts,
// and returns them sorted: in kept or in buf, which must be as long. text
// returns an entry's "KEY=value", needed only for two keys that share their
// first 16 bytes. It is a merge sort, runs of 8 sorted by insertion, whose
// comparisons are two integer compares.
func sortKept(kept, buf []keptEntry, text func(keptEntry) string) []keptEntry {
	less := func(a, b keptEntry) bool {
		if a.p0 != b.p0 {
			return a.p0 < b.p0
		}
		if a.p1 != b.p1 {
			return a.p1 < b.p1
		}
		return compareKept(a, b, text) < 0
	}
	const run = 8
	for lo := 0; lo < len(kept); lo += run {
		r := kept[lo:min(lo+run, len(kept))]
		for i := 1; i < len(r); i++ {
			e, j := r[i], i
			for ; j > 0 && less(e, r[j-1]); j-- {
				r[j] = r[j-1]
			}
			r[j] = e
		}
	}
	src, dst := kept, buf[:len(kept)]
	for width := run; width < len(src); width *= 2 {
		for lo := 0; lo < len(src); lo += 2 * width {
			mid, hi := min(lo+width, len(src)), min(lo+2*width, len(src))
			i, j, k := lo, mid, lo
			for i < mid && j < hi {
				if less(src[j], src[i]) {
					dst[k] = src[j]
					j++
				} else {
					dst[k] = src[i]
					i++
				}
				k++
			}
			k += copy(dst[k:], src[i:mid])
			copy(dst[k:], src[j:hi])
		}
		src, dst = dst, src
	}
	return src
}

// compareKept orders kept entries by key.
func compareKept(a, b keptEntry, text func(keptEntry) string) int {
	switch {
	case a.p0 != b.p0:
		return cmp.Compare(a.p0, b.p0)
	case a.p1 != b.p1:
		return cmp.Compare(a.p1, b.p1)
	}
	return compareKeys(text(a), text(b))
}

// scanKey finds the '=' of a "KEY=value" entry, checks that the key is a
// valid variable name and hashes it (compiled.HashName), reading the key
// once. eq is -1 when kv has no '='; ok is false when eq <= 0 or the key
// is not a valid name.
func scanKey(kv string) (h uint32, eq int, ok bool) { return compiled.HashEntry(kv) }
