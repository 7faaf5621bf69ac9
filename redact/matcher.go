package redact

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"slices"
)

// matcher is an Aho-Corasick automaton over the patterns, plus a prefilter that finds
// the positions where a pattern may start, so that the automaton only runs near them.
// It is built once by newMatcher and never modified.
type matcher struct {
	nodes  []node
	dense  []int32 // rows of 256 full transitions, for the root (row 0) and its children
	ebyte  []byte  // sparse transitions of the other nodes: node.lo..node.hi, sorted by byte
	enext  []int32
	maxLen int // longest pattern

	// Prefilter. Every pattern is at least win bytes long. The 4-byte grams found in
	// the first win bytes of the patterns are in a Bloom filter (gbloom, two bits per
	// gram in one 64-bit word), and goffs maps each to the offsets it has there. A
	// window of win bytes that is a pattern prefix contains one of the grams sampled
	// every stride bytes, so a stream whose sampled grams all miss holds no pattern
	// start; a hit names the offsets, hence the candidate starts, and the first plen
	// bytes of the patterns (pbits) confirm them or not before the automaton runs.
	win    int
	stride int
	gbloom []uint64
	goffs  map[uint32]uint16
	plen   int
	pmask  uint64
	pbits  []uint64
	pshift uint32
}

type node struct {
	lo, hi int32 // transitions: ebyte[lo:hi], enext[lo:hi]
	row    int32 // dense row of all transitions, or -1
	fail   int32
	depth  int32 // length of the prefix this node stands for
	live   int32 // length of its longest suffix that is a proper prefix of a pattern
	outLen int32 // length of the longest pattern that is a suffix of the prefix, or 0
	outTok int32 // its token index
}

const (
	gramLen       = 4  // bytes per prefilter gram
	maxWin        = 16 // longest prefilter window
	gramMul       = 0x9E3779B97F4A7C15
	prefMul       = 0x9E3779B97F4A7C15
	gramBits      = 64 // gram Bloom filter bits per distinct gram, before rounding to a power of 2
	gramWordShift = 44 // the gram Bloom filter word index is hash >> 44 (so at most 2^20 words)
	prefixBits    = 32 // prefix bloom bits per distinct prefix, likewise
)

