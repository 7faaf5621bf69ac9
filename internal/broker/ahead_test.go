package broker

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"
	"time"
)

// splitReader returns data in reads of random sizes, then err.
type splitReader struct {
	data   []byte
	rng    *rand.Rand
	err    error
	closed chan struct{}
}

func (r *splitReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, r.err
	}
	n := min(len(p), len(r.data), 1+r.rng.IntN(40<<10))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

func (r *splitReader) Close() error { close(r.closed); return nil }

// TestAheadReader: what the host sent comes out whole, in order, with the
// host's error after the last byte, however the host's reads and the
// child's are split, below and past the point where the goroutine starts.
func TestAheadReader(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	hostErr := errors.New("host hung up")
	for _, tc := range []struct {
		name string
		size int
		err  error
	}{
		{"empty", 0, io.EOF},
		{"an answer", 700, io.EOF},
		{"just below the start", aheadAfter - 1, io.EOF},
		{"just past it", aheadAfter + 1, io.EOF},
		{"a stream", 5 << 20, io.EOF},
		{"a stream cut off", 3<<20 + 17, hostErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := make([]byte, tc.size)
			for i := range data {
				data[i] = byte(rng.Uint32())
			}
			src := &splitReader{data: data, rng: rand.New(rand.NewPCG(3, uint64(tc.size))), err: tc.err, closed: make(chan struct{})}
			a := newAheadReader(src)
			var out bytes.Buffer
			var err error
			for err == nil {
				p := make([]byte, 1+rng.IntN(100<<10))
				var n int
				n, err = a.Read(p)
				out.Write(p[:n])
			}
			if err != tc.err {
				t.Errorf("error %v, want %v", err, tc.err)
			}
			if !bytes.Equal(out.Bytes(), data) {
				t.Errorf("%d bytes out of %d, not the same", out.Len(), len(data))
			}
			if started := a.read != nil; started != (tc.size >= aheadAfter) {
				t.Errorf("goroutine started: %v, after %d bytes", started, tc.size)
			}
			a.Close()
		})
	}
}

// blockingBody is a response whose host sends its pieces, a read each,
// and then nothing until it is closed.
type blockingBody struct {
	pieces [][]byte
	closed chan struct{}
}

func (b *blockingBody) Read(p []byte) (int, error) {
	if len(b.pieces) > 0 {
		n := copy(p, b.pieces[0])
		b.pieces = b.pieces[1:]
		return n, nil
	}
	<-b.closed
	return 0, errors.New("closed")
}

func (b *blockingBody) Close() error { close(b.closed); return nil }

// TestAheadReaderSendsWhatItHas: past the start of the goroutine, a read
// returns what has arrived without waiting for more, and Close ends the
// goroutine blocked on the host.
func TestAheadReaderSendsWhatItHas(t *testing.T) {
	body := &blockingBody{pieces: [][]byte{make([]byte, aheadAfter), make([]byte, 100)}, closed: make(chan struct{})}
	a := newAheadReader(body)
	p := make([]byte, 1<<20)
	if n, err := a.Read(p); n != aheadAfter || err != nil {
		t.Fatalf("first read: %d, %v", n, err)
	}
	got := make(chan int, 1)
	go func() {
		n, err := a.Read(p)
		if err != nil {
			t.Error(err)
		}
		got <- n
	}()
	select {
	case n := <-got:
		if n != 100 {
			t.Errorf("read %d bytes, want the 100 the host sent", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a read waited for more than the host sent")
	}
	a.Close()
	select {
	case _, ok := <-a.read:
		if ok {
			t.Error("a piece came after the host sent nothing more")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the goroutine did not end on Close")
	}
}

// endless is a host that always has more to send.
type endless struct{}

func (endless) Read(p []byte) (int, error) { return len(p), nil }
func (endless) Close() error               { return nil }

// TestAheadReaderCloseWhileAhead: Close ends the goroutine when it is not
// reading but waiting for the child to take what it read.
func TestAheadReaderCloseWhileAhead(t *testing.T) {
	a := newAheadReader(endless{})
	p := make([]byte, aheadAfter)
	if _, err := a.Read(p); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Read(p[:1]); err != nil { // starts the goroutine
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); len(a.read) < aheadPieces-1; {
		if time.Now().After(deadline) {
			t.Fatalf("the goroutine read %d pieces ahead, want %d", len(a.read), aheadPieces-1)
		}
		time.Sleep(time.Millisecond)
	}
	a.Close()
	waitNoAhead(t)
	for range aheadPieces { // what was read before Close, then the error
		if _, err := a.Read(p); err != nil {
			if err != errAheadClosed {
				t.Errorf("a read after Close: %v, want %v", err, errAheadClosed)
			}
			return
		}
	}
	t.Error("reads after Close go on")
}

// waitNoAhead fails the test unless every aheadReader goroutine ends
// within ten seconds.
func waitNoAhead(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		if !strings.Contains(stacks, "(*aheadReader).run") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("an aheadReader goroutine outlived its response")
		}
	}
}
