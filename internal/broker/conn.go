package broker

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"sync"
	"time"
)

// discardLog keeps net/http's own messages (a client that hung up, a
// failed handshake) off the launcher's stderr, which the child shares.
var discardLog = log.New(io.Discard, "", 0)

// bufferedConn is a connection whose first bytes may already sit in a
// reader (after a hijack, or a CONNECT's response).
type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// CloseWrite half-closes when the connection can.
func (c bufferedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// oneConnListener yields one connection, then blocks until closed: an
// http.Server serves an intercepted connection through it.
type oneConnListener struct {
	c    net.Conn
	once sync.Once
	mu   sync.Mutex
	done chan struct{}
}

func newOneConnListener(c net.Conn) *oneConnListener {
	return &oneConnListener{c: c, done: make(chan struct{})}
}

func (l *oneConnListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	c := l.c
	l.c = nil
	l.mu.Unlock()
	if c != nil {
		return c, nil
	}
	<-l.done
	return nil, net.ErrClosed
}

func (l *oneConnListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *oneConnListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }

// peerListener accepts only connections of the broker's user (see
// peerUID): every other is closed at once, with an audit event. Past
// Config.MaxConns open connections, a new one is answered 503 and
// closed, with an audit event.
type peerListener struct {
	net.Listener
	b *Broker
}

func (l *peerListener) Accept() (net.Conn, error) {
	max := int64(orDefault(l.b.cfg.MaxConns, defaultMaxConns))
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.b.open.Add(1) > max {
			l.b.open.Add(-1)
			l.b.audit(Event{Kind: "denied", Host: c.RemoteAddr().String(), Place: "connection-limit"})
			go refuseBusy(c, max)
			continue
		}
		bc := batchOf(c)
		bc.onClose = func() { l.b.open.Add(-1) }
		want := l.b.cfg.UID
		if want < 0 {
			return bc, nil
		}
		uid, err := peerUID(c)
		if err == nil && uid == want {
			return bc, nil
		}
		reason := "peer-uid"
		if err != nil {
			reason = "peer-unknown"
		}
		l.b.audit(Event{Kind: "denied", Host: c.RemoteAddr().String(), Place: reason})
		bc.Close()
	}
}

// refuseBusy answers a connection past the cap with a 503 that says why,
// and closes it once the child has had a second to send its request (a
// close with its request unread would reset the connection, and the
// child could lose the answer).
func refuseBusy(c net.Conn, max int64) {
	defer c.Close()
	msg := fmt.Sprintf("envsieve broker: too many connections (%d open); try again\n", max)
	c.SetDeadline(time.Now().Add(time.Second))
	if _, err := fmt.Fprintf(c, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"+
		"Content-Length: %d\r\nConnection: close\r\n\r\n%s", len(msg), msg); err != nil {
		return
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
}

// batchConn is a connection whose writes can be held and sent as one: a
// TLS connection over it writes each record of up to 16 KiB with its own
// write, and an HTTP/1 response writer splits each flushed write into
// three (its 4 KiB buffer, the rest, the chunk's end), so a streamed
// response cost three system calls and three wake-ups of the reader per
// record it carried. Between hold and release, writes are gathered, and
// release sends them with one. Writes while nothing holds go straight
// through, after whatever was gathered, in order.
type batchConn struct {
	net.Conn
	mu    sync.Mutex
	holds int
	buf   []byte
	err   error // the first failed write: every later one fails with it

	// onClose, when set, runs once, at the first Close.
	onClose   func()
	closeOnce sync.Once
}

// Close closes the connection, and runs onClose the first time.
func (c *batchConn) Close() error {
	err := c.Conn.Close()
	if c.onClose != nil {
		c.closeOnce.Do(c.onClose)
	}
	return err
}

// maxBatchKeep is the largest gathering buffer kept between batches.
const maxBatchKeep = 512 << 10

func newBatchConn(c net.Conn) *batchConn { return &batchConn{Conn: c} }

// batchOf is newBatchConn; a test counts the writes under it.
var batchOf = newBatchConn

func (c *batchConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if c.holds > 0 {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	n, err := c.Conn.Write(p)
	if err != nil {
		c.err = err
	}
	return n, err
}

// hold gathers writes until the matching release.
func (c *batchConn) hold() {
	c.mu.Lock()
	c.holds++
	c.mu.Unlock()
}

// release ends a hold; the last one sends what was gathered, and reports
// the error of that write (or of one before it).
func (c *batchConn) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holds--
	if c.holds > 0 || len(c.buf) == 0 {
		return c.err
	}
	if c.err == nil {
		if _, err := c.Conn.Write(c.buf); err != nil {
			c.err = err
		}
	}
	c.buf = c.buf[:0]
	if cap(c.buf) > maxBatchKeep {
		c.buf = nil
	}
	return c.err
}

// CloseWrite half-closes when the connection can (net/http does before
// it closes a connection, so that the client reads all it was sent).
func (c *batchConn) CloseWrite() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// connKey is the context key of the connection a request came on.
type connKey struct{}

// readAheadConn reads its connection through a 64 KiB buffer: TLS reads a
// record's header, then its body, each with a system call of its own, and
// a host streaming a response has several records queued by the time the
// broker reads; one read takes them all.
type readAheadConn struct {
	net.Conn
	r *bufio.Reader
}

func (c readAheadConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// dialReadAhead dials an upstream (a host or the upstream proxy) as
// net.Dialer does, and reads it through a readAheadConn.
func dialReadAhead(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return readAheadConn{Conn: c, r: bufio.NewReaderSize(c, 64<<10)}, nil
}
