package broker

import (
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// BenchmarkScrub is the scrubber's throughput on a streamed body that
// holds no value (the usual case) in 32 KiB reads.
func BenchmarkScrub(b *testing.B) {
	fake := Fake(testKey, "GITHUB_TOKEN", realToken)
	pairs := append(scrubPairs("GITHUB_TOKEN", realToken, fake), scrubPairs("K", "sk-ant-api03-"+strings.Repeat("Qq1", 30), Fake(testKey, "K", "sk-ant-api03-"+strings.Repeat("Qq1", 30)))...)
	chunk := []byte(strings.Repeat(`{"type":"content_block_delta","delta":{"text":"hello world, this is a streamed answer"}}`+"\n", 400))[:32<<10]
	b.SetBytes(int64(len(chunk)) * 64)
	ps := newPatterns(pairs)
	buf := make([]byte, 32<<10)
	for b.Loop() {
		r := newScrubber(io.NopCloser(&repeatReader{chunk: chunk, n: 64}), ps, nil)
		for {
			if _, err := r.Read(buf); err != nil {
				break
			}
		}
	}
}

type repeatReader struct {
	chunk []byte
	n     int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n == 0 {
		return 0, io.EOF
	}
	r.n--
	return copy(p, r.chunk), nil
}

// benchServer is a loopback HTTPS server answering a small body.
func benchServer(b *testing.B) (*httptest.Server, *x509.CertPool) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"ok":true}`)
	}))
	b.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv, pool
}

func benchGet(b *testing.B, c *http.Client, u, auth string) {
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("Authorization", auth)
	resp, err := c.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// BenchmarkDirect is the floor: a keep-alive request straight to the
// loopback HTTPS server.
func BenchmarkDirect(b *testing.B) {
	srv, _ := benchServer(b)
	c := srv.Client()
	for b.Loop() {
		benchGet(b, c, srv.URL+"/x", "Bearer "+realToken)
	}
}

// BenchmarkBroker is the same request through the broker (proxy mode,
// intercepted, the fake swapped, the response scrubbed), keep-alive.
func BenchmarkBroker(b *testing.B) {
	srv, roots := benchServer(b)
	host := srv.Listener.Addr().String()
	c, fake := benchBroker(b, host, roots, false)
	for b.Loop() {
		benchGet(b, c, "https://"+host+"/x", "Bearer "+fake)
	}
}

// streamServer is a loopback HTTPS server (HTTP/1.1) streaming mib MiB of
// server-sent events in 42 KB writes: a chunked response, as a model's.
func streamServer(b *testing.B, mib int) (*httptest.Server, *x509.CertPool) {
	chunk := []byte(strings.Repeat("data: {\"delta\":\"hello world, streamed\"}\n\n", 1000))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for sent := 0; sent < mib<<20; sent += len(chunk) {
			w.Write(chunk[:min(len(chunk), mib<<20-sent)])
		}
	}))
	srv.StartTLS()
	b.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv, pool
}

// BenchmarkStreamDirect is the floor of a large streamed response: 64 MiB
// straight from the loopback HTTPS server.
func BenchmarkStreamDirect(b *testing.B) {
	srv, _ := streamServer(b, 64)
	c := srv.Client()
	b.SetBytes(64 << 20)
	for b.Loop() {
		benchGet(b, c, srv.URL+"/big", "")
	}
}

// BenchmarkStreamBroker is the same response through the broker
// (intercepted, scrubbed), HTTP/1.1 to the client.
func BenchmarkStreamBroker(b *testing.B) { benchStreamBroker(b, false) }

// BenchmarkStreamBrokerH2 is the same with a client that offers only
// HTTP/2 (a client offering both gets HTTP/1.1 from the broker).
func BenchmarkStreamBrokerH2(b *testing.B) { benchStreamBroker(b, true) }

func benchStreamBroker(b *testing.B, h2 bool) {
	srv, roots := streamServer(b, 64)
	host := srv.Listener.Addr().String()
	c, _ := benchBroker(b, host, roots, h2)
	b.SetBytes(64 << 20)
	for b.Loop() {
		benchGet(b, c, "https://"+host+"/big", "")
	}
}

// benchBroker starts a broker binding GITHUB_TOKEN to host (whose
// certificates roots verify) and returns a client through it (proxy mode,
// offering only HTTP/2 when h2, else only HTTP/1.1) and the token's fake.
func benchBroker(b *testing.B, host string, roots *x509.CertPool, h2 bool) (*http.Client, string) {
	br, err := Start(Config{Bindings: []Binding{{Name: "GITHUB_TOKEN", Hosts: []string{host}}},
		Secrets: map[string]string{"GITHUB_TOKEN": realToken}, Key: testKey, UpstreamRoots: roots, UID: -1, Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { br.Close() })
	tr := proxyTransport(b, br)
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetHTTP1(!h2)
	tr.Protocols.SetHTTP2(h2)
	return &http.Client{Transport: tr}, br.Fakes()["GITHUB_TOKEN"]
}

// BenchmarkNewConn is a new connection's round trip, from conc clients at
// once, each opening a connection, sending one request, reading the status
// line and closing: straight to a loopback net/http server answering 403
// (direct), and to the broker, which checks the peer's user (one
// sock_diag lookup on Linux) and answers a request without its credential
// with 403. It reports the p50 and p99 of one round trip in ms.
func BenchmarkNewConn(b *testing.B) {
	for _, conc := range []int{50, 200} {
		b.Run(fmt.Sprintf("direct/conc=%d", conc), func(b *testing.B) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, "envsieve broker: not found", http.StatusForbidden)
			}))
			b.Cleanup(srv.Close)
			benchNewConn(b, srv.Listener.Addr().String(), conc)
		})
		b.Run(fmt.Sprintf("broker/conc=%d", conc), func(b *testing.B) {
			br, err := Start(Config{Secrets: map[string]string{}, Key: testKey, UID: os.Getuid(), Dir: b.TempDir()})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { br.Close() })
			benchNewConn(b, br.Addr(), conc)
		})
	}
}

func benchNewConn(b *testing.B, addr string, conc int) {
	req := []byte("GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n")
	var mu sync.Mutex
	var lat []time.Duration
	var failed atomic.Int64
	b.SetParallelism((conc + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 9)
		var mine []time.Duration
		for pb.Next() {
			t0 := time.Now()
			c, err := net.Dial("tcp", addr)
			if err == nil {
				c.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err = c.Write(req); err == nil {
					_, err = io.ReadFull(c, buf)
				}
				c.Close()
			}
			if err != nil || string(buf) != "HTTP/1.1 " {
				failed.Add(1)
				continue
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	if n := failed.Load(); n > 0 {
		b.Errorf("%d connections got no answer", n)
	}
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}
