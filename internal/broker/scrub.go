package broker

import (
	"bytes"
	"encoding/base64"
	"io"
)

// pair is one value to find and, for a scrubber, what replaces it: a real
// value and its fake, which always have the same length.
type pair struct {
	name     string
	from, to []byte
}

// scrubPairs returns the pairs that turn a real value into its fake in a
// response: the value itself, and its base64 encodings (standard and URL
// alphabets) at each of the three alignments it can take inside a longer
// encoded string (a Basic credential echoed back, a JWT), replaced by the
// fake's encoding at the same alignment, which has the same length. Only
// the characters that depend on the value's bytes alone are replaced.
func scrubPairs(name, real, fake string) []pair {
	out := []pair{{name: name, from: []byte(real), to: []byte(fake)}}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for a := 0; a < 3; a++ {
			r, f := alignedBase64(enc, real, a), alignedBase64(enc, fake, a)
			if len(r) >= 16 && len(r) == len(f) {
				out = append(out, pair{name: name, from: r, to: f})
			}
		}
	}
	return out
}

// alignedBase64 returns the characters of the base64 encoding of v, preceded
// by a bytes, that depend on v's bytes only.
func alignedBase64(enc *base64.Encoding, v string, a int) []byte {
	buf := make([]byte, a+len(v))
	copy(buf[a:], v)
	s := enc.EncodeToString(buf)
	first := (8*a + 5) / 6
	last := 8 * (a + len(v)) / 6 // exclusive
	if last <= first {
		return nil
	}
	return []byte(s[first:last])
}

// patterns is a compiled set of pairs, searched in one pass: every value
// is at least minGram+1 bytes long, so sampling the input's 8-byte grams
// every minLen-7 bytes meets each occurrence at least once; a sample is
// looked up in a Bloom filter of the values' grams, and only a hit is
// confirmed. Ordinary text costs one multiply and one bit test per
// stride.
type patterns struct {
	pairs          []pair
	minLen, maxLen int
	bloom          [bloomWords]uint64
	grams          map[uint64][]gramRef
}

type gramRef struct{ pair, off int32 }

const (
	gramLen    = 8
	bloomBits  = 1 << 16
	bloomWords = bloomBits / 64
)

func gramHash(x uint64) uint32 { return uint32((x * 0x9E3779B97F4A7C15) >> (64 - 16)) }

func load64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

// newPatterns compiles pairs; values shorter than 16 bytes are dropped
// (no credential the broker handles is that short, and a short value
// would match ordinary text).
func newPatterns(pairs []pair) *patterns {
	ps := &patterns{grams: map[uint64][]gramRef{}, minLen: 1 << 30}
	for _, p := range pairs {
		if len(p.from) < 16 {
			continue
		}
		i := int32(len(ps.pairs))
		ps.pairs = append(ps.pairs, p)
		ps.minLen, ps.maxLen = min(ps.minLen, len(p.from)), max(ps.maxLen, len(p.from))
		for off := 0; off+gramLen <= len(p.from); off++ {
			g := load64(p.from[off:])
			h := gramHash(g)
			ps.bloom[h/64] |= 1 << (h % 64)
			ps.grams[g] = append(ps.grams[g], gramRef{pair: i, off: int32(off)})
		}
	}
	return ps
}

// replace replaces every value in b in place (a fake has its value's
// length) and reports the names found.
func (ps *patterns) replace(b []byte, found func(name string)) {
	if ps == nil || len(ps.pairs) == 0 || len(b) < ps.minLen {
		return
	}
	stride := ps.minLen - gramLen + 1
	for i := 0; i+gramLen <= len(b); i += stride {
		g := load64(b[i:])
		h := gramHash(g)
		if ps.bloom[h/64]&(1<<(h%64)) == 0 {
			continue
		}
		for _, ref := range ps.grams[g] {
			p := ps.pairs[ref.pair]
			start := i - int(ref.off)
			if start < 0 || start+len(p.from) > len(b) || !bytes.Equal(b[start:start+len(p.from)], p.from) {
				continue
			}
			if found != nil {
				found(p.name)
			}
			if p.to != nil {
				copy(b[start:], p.to)
			}
		}
	}
}

// hold returns how many bytes at the end of b could still be the start of
// a value.
func (ps *patterns) hold(b []byte) int {
	if ps == nil {
		return 0
	}
	return holdFor(b, ps.pairs)
}

// holdFor returns how many bytes at the end of b could still be the start
// of one of the values: they are held until more input decides.
func holdFor(b []byte, pairs []pair) int {
	hold := 0
	for _, p := range pairs {
		n := min(len(p.from)-1, len(b))
		for k := n; k > hold; k-- {
			if bytes.HasPrefix(p.from, b[len(b)-k:]) {
				hold = k
				break
			}
		}
	}
	return hold
}

// replaceAll replaces every value in b, in place, one value at a time: the
// reference the compiled patterns are tested against.
func replaceAll(b []byte, pairs []pair, found func(name string)) {
	for _, p := range pairs {
		for i := 0; ; {
			j := bytes.Index(b[i:], p.from)
			if j < 0 {
				break
			}
			if found != nil {
				found(p.name)
			}
			if p.to != nil {
				copy(b[i+j:], p.to)
			}
			i += j + len(p.from)
		}
	}
}

// scrubber is a reader that replaces each real value by its fake in what
// it reads, however the stream is split: it holds back only the bytes at
// the end of a read that could still start a value (usually none, so a
// streamed response is not delayed).
type scrubber struct {
	r     io.ReadCloser
	ps    *patterns
	found func(name string)
	buf   []byte // bytes read and not yet returned
	ready int    // buf[:ready] are settled
	err   error
}

func newScrubber(r io.ReadCloser, ps *patterns, found func(string)) io.ReadCloser {
	if ps == nil || len(ps.pairs) == 0 {
		return r
	}
	return &scrubber{r: r, ps: ps, found: found}
}

func (s *scrubber) Read(p []byte) (int, error) {
	for s.ready == 0 {
		if s.err != nil {
			if len(s.buf) == 0 {
				return 0, s.err
			}
			// The end: what was held can no longer grow into a value.
			s.ready = len(s.buf)
			break
		}
		if cap(s.buf)-len(s.buf) < 32<<10 {
			nb := make([]byte, len(s.buf), len(s.buf)+64<<10)
			copy(nb, s.buf)
			s.buf = nb
		}
		start := len(s.buf)
		n, err := s.r.Read(s.buf[start:cap(s.buf)])
		s.buf = s.buf[:start+n]
		s.err = err
		if n == 0 {
			continue
		}
		// A value may span the held tail and the new bytes: search from
		// where one could begin.
		from := max(0, start-s.ps.maxLen+1)
		s.ps.replace(s.buf[from:], s.found)
		if s.err != nil {
			s.ready = len(s.buf)
		} else {
			s.ready = len(s.buf) - s.ps.hold(s.buf)
		}
	}
	n := copy(p, s.buf[:s.ready])
	s.buf = s.buf[:copy(s.buf, s.buf[n:])]
	s.ready -= n
	return n, nil
}

func (s *scrubber) Close() error { return s.r.Close() }
