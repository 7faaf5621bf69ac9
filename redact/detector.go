package redact

import (
	"io"
	"sync"
	"time"

	"github.com/envsieve/envsieve/internal/detect"
)

// maxHeld bounds the word a Detector holds back: a longer one is judged as it
// is, so memory stays bounded on endless output without white space.
const maxHeld = 64 << 10

// Detector masks secrets no one named: strings that look like credentials
// (known token formats, JWTs, private keys, URLs with a password, and
// high-entropy tokens, as internal/detect judges them) in a stream. It is the
// second stage behind a writer, which masks the known values.
//
// A credential lies within one whitespace-delimited word (a URL, a
// KEY=value, a quoted token), and detect judges it with the context of that
// word, so a Detector writes everything up to the last white space at once
// and holds back only the word that may still be growing. That word is
// judged when white space ends it, when it reaches 64 KiB, at Flush or
// Close, or after the idle time passes with no write (judged then as it is).
// A PEM block spans lines: each of its base64 lines is judged on its own.
//
// Unlike a writer, a Detector is safe for one writer goroutine plus its own
// idle timer; callers still write from one goroutine at a time.
type Detector struct {
	mu    sync.Mutex
	dst   io.Writer
	key   []byte
	opt   detect.ScanOptions
	idle  time.Duration
	timer *time.Timer
	held  []byte
	buf   []byte
	out   []byte
	err   error
}

// NewDetector returns a Detector writing to dst, masking with [Token] under
// key. idle is how long a held run waits for more input before it is judged;
// zero holds it until the next write, Flush or Close.
func NewDetector(dst io.Writer, key []byte, opt detect.ScanOptions, idle time.Duration) *Detector {
	return &Detector{dst: dst, key: append([]byte(nil), key...), opt: opt, idle: idle}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\t' || c == '\r' || c == '\f' || c == '\v'
}

// Write judges and writes what is complete in the held run plus p, and holds
// the rest. It returns len(p) unless dst fails.
func (d *Detector) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return 0, d.err
	}
	if d.timer != nil {
		d.timer.Stop()
	}
	text := p
	if len(d.held) > 0 {
		d.buf = append(append(d.buf[:0], d.held...), p...)
		text = d.buf
	}
	cut := len(text)
	for cut > 0 && !isSpace(text[cut-1]) {
		cut--
	}
	if len(text)-cut > maxHeld {
		cut = len(text)
	}
	if err := d.emit(text[:cut]); err != nil {
		return 0, err
	}
	d.held = append(d.held[:0], text[cut:]...)
	if len(d.held) > 0 && d.idle > 0 {
		if d.timer == nil {
			d.timer = time.AfterFunc(d.idle, d.idleFlush)
		} else {
			d.timer.Reset(d.idle)
		}
	}
	return len(p), nil
}

// emit writes text, a span whose runs are all complete, with every finding
// replaced by its token.
func (d *Detector) emit(text []byte) error {
	if len(text) == 0 {
		return nil
	}
	out, pos := d.out[:0], 0
	found := false
	detect.Scan(text, d.opt, func(f detect.Finding) bool {
		out = append(out, text[pos:f.Start]...)
		out = append(out, Token(d.key, text[f.Start:f.End])...)
		pos, found = f.End, true
		return true
	})
	if !found {
		return d.write(text)
	}
	out = append(out, text[pos:]...)
	d.out = out
	return d.write(out)
}

func (d *Detector) write(b []byte) error {
	n, err := d.dst.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		d.err = err
	}
	return err
}

func (d *Detector) idleFlush() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.flushLocked()
}

func (d *Detector) flushLocked() error {
	if d.err != nil {
		return d.err
	}
	held := d.held
	d.held = d.held[:0]
	return d.emit(held)
}

// Flush judges the held run as it is and writes it.
func (d *Detector) Flush() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.timer != nil {
		d.timer.Stop()
	}
	return d.flushLocked()
}

// Close flushes; it does not close dst.
func (d *Detector) Close() error { return d.Flush() }
