package redact

import (
	"errors"
	"fmt"
	"io"
)

// errClosed is returned by writer.Write and writer.Flush after writer.Close.
var errClosed = errors.New("redact: write to closed writer")

// writer masks the patterns of a [Set] in the bytes written to it and writes the result
// to its destination. See the package documentation for what it guarantees.
//
// A writer is for one goroutine at a time (give each of stdout and stderr its own).
// Call writer.Close (or writer.Flush) when the stream ends: until then the bytes
// of a live partial match are held back.
type writer struct {
	dst io.Writer
	set *Set
	mt  *matcher

	// Positions are absolute offsets in the input stream.
	pos     int64 // input consumed before the current Write
	emitted int64 // input before this has been turned into output
	hold    []byte
	holdAt  int64 // position of hold[0]; hold is input [holdAt, pos), holdAt == emitted between calls

	// Matching.
	inAC    bool  // the automaton runs byte by byte; otherwise the prefilter skips
	state   int32 // automaton state after input [.., pos)
	anchor  int64 // where the automaton last started from its root
	open    bool  // a token has been written for a region that may still grow
	openEnd int64 // end of that region; emitted == openEnd while open
	pending []region

	// The current Write.
	p    []byte
	base int64 // position of p[0]

	// Output.
	out       []byte // small pieces gathered for one dst.Write
	outEnd    int64  // input position that out accounts for
	delivered int64  // input position whose output dst has accepted
	err       error  // sticky
	closed    bool

	// Set by [Streams].
	fixedHold bool                          // always hold the longest pattern's length, whatever the bytes
	onToken   func(start, end int64, n int) // told of each token, before its n bytes are output
}

// A region is a union of overlapping matches whose token has not been written yet.
type region struct {
	start, end int64
	tok        int32
}

const (
	directMin = 512      // a plain run of the input this long is written straight to dst
	outMax    = 32 << 10 // out is written when it grows past this
)

// newWriter returns a writer that writes to dst the bytes written to it with every
// occurrence of a pattern of s replaced by its token. A Set without patterns makes
// it a plain pass-through. It panics if dst or s is nil: a writer that silently
// masked nothing would be worse than a crash.
func newWriter(dst io.Writer, s *Set) *writer {
	if dst == nil || s == nil {
		panic("redact: newWriter with a nil destination or Set")
	}
	w := &writer{dst: dst, set: s, mt: s.mt}
	if s.mt != nil {
		w.hold = make([]byte, 0, s.mt.maxLen) // the most it can hold
	}
	return w
}

// Format prints nothing of the held bytes, which may be part of a secret.
func (w *writer) Format(f fmt.State, verb rune) {
	fmt.Fprintf(f, "redact.Writer{written: %d, held: %d}", w.pos, len(w.hold))
}

// Write masks p and writes the result to the destination, except the bytes of a live
// partial match, which it holds until they either complete a match or cannot. It
// returns len(p) and a nil error on success. An error from the destination is
// returned, with the count of bytes of p whose output it accepted, and is returned
// again by every later call: the stream is broken.
func (w *writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, errClosed
	}
	if w.mt == nil {
		n, err := w.dst.Write(p)
		if err == nil && n < len(p) {
			err = io.ErrShortWrite
		}
		w.err = err
		return n, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	mt := w.mt
	w.p, w.base = p, w.pos
	if w.inAC && mt.nodes[w.state].live == 0 && len(w.pending) == 0 && !w.open {
		w.inAC = false
	}
	i := 0
	for i < len(p) {
		if !w.inAC {
			i = mt.scan(p, i)
			w.inAC, w.state, w.anchor = true, 0, w.base+int64(i)
		}
		var back bool
		i, back = w.run(i)
		if w.err != nil {
			return w.fail()
		}
		if back {
			w.inAC = false
		}
	}
	w.pos = w.base + int64(len(p))

	// Everything before the live partial match and the first waiting region is final.
	limit := w.pos - int64(mt.nodes[w.state].live)
	if len(w.pending) > 0 {
		limit = min(limit, w.pending[0].start)
	}
	if w.fixedHold {
		// Hold as much as the longest partial match could be, whether or not
		// the bytes start one: what is held must not tell what they start.
		limit = min(limit, w.pos-int64(mt.maxLen-1))
	}
	w.emitPlain(limit)
	w.flushOut()
	if w.err != nil {
		return w.fail()
	}
	w.saveHold()
	w.p = nil
	return len(p), nil
}

// run feeds p[i:] to the automaton. It returns early, with the position from which
// the prefilter may take over and true, when nothing is waiting and the live partial
// match is short, started after the anchor and lies in p.
func (w *writer) run(i int) (int, bool) {
	mt := w.mt
	p := w.p
	nodes, dense, ebyte, enext := mt.nodes, mt.dense, mt.ebyte, mt.enext
	st := w.state
	nd := &nodes[st]
	win := int32(mt.win)
	minLive := int(max(w.anchor-w.base+1, 0)) // after the anchor, inside p
	maxLive := len(p) - mt.win                // leaving a window for the prefilter
	busy := len(w.pending) > 0 || w.open
	for i < len(p) {
		c := p[i]
		i++
		if nd.row >= 0 {
			st = dense[int(nd.row)<<8|int(c)]
		} else if nd.hi-nd.lo == 1 && ebyte[nd.lo] == c { // along a pattern's own chain
			st = enext[nd.lo]
		} else {
			st = mt.next(st, c)
		}
		nd = &nodes[st]
		if nd.outLen > 0 || busy {
			pos := w.base + int64(i)
			if nd.outLen > 0 {
				w.addMatch(pos-int64(nd.outLen), pos, nd.outTok)
			}
			w.settle(pos - int64(nd.live)) // future matches start there or later
			if w.err != nil {
				break
			}
			busy = len(w.pending) > 0 || w.open
			continue
		}
		if live := i - int(nd.live); nd.live < win && live >= minLive && live <= maxLive {
			w.state = 0
			return live, true
		}
	}
	w.state = st
	return i, false
}

