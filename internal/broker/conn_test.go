package broker

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// countConn counts the writes that reach a connection (nil: none) and
// keeps their bytes.
type countConn struct {
	net.Conn
	mu     sync.Mutex
	writes int
	failAt int // the write that fails (1-based); 0: none
	got    []byte
}

func (c *countConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.writes++
	if c.writes == c.failAt {
		return 0, errors.New("write failed")
	}
	c.got = append(c.got, p...)
	if c.Conn == nil {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c *countConn) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes
}

func TestBatchConn(t *testing.T) {
	cc := &countConn{}
	bc := newBatchConn(cc)
	write := func(s string) {
		t.Helper()
		if n, err := bc.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", s, n, err)
		}
	}
	write("a") // nothing holds: straight through
	if cc.count() != 1 {
		t.Fatalf("an unheld write made %d writes, want 1", cc.count())
	}
	bc.hold()
	write("b")
	bc.hold() // holds nest
	write("c")
	if err := bc.release(); err != nil {
		t.Fatal(err)
	}
	write("d")
	if cc.count() != 1 {
		t.Fatalf("held writes reached the connection: %d writes", cc.count())
	}
	if err := bc.release(); err != nil {
		t.Fatal(err)
	}
	if cc.count() != 2 || string(cc.got) != "abcd" {
		t.Fatalf("after the last release: %d writes of %q, want 2 of %q", cc.count(), cc.got, "abcd")
	}
	bc.hold()
	if err := bc.release(); err != nil || cc.count() != 2 {
		t.Fatalf("an empty hold wrote: %d writes, %v", cc.count(), err)
	}

	// A failed batch fails every write after it.
	cc = &countConn{failAt: 1}
	bc = newBatchConn(cc)
	bc.hold()
	write("x")
	if err := bc.release(); err == nil {
		t.Fatal("the batch's failed write was not reported")
	}
	if _, err := bc.Write([]byte("y")); err == nil {
		t.Fatal("a write after a failed one succeeded")
	}
	if cc.count() != 1 {
		t.Fatalf("a write reached the connection after it failed: %d writes", cc.count())
	}
}

// TestBatchedWriterOneWrite checks what batching is for: each flushed write
// of a chunked HTTP/1 response, over TLS and in the clear, reaches the
// connection with one write (without it, three), and the child reads the
// events as they were sent.
func TestBatchedWriterOneWrite(t *testing.T) {
	ca, err := newAuthority([]string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.leaf("x")
	if err != nil {
		t.Fatal(err)
	}
	events := []string{"data: one\n\n", strings.Repeat("data: long\n\n", 2000), "data: three\n\n"}
	for _, secure := range []bool{false, true} {
		name := "clear"
		if secure {
			name = "tls"
		}
		t.Run(name, func(t *testing.T) {
			for _, batched := range []bool{false, true} {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				cliEnd, err := net.Dial("tcp", ln.Addr().String())
				if err != nil {
					t.Fatal(err)
				}
				srvEnd, err := ln.Accept()
				ln.Close()
				if err != nil {
					t.Fatal(err)
				}
				cc := &countConn{Conn: srvEnd}
				bc := newBatchConn(cc)
				var conn net.Conn = bc
				if secure {
					conn = tls.Server(bc, &tls.Config{Certificates: []tls.Certificate{*leaf}})
				}
				var perEvent []int
				next := make(chan bool)
				srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if batched {
						w = batchedWriter{ResponseWriter: w, c: bc}
					}
					w.Header().Set("Content-Type", "text/event-stream")
					http.NewResponseController(w).Flush()
					for _, e := range events {
						before := cc.count()
						io.WriteString(w, e)
						if !batched {
							http.NewResponseController(w).Flush()
						}
						perEvent = append(perEvent, cc.count()-before)
						next <- true // the child has read it before the next
					}
				})}
				go srv.Serve(newOneConnListener(conn))
				var client net.Conn = cliEnd
				if secure {
					client = tls.Client(cliEnd, &tls.Config{InsecureSkipVerify: true})
				}
				io.WriteString(client, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
				br := bufio.NewReader(client)
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range events {
					<-next
					buf := make([]byte, len(e))
					if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != e {
						t.Fatalf("read %.20q..., %v; want the event as sent", buf, err)
					}
				}
				srv.Close()
				client.Close()
				for i, n := range perEvent {
					if batched && n != 1 {
						t.Errorf("batched: event %d reached the connection in %d writes, want 1", i, n)
					}
					if !batched && i == 1 && n < 3 {
						t.Errorf("unbatched: event %d took %d writes: the control no longer shows what batching saves", i, n)
					}
				}
			}
		})
	}
}

