package redact

import (
	"io"
	"sync"
	"time"
)

// Streams masks a child's stdout and stderr as one stream: a value the child
// splits between the two (half to each) is still masked, while every byte
// still goes out on its own stream, in order. Where both reach the same
// reader (a terminal, the daemon's client) this is the only way to catch
// such a split.
//
// It also closes the prefix oracle a plain writer opens to a child that
// watches its own output: a writer holds back exactly the bytes that could
// still start a masked value, so a child printing guesses sees at once which
// guess is held. Streams always holds back the last L bytes of the input, L
// the longest pattern's length less one, whatever they are, and releases
// them when the child has written nothing for the idle time. What is held,
// and for how long, depends on the timing of the child's writes and never
// on what the bytes start. A value split across such a pause is not masked
// (as across a writer.Flush).
//
// A token for a value split between the streams goes to the stream of the
// value's first byte; the value's bytes on the other stream are dropped.
type Streams struct {
	mu    sync.Mutex
	w     *writer
	dst   [2]io.Writer
	segs  []segment     // which stream each run of the input came from
	reps  []replacement // tokens the writer reported and has not output yet
	ip    int64         // input position of the next output byte
	tok   int           // bytes of the current token still to route
	tokTo int           // its stream
	idle  time.Duration
	timer *time.Timer
}

type segment struct {
	end    int64
	stream int
}

type replacement struct {
	start, end int64
	n          int
}

// NewStreams returns Streams that mask the patterns of s in what is written
// to Stdout and Stderr and write the result to stdout and stderr. idle is
// how long held bytes wait for more input (20 ms keeps a terminal session
// responsive); zero holds them until Close.
func NewStreams(stdout, stderr io.Writer, s *Set, idle time.Duration) *Streams {
	if stdout == nil || stderr == nil || s == nil {
		panic("redact: NewStreams with a nil destination or Set")
	}
	m := &Streams{dst: [2]io.Writer{stdout, stderr}, idle: idle}
	m.w = newWriter(router{m}, s)
	m.w.fixedHold = true
	m.w.onToken = func(start, end int64, n int) { m.reps = append(m.reps, replacement{start, end, n}) }
	return m
}

// Stdout returns the writer for the child's standard output.
func (m *Streams) Stdout() io.Writer { return streamWriter{m, 0} }

// Stderr returns the writer for the child's standard error.
func (m *Streams) Stderr() io.Writer { return streamWriter{m, 1} }

type streamWriter struct {
	m  *Streams
	id int
}

func (sw streamWriter) Write(p []byte) (int, error) {
	m := sw.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(p) > 0 {
		end := m.w.pos + int64(len(p))
		if n := len(m.segs); n > 0 && m.segs[n-1].stream == sw.id {
			m.segs[n-1].end = end
		} else {
			m.segs = append(m.segs, segment{end, sw.id})
		}
	}
	n, err := m.w.Write(p)
	if err == nil && m.idle > 0 {
		if m.timer == nil {
			m.timer = time.AfterFunc(m.idle, m.idleFlush)
		} else {
			m.timer.Reset(m.idle)
		}
	}
	return n, err
}

func (m *Streams) idleFlush() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.w.closed {
		_ = m.w.Flush()
	}
}

// Close writes what is held and makes later writes fail with errClosed.
// It does not close the destinations.
func (m *Streams) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.timer != nil {
		m.timer.Stop()
	}
	return m.w.Close()
}

// router is the writer's destination: it sends each output byte to the
// stream its input came from. The caller holds m.mu.
type router struct{ m *Streams }

func (r router) Write(out []byte) (int, error) {
	m := r.m
	total := len(out)
	for len(out) > 0 {
		if m.tok > 0 {
			k := min(m.tok, len(out))
			if err := m.send(m.tokTo, out[:k]); err != nil {
				return total - len(out), err
			}
			out, m.tok = out[k:], m.tok-k
			continue
		}
		if len(m.reps) > 0 && m.reps[0].start == m.ip {
			rep := m.reps[0]
			m.reps = m.reps[1:]
			m.tok, m.tokTo = rep.n, m.streamAt(rep.start)
			m.ip = rep.end
			continue
		}
		k := int64(len(out))
		if len(m.reps) > 0 {
			k = min(k, m.reps[0].start-m.ip)
		}
		id := m.streamAt(m.ip)
		k = min(k, m.segs[0].end-m.ip)
		if err := m.send(id, out[:k]); err != nil {
			return total - len(out), err
		}
		out, m.ip = out[k:], m.ip+k
	}
	return total, nil
}

// streamAt returns the stream of the input at position ip, dropping the
// segments that end before it.
func (m *Streams) streamAt(ip int64) int {
	for len(m.segs) > 1 && m.segs[0].end <= ip {
		m.segs = m.segs[1:]
	}
	return m.segs[0].stream
}

func (m *Streams) send(id int, b []byte) error {
	n, err := m.dst[id].Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	return err
}
