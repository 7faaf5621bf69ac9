package broker

import (
	"errors"
	"io"
	"sync"
)

// aheadPieces is how many pieces of a response an aheadReader holds at
// most, aheadPiece the size of each, and aheadAfter how much of a response
// is read as it is asked for before the goroutine starts: an answer or an
// event costs no goroutine and no hand-off.
const (
	aheadPieces = 8
	aheadPiece  = 32 << 10
	aheadAfter  = 256 << 10
)

// aheadReader reads a host's response past its first aheadAfter bytes on a
// goroutine of its own, so that the next records are read and decrypted
// while the last ones are scrubbed, encrypted and sent to the child: the two
// halves of a stream run on two cores. Read returns what has been read by then, blocking only while
// nothing has; the goroutine stays at most aheadPieces pieces ahead, and
// stops when the response ends or is closed. Bytes come out in order and
// unchanged, and the host's error comes after the last of them.
type aheadReader struct {
	r    io.ReadCloser
	n    int           // bytes read before the goroutine started
	read chan []byte   // pieces read, in order; closed after the last; nil before
	free chan []byte   // pieces given back to the goroutine
	done chan struct{} // closed by Close
	once sync.Once
	err  error // the host's error (errAheadClosed after Close), set before read is closed

	cur, buf []byte // the rest of the piece being read, and all of it
}

func newAheadReader(r io.ReadCloser) *aheadReader {
	return &aheadReader{r: r, done: make(chan struct{})}
}

// errAheadClosed is what a read after Close returns.
var errAheadClosed = errors.New("broker: response closed")

func (a *aheadReader) run() {
	defer func() {
		if a.err == nil {
			a.err = errAheadClosed
		}
		close(a.read)
	}()
	made := 0
	for {
		var b []byte
		if made < aheadPieces && len(a.free) == 0 {
			b, made = make([]byte, aheadPiece), made+1 // only as many as the response needs
		} else {
			select {
			case b = <-a.free:
			case <-a.done:
				return
			}
		}
		n, err := a.r.Read(b[:cap(b)])
		if n > 0 {
			select {
			case a.read <- b[:n]:
			case <-a.done:
				return
			}
		} else {
			a.free <- b
		}
		if err != nil {
			a.err = err
			return
		}
	}
}

func (a *aheadReader) Read(p []byte) (int, error) {
	if a.read == nil {
		if a.n < aheadAfter {
			n, err := a.r.Read(p)
			a.n += n
			return n, err
		}
		a.read, a.free = make(chan []byte, aheadPieces), make(chan []byte, aheadPieces)
		go a.run()
	}
	if len(p) == 0 {
		return 0, nil
	}
	n := 0
	for n < len(p) {
		if len(a.cur) == 0 {
			if a.buf != nil {
				a.free <- a.buf[:cap(a.buf)]
				a.buf = nil
			}
			var b []byte
			var ok bool
			if n == 0 {
				b, ok = <-a.read
			} else {
				select {
				case b, ok = <-a.read:
				default:
					return n, nil // nothing more read yet: send what there is
				}
			}
			if !ok {
				if n > 0 {
					return n, nil
				}
				return 0, a.err
			}
			a.cur, a.buf = b, b
		}
		m := copy(p[n:], a.cur)
		a.cur = a.cur[m:]
		n += m
	}
	return n, nil
}

// Close stops the goroutine and closes the response.
func (a *aheadReader) Close() error {
	a.once.Do(func() { close(a.done) })
	return a.r.Close()
}