// TestBrokerBatchesStreams: through the broker itself, in proxy mode
// (intercepted TLS) and base-URL mode (plain HTTP), each event of a
// streamed response after the first reaches the child's socket with one
// write.
func TestBrokerBatchesStreams(t *testing.T) {
	var mu sync.Mutex
	var socks []*countConn // the broker's ends of the child's connections
	orig := batchOf
	batchOf = func(c net.Conn) *batchConn {
		if _, raw := c.(*net.TCPConn); raw {
			cc := &countConn{Conn: c}
			mu.Lock()
			socks = append(socks, cc)
			mu.Unlock()
			c = cc
		}
		return orig(c)
	}
	t.Cleanup(func() { batchOf = orig })
	// writes counts the writes on the child connections accepted since
	// the first `from`: the last mode's connection is not counted (the
	// broker closing it, a write of its own, may come late).
	writes := func(from int) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, c := range socks[from:] {
			n += c.count()
		}
		return n
	}

	events := []string{"data: one\n\n", strings.Repeat("data: long\n\n", 2000), "data: three\n\n", strings.Repeat("data: more\n\n", 3000)}
	next := make(chan bool)
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			<-next
			io.WriteString(w, e)
			w.(http.Flusher).Flush()
		}
		<-next // the response's end, a write of its own, after the test has counted
	}))
	up.StartTLS()
	t.Cleanup(up.Close)
	roots := x509.NewCertPool()
	roots.AddCert(up.Certificate())
	host := up.Listener.Addr().String()
	b, _ := startBroker(t, host, roots, Binding{Name: "ANTHROPIC_API_KEY", BaseURL: "ANTHROPIC_BASE_URL", Upstream: up.URL})
	env := b.ChildEnv()
	pu, err := url.Parse(env["HTTPS_PROXY"])
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b.CAPEM())
	for _, mode := range []struct{ name, url string }{
		{"proxy", "https://" + host + "/stream"},
		{"base URL", env["ANTHROPIC_BASE_URL"] + "/stream"},
	} {
		t.Run(mode.name, func(t *testing.T) {
			mu.Lock()
			from := len(socks)
			mu.Unlock()
			tr := &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: pool}}
			defer tr.CloseIdleConnections()
			if mode.name == "base URL" {
				tr.Proxy = nil
			}
			done := make(chan *http.Response, 1)
			go func() {
				resp, err := (&http.Client{Transport: tr}).Get(mode.url)
				if err != nil {
					t.Error(err)
				}
				done <- resp
			}()
			next <- true // the first event lets the headers out
			resp := <-done
			if resp == nil {
				t.FailNow()
			}
			defer resp.Body.Close()
			for i, e := range events {
				before := writes(from) // before the host may send it
				if i > 0 {
					next <- true
				}
				buf := make([]byte, len(e))
				if _, err := io.ReadFull(resp.Body, buf); err != nil || string(buf) != e {
					t.Fatalf("event %d: read %.20q..., %v", i, buf, err)
				}
				if n := writes(from) - before; i > 0 && n != 1 {
					t.Errorf("event %d (%d bytes) reached the child's socket in %d writes, want 1", i, len(e), n)
				}
			}
			next <- true
		})
	}
}