// newMatcher builds the automaton. pats must be distinct, each at least gramLen long;
// toks[i] is the token index of pats[i].
func newMatcher(pats [][]byte, toks []int32) *matcher {
	mt := &matcher{}
	// The trie is built from the patterns in byte order: a node stands for a run of
	// sorted patterns that share its prefix, and its children split that run by the
	// next byte, so a node's transitions are contiguous and sorted and nothing is
	// allocated per node. Nodes are numbered depth first, first child first, so that
	// the chain of nodes that spells out a pattern lies in consecutive memory.
	order := make([]int32, len(pats))
	total := 0
	for i, p := range pats {
		order[i] = int32(i)
		total += len(p)
		mt.maxLen = max(mt.maxLen, len(p))
	}
	slices.SortFunc(order, func(a, b int32) int { return bytes.Compare(pats[a], pats[b]) })

	type span struct{ lo, hi int32 } // the run of order a node stands for
	spans := []span{{0, int32(len(order))}}
	mt.nodes = append(make([]node, 0, total/2+1), node{row: -1})
	mt.ebyte = make([]byte, 0, total/2)
	mt.enext = make([]int32, 0, total/2)
	term := []int32{-1}
	stack := []int32{0}
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		d := mt.nodes[u].depth
		lo, hi := spans[u].lo, spans[u].hi
		mt.nodes[u].lo = int32(len(mt.ebyte))
		if lo < hi && int32(len(pats[order[lo]])) == d { // sorts first; patterns are distinct
			term[u] = toks[order[lo]]
			lo++
		}
		for lo < hi {
			c := pats[order[lo]][d]
			k := lo + 1
			for k < hi && pats[order[k]][d] == c {
				k++
			}
			mt.ebyte = append(mt.ebyte, c)
			mt.enext = append(mt.enext, int32(len(mt.nodes)))
			mt.nodes = append(mt.nodes, node{depth: d + 1, row: -1})
			spans = append(spans, span{lo, k})
			term = append(term, -1)
			lo = k
		}
		n := &mt.nodes[u]
		n.hi = int32(len(mt.ebyte))
		for k := n.hi - 1; k >= n.lo; k-- { // the first child is visited next
			stack = append(stack, mt.enext[k])
		}
	}
	spans, stack = nil, nil

	// Dense rows for the root and its children, where text spends most of its time:
	// a child's missing transitions are the root's.
	root := &mt.nodes[0]
	mt.dense = make([]int32, 256*(1+root.hi-root.lo))
	mt.nodes[0].row = 0
	for j := root.lo; j < root.hi; j++ {
		mt.dense[mt.ebyte[j]] = mt.enext[j]
	}
	for j := root.lo; j < root.hi; j++ {
		r := 1 + j - root.lo
		row := mt.dense[256*r : 256*(r+1)]
		copy(row, mt.dense[:256])
		n := &mt.nodes[mt.enext[j]]
		for k := n.lo; k < n.hi; k++ {
			row[mt.ebyte[k]] = mt.enext[k]
		}
		n.row = r
	}

	// Failure links and outputs, breadth first: a node's fail target is shallower, so
	// it is complete before the node is. A node's own fail link is set by its parent;
	// the root and its children keep 0.
	queue := make([]int32, 1, len(mt.nodes))
	for qi := 0; qi < len(queue); qi++ {
		u := queue[qi]
		n := &mt.nodes[u]
		if u != 0 {
			f := &mt.nodes[n.fail]
			if term[u] >= 0 {
				n.outLen, n.outTok = n.depth, term[u]
			} else {
				n.outLen, n.outTok = f.outLen, f.outTok
			}
			if n.hi > n.lo {
				n.live = n.depth
			} else {
				n.live = f.live
			}
		}
		for k := n.lo; k < n.hi; k++ {
			v := mt.enext[k]
			if u != 0 {
				mt.nodes[v].fail = mt.next(n.fail, mt.ebyte[k])
			}
			queue = append(queue, v)
		}
	}

	mt.buildPrefilter(pats)
	return mt
}

// next returns the state after reading c in state s.
func (mt *matcher) next(s int32, c byte) int32 {
	for {
		n := &mt.nodes[s]
		if n.row >= 0 {
			return mt.dense[int(n.row)<<8|int(c)]
		}
		lo, hi := n.lo, n.hi
		if hi-lo <= 8 {
			for j := lo; j < hi; j++ {
				if mt.ebyte[j] == c {
					return mt.enext[j]
				}
			}
		} else {
			for lo < hi {
				mid := int32(uint32(lo+hi) >> 1)
				if mt.ebyte[mid] < c {
					lo = mid + 1
				} else {
					hi = mid
				}
			}
			if lo < n.hi && mt.ebyte[lo] == c {
				return mt.enext[lo]
			}
		}
		s = n.fail
	}
}

func (mt *matcher) buildPrefilter(pats [][]byte) {
	mt.win = maxWin
	for _, p := range pats {
		mt.win = min(mt.win, len(p))
	}
	mt.stride = mt.win - gramLen + 1
	mt.plen = min(mt.win, 8)
	mt.pmask = ^uint64(0) >> (64 - 8*mt.plen)

	mt.goffs = make(map[uint32]uint16)
	prefixes := make(map[uint64]struct{})
	for _, p := range pats {
		for j := 0; j+gramLen <= mt.win; j++ {
			mt.goffs[binary.LittleEndian.Uint32(p[j:])] |= 1 << j
		}
		prefixes[loadPartial(p, mt.plen)] = struct{}{}
	}
	glog := tableLog(len(mt.goffs), gramBits, 12, 6+64-gramWordShift)
	mt.gbloom = make([]uint64, 1<<(glog-6))
	for g := range mt.goffs {
		x := uint64(g) * gramMul
		mt.gbloom[x>>gramWordShift&uint64(len(mt.gbloom)-1)] |= gramBitsOf(x)
	}
	plog := tableLog(len(prefixes), prefixBits, 12, 24)
	mt.pbits = make([]uint64, 1<<(plog-6))
	mt.pshift = uint32(64 - plog)
	for x := range prefixes {
		h := (x * prefMul) >> mt.pshift
		mt.pbits[h>>6] |= 1 << (h & 63)
	}
}

