package broker

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// proxyAuthHeader is the Proxy-Authorization a child of b sends.
func proxyAuthHeader(b *Broker) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("envsieve:"+b.cred))
}

// closedWithin reports whether the broker closes c (a read ends) within d,
// and when.
func closedWithin(c net.Conn, d time.Duration) (bool, time.Duration) {
	start := time.Now()
	c.SetReadDeadline(start.Add(d))
	_, err := io.Copy(io.Discard, c)
	took := time.Since(start)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false, took
	}
	return true, took
}

// TestHalfOpenClosed: a child connection that never sends a whole request
// header, and an authenticated CONNECT to a bound host that never starts
// TLS, are closed by the broker once their deadline passes.
func TestHalfOpenClosed(t *testing.T) {
	srv, roots, _ := standIn(t)
	host := srv.Listener.Addr().String()
	const deadline = 500 * time.Millisecond
	b, _ := startBrokerCfg(t, host, roots, func(c *Config) {
		c.HandshakeTimeout, c.HeaderTimeout = deadline, deadline
	})
	for _, c := range []struct{ name, send string }{
		{"nothing sent", ""},
		{"half a header", "GET /x HTTP/1.1\r\nHost: h\r\n"},
		{"CONNECT, then no TLS", "CONNECT " + host + " HTTP/1.1\r\nHost: " + host + "\r\nProxy-Authorization: " + proxyAuthHeader(b) + "\r\n\r\n"},
		{"CONNECT, then half a ClientHello", "CONNECT " + host + " HTTP/1.1\r\nHost: " + host + "\r\nProxy-Authorization: " + proxyAuthHeader(b) + "\r\n\r\n\x16\x03\x01\x02\x00"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", b.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			start := time.Now()
			io.WriteString(conn, c.send)
			closed, _ := closedWithin(conn, deadline+3*time.Second)
			took := time.Since(start)
			if !closed {
				t.Fatalf("still open after %v (deadline %v)", took, deadline)
			}
			if took < deadline/2 {
				t.Errorf("closed after %v, before the deadline %v", took, deadline)
			}
		})
	}
}

// TestIdleClosed: a kept-alive child connection idle past IdleTimeout is
// closed, in base-URL mode and on an intercepted CONNECT.
func TestIdleClosed(t *testing.T) {
	srv, roots, _ := standIn(t)
	host := srv.Listener.Addr().String()
	const idle = 400 * time.Millisecond
	b, _ := startBrokerCfg(t, host, roots, func(c *Config) { c.IdleTimeout = idle })
	t.Run("base-url", func(t *testing.T) {
		conn, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, "GET /x HTTP/1.1\r\nHost: h\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		if closed, took := closedWithin(conn, idle+3*time.Second); !closed || took < idle/2 {
			t.Errorf("closed %v after %v (idle timeout %v)", closed, took, idle)
		}
	})
	t.Run("intercepted", func(t *testing.T) {
		conn, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		io.WriteString(conn, "CONNECT "+host+" HTTP/1.1\r\nHost: "+host+"\r\nProxy-Authorization: "+proxyAuthHeader(b)+"\r\n\r\n")
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("CONNECT: %v %v", resp, err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(b.CAPEM())
		tc := tls.Client(bufferedConn{Conn: conn, r: br}, &tls.Config{RootCAs: pool, ServerName: hostOnly(host), NextProtos: []string{"http/1.1"}})
		io.WriteString(tc, "GET /x HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
		tbr := bufio.NewReader(tc)
		resp, err = http.ReadResponse(tbr, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		start := time.Now()
		tc.SetReadDeadline(start.Add(idle + 3*time.Second))
		_, err = tbr.ReadByte()
		took := time.Since(start)
		if ne, ok := err.(net.Error); ok && ne.Timeout() || took < idle/2 {
			t.Errorf("read ended after %v with %v (idle timeout %v)", took, err, idle)
		}
	})
}

// TestConnLimit: past MaxConns, a new child connection is answered 503
// with a message and closed, audited; once one closes, a new one is
// served.
func TestConnLimit(t *testing.T) {
	srv, roots, _ := standIn(t)
	const max = 16
	b, log := startBrokerCfg(t, srv.Listener.Addr().String(), roots, func(c *Config) { c.MaxConns = max })
	var open []net.Conn
	defer func() {
		for _, c := range open {
			c.Close()
		}
	}()
	served := func() (string, error) {
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			return "", err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
		all, err := io.ReadAll(c)
		return string(all), err
	}
	for range max {
		c, err := net.Dial("tcp", b.Addr())
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, c)
	}
	time.Sleep(100 * time.Millisecond) // the broker has taken them
	got, err := served()
	if !strings.HasPrefix(got, "HTTP/1.1 503 ") || !strings.Contains(got, "too many connections") {
		t.Errorf("connection %d got %q, %v; want a 503 that says why", max+1, got, err)
	}
	if !log.has("denied", "", "connection-limit") {
		t.Error("no connection-limit event")
	}
	open[0].Close()
	open = open[1:]
	time.Sleep(100 * time.Millisecond)
	if got, err := served(); !strings.HasPrefix(got, "HTTP/1.1 403 ") {
		t.Errorf("after one closed: %q, %v; want the broker's own answer", got, err)
	}
}
