package daemon

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
)

// lineChannel is the daemon's framing: one JSON message per line, at most max
// bytes each (the newline and a CR before it not counted). A longer message
// gets one error reply (id null, CodeMessageTooLarge) and ends the
// connection: what follows cannot be framed safely.
type lineChannel struct {
	r   *bufio.Reader
	c   net.Conn
	max int

	wmu sync.Mutex
	buf []byte
}

var errTooLarge = errors.New("message too large")

func newLineChannel(c net.Conn, max int) *lineChannel {
	return &lineChannel{r: bufio.NewReaderSize(c, 64<<10), c: c, max: max}
}

// Send writes msg and a newline in one write. A message holding a newline
// cannot be framed (encoding/json never writes one).
func (ch *lineChannel) Send(msg []byte) error {
	if bytes.IndexByte(msg, '\n') >= 0 {
		return errors.New("message contains a newline")
	}
	ch.wmu.Lock()
	defer ch.wmu.Unlock()
	ch.buf = append(append(ch.buf[:0], msg...), '\n')
	_, err := ch.c.Write(ch.buf)
	if cap(ch.buf) > 1<<20 {
		ch.buf = nil // do not keep one huge output chunk's buffer forever
	}
	return err
}

// Recv returns the next non-empty line without its line end. A last line
// without a newline is returned as a message; the next call reports io.EOF.
func (ch *lineChannel) Recv() ([]byte, error) {
	for {
		var line []byte
		for {
			chunk, err := ch.r.ReadSlice('\n')
			if len(line)+len(chunk) > ch.max+2 {
				ch.refuse()
				return nil, errTooLarge
			}
			line = append(line, chunk...)
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil && (!errors.Is(err, io.EOF) || len(line) == 0) {
				return nil, err
			}
			break
		}
		line = bytes.TrimSuffix(line, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(line) > ch.max {
			ch.refuse()
			return nil, errTooLarge
		}
		if len(bytes.TrimSpace(line)) > 0 {
			return line, nil
		}
	}
}

func (ch *lineChannel) refuse() {
	msg := fmt.Sprintf(`{"jsonrpc":"2.0","id":null,"error":{"code":%d,"message":"message longer than %d bytes: the connection is closed"}}`,
		CodeMessageTooLarge, ch.max)
	_ = ch.Send([]byte(msg))
}

// Close closes the connection.
func (ch *lineChannel) Close() error { return ch.c.Close() }
