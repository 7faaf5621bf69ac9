package broker

import (
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