// addMatch records the match [s, e), the longest one ending at e.
func (w *writer) addMatch(s, e int64, tok int32) {
	if w.open && s < w.openEnd {
		// It overlaps the region whose token is out: mask the rest of it too, and every
		// waiting region, which all lie between the two.
		w.openEnd, w.emitted, w.outEnd = e, e, e
		w.pending = w.pending[:0]
		return
	}
	k := len(w.pending)
	for k > 0 && w.pending[k-1].end > s {
		k--
	}
	if k < len(w.pending) {
		// Merge with the waiting regions it overlaps. The leftmost match names the
		// region; at an equal start the new match is the longer one.
		if r := w.pending[k]; r.start < s {
			s, tok = r.start, r.tok
		}
		w.pending = w.pending[:k]
	}
	w.pending = append(w.pending, region{s, e, tok})
}

// settle writes the tokens of the regions that can no longer change: no future match
// starts before live.
func (w *writer) settle(live int64) {
	if w.open && w.openEnd <= live {
		w.open = false
	}
	for !w.open && len(w.pending) > 0 && w.pending[0].start < live {
		r := w.pending[0]
		w.emitRegion(r)
		w.pending = w.pending[:copy(w.pending, w.pending[1:])]
		if r.end > live {
			w.open, w.openEnd = true, r.end
		}
	}
}

func (w *writer) emitRegion(r region) {
	w.emitPlain(r.start)
	if w.onToken != nil {
		w.onToken(r.start, r.end, len(w.set.tokens[r.tok]))
	}
	w.out = append(w.out, w.set.tokens[r.tok]...)
	w.emitted, w.outEnd = r.end, r.end
	if len(w.out) >= outMax {
		w.flushOut()
	}
}

// emitPlain outputs the input [emitted, x) unchanged.
func (w *writer) emitPlain(x int64) {
	if x <= w.emitted {
		return
	}
	if w.emitted < w.base {
		hi := min(x, w.base)
		w.out = append(w.out, w.hold[w.emitted-w.holdAt:hi-w.holdAt]...)
		w.emitted, w.outEnd = hi, hi
	}
	if x > w.emitted {
		span := w.p[w.emitted-w.base : x-w.base]
		if len(span) >= directMin {
			w.flushOut()
			if w.err == nil {
				n, err := w.dst.Write(span)
				w.delivered = w.emitted + int64(n)
				w.setErr(n, len(span), err)
			}
			w.emitted, w.outEnd = x, x
			return
		}
		w.out = append(w.out, span...)
		w.emitted, w.outEnd = x, x
	}
	if len(w.out) >= outMax {
		w.flushOut()
	}
}

func (w *writer) flushOut() {
	if len(w.out) == 0 || w.err != nil {
		return
	}
	n, err := w.dst.Write(w.out)
	if w.setErr(n, len(w.out), err) {
		w.delivered = w.outEnd
	}
	w.out = w.out[:0]
}

func (w *writer) setErr(n, want int, err error) bool {
	if err == nil && n < want {
		err = io.ErrShortWrite
	}
	if err != nil && w.err == nil {
		w.err = err
	}
	return err == nil
}

// fail ends a Write whose destination failed.
func (w *writer) fail() (int, error) {
	n := min(max(w.delivered-w.base, 0), int64(len(w.p)))
	w.p = nil
	return int(n), w.err
}

// saveHold keeps the input [emitted, pos) for the next call.
func (w *writer) saveHold() {
	if w.emitted < w.base {
		n := copy(w.hold, w.hold[w.emitted-w.holdAt:])
		w.hold = append(w.hold[:n], w.p...)
	} else {
		w.hold = append(w.hold[:0], w.p[w.emitted-w.base:]...)
	}
	w.holdAt = w.emitted
}

// Flush ends the stream so far: it writes the bytes held back, which can no longer
// become a secret, and the tokens still waiting. A secret written partly before and
// partly after a Flush is not recognised, and its first part is written in clear; call
// Flush only where the stream really pauses (the child exited, or went quiet).
func (w *writer) Flush() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errClosed
	}
	if w.mt == nil {
		return nil
	}
	w.p, w.base = nil, w.pos
	for _, r := range w.pending {
		w.emitRegion(r)
	}
	w.pending = w.pending[:0]
	w.open = false
	w.emitPlain(w.pos)
	w.flushOut()
	w.hold = w.hold[:0]
	w.holdAt = w.emitted
	w.inAC, w.state, w.anchor = false, 0, w.pos
	return w.err
}

// Close flushes (see writer.Flush) and makes later writes fail with errClosed. It
// does not close the destination. Closing twice is not an error.
func (w *writer) Close() error {
	if w.closed {
		return w.err
	}
	err := w.Flush()
	w.closed = true
	return err
}
