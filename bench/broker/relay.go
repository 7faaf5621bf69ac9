package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"sync"
)

// startRelay runs the floor of any proxy that terminates TLS: a relay that
// decrypts what the host sends and encrypts it again for the client, with
// no HTTP, no swapping and no scrubbing, forwarding as soon as a record is
// in. It is as thrifty with system calls as the broker: the host is read
// through a 64 KiB buffer, and the records read by the time the last write
// to the client ended go to it with one write. Clients dial its address and
// see the host's own certificate (cfg).
func startRelay(host string, cfg *tls.Config, roots *x509.CertPool) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go relay(c, host, cfg, roots)
		}
	}()
	return ln.Addr().String()
}

func relay(c net.Conn, host string, cfg *tls.Config, roots *x509.CertPool) {
	defer c.Close()
	out := &heldConn{Conn: c}
	client := tls.Server(out, cfg)
	raw, err := net.Dial("tcp", host)
	if err != nil {
		return
	}
	defer raw.Close()
	up := tls.Client(readConn{raw, bufio.NewReaderSize(raw, 64<<10)}, &tls.Config{RootCAs: roots, ServerName: "example.com"})
	go func() { io.Copy(up, client); up.Close() }()
	// A reader decrypts record by record; the writer takes every record
	// read by the time it is free and sends them with one write.
	type piece struct {
		b   []byte
		err error
	}
	free := make(chan []byte, 16)
	for range cap(free) {
		free <- make([]byte, 16<<10)
	}
	read := make(chan piece, cap(free))
	go func() {
		for {
			b := <-free
			n, err := up.Read(b)
			read <- piece{b[:n], err}
			if err != nil {
				return
			}
		}
	}()
	for {
		p := <-read
		out.hold()
		for {
			if len(p.b) > 0 {
				client.Write(p.b)
			}
			free <- p.b[:cap(p.b)]
			if p.err != nil {
				out.release()
				client.Close()
				return
			}
			select {
			case p = <-read:
				continue
			default:
			}
			break
		}
		if out.release() != nil {
			return
		}
	}
}

type readConn struct {
	net.Conn
	r *bufio.Reader
}

func (c readConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// heldConn gathers writes between hold and release and sends them as one.
type heldConn struct {
	net.Conn
	mu   sync.Mutex
	held bool
	buf  []byte
}

func (c *heldConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.held {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *heldConn) hold() { c.mu.Lock(); c.held = true; c.mu.Unlock() }

func (c *heldConn) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = false
	_, err := c.Conn.Write(c.buf)
	c.buf = c.buf[:0]
	return err
}