// gramBitsOf returns the two bits that stand for a gram in its Bloom filter word, from
// bits 32 to 43 of its hash x; the word index comes from bits 44 and up.
func gramBitsOf(x uint64) uint64 {
	return 1<<(x>>32&63) | 1<<(x>>38&63)
}

// tableLog returns log2 of the size of a hash table for n keys at perKey slots each,
// rounded up to a power of 2 and kept within [lo, hi].
func tableLog(n, perKey, lo, hi int) int {
	return min(max(bits.Len(uint(n*perKey)), lo), hi)
}

// loadPartial returns the first n (at most 8) bytes of b as a little-endian integer.
func loadPartial(b []byte, n int) uint64 {
	if n == 8 {
		return binary.LittleEndian.Uint64(b)
	}
	var x uint64
	for i := n - 1; i >= 0; i-- {
		x = x<<8 | uint64(b[i])
	}
	return x
}

// scan returns the first position c >= i of p at which a pattern may start with its
// first win bytes inside p. If there is none, it returns the first position from
// which a pattern prefix could still run past the end of p: max(i, len(p)-win+1).
//
// No false negatives: a pattern whose first win bytes are at c in p passes both filters.
// Every window [c, c+win) with i <= c <= len(p)-win holds exactly one of the sampled
// gram positions q = i, i+stride, ...: the one with c <= q <= c+win-gramLen, where the
// gram is at offset q-c of the window.
func (mt *matcher) scan(p []byte, i int) int {
	lastWin := len(p) - mt.win // last position whose window fits
	if i > lastWin {
		return i
	}
	for q := i; ; q += mt.stride {
		q = nextGramHit(p, q, mt.stride, mt.gbloom)
		if q < 0 {
			return lastWin + 1
		}
		if c := mt.confirm(p, i, q); c >= 0 {
			return c
		}
	}
}

// nextGramHit returns the first of q, q+stride, ... (up to len(p)-gramLen) whose gram
// passes the Bloom filter, or -1. It is the hot loop; it calls nothing, so that
// everything stays in registers (and is not inlined, for the same reason).
//
//go:noinline
func nextGramHit(p []byte, q, stride int, bloom []uint64) int {
	mask := uint64(len(bloom) - 1)
	for ; q <= len(p)-gramLen; q += stride {
		x := uint64(binary.LittleEndian.Uint32(p[q:])) * gramMul
		w := bloom[x>>gramWordShift&mask]
		if w&(1<<(x>>32&63)) != 0 && w&(1<<(x>>38&63)) != 0 {
			return q
		}
	}
	return -1
}

// confirm checks the windows that the gram sampled at q stands for, q-j for each
// offset j it has in a pattern prefix, not before i and fitting in p, in order. It
// returns the first whose first plen bytes may be those of a pattern, or -1.
func (mt *matcher) confirm(p []byte, i, q int) int {
	offs := mt.goffs[binary.LittleEndian.Uint32(p[q:])]
	lastWin := len(p) - mt.win
	for offs != 0 {
		j := bits.Len16(offs) - 1 // largest offset first: smallest start
		offs &^= 1 << j
		c := q - j
		if c < i || c > lastWin {
			continue
		}
		var x uint64
		if c+8 <= len(p) {
			x = binary.LittleEndian.Uint64(p[c:]) & mt.pmask
		} else {
			x = loadPartial(p[c:], mt.plen)
		}
		h := (x * prefMul) >> (mt.pshift & 63)
		if mt.pbits[h>>6]&(1<<(h&63)) != 0 {
			return c
		}
	}
	return -1
}
