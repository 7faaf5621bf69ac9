package broker

import (
	"bufio"
	"io"
	"log"
	"net"
	"sync"
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
// peerUID): every other is closed at once, with an audit event.
type peerListener struct {
	net.Listener
	b *Broker
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		want := l.b.cfg.UID
		if want < 0 {
			return c, nil
		}
		uid, err := peerUID(c)
		if err == nil && uid == want {
			return c, nil
		}
		reason := "peer-uid"
		if err != nil {
			reason = "peer-unknown"
		}
		l.b.audit(Event{Kind: "denied", Host: c.RemoteAddr().String(), Place: reason})
		c.Close()
	}
}
