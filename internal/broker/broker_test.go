package broker

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// realToken is the brokered secret of these tests, assembled at run time.
var realToken = "ghp" + "_" + strings.Repeat("R3aL", 9)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// echo is what the stand-in host received.
type echo struct {
	Method, Path, Query, Auth, APIKey, Body, Other string
}

// standIn starts an HTTPS server on loopback that answers with what it
// received (and, at /leak, the real value itself).
// recorder keeps what a stand-in received.
type recorder struct {
	mu  sync.Mutex
	got []echo
}

func (r *recorder) all() []echo {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func (r *recorder) last() echo {
	all := r.all()
	if len(all) == 0 {
		return echo{}
	}
	return all[len(all)-1]
}

func standIn(t *testing.T) (*httptest.Server, *x509.CertPool, *recorder) {
	t.Helper()
	rec := &recorder{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		e := echo{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery, Auth: r.Header.Get("Authorization"),
			APIKey: r.Header.Get("X-Api-Key"), Body: string(body), Other: r.Header.Get("X-Other")}
		rec.mu.Lock()
		rec.got = append(rec.got, e)
		rec.mu.Unlock()
		if r.URL.Path == "/leakbig" {
			// Past aheadAfter, each value split across two flushed writes.
			for i := 0; i < leakBigValues; i++ {
				io.WriteString(w, strings.Repeat("x", 16000)+realToken[:20])
				w.(http.Flusher).Flush()
				io.WriteString(w, realToken[20:]+"\n")
			}
			return
		}
		if r.URL.Path == "/leak" {
			w.Header().Set("X-Echo", realToken)
			for i := 0; i < 3; i++ {
				fmt.Fprintf(w, "chunk %d: %s\n", i, realToken)
				w.(http.Flusher).Flush()
			}
			return
		}
		json.NewEncoder(w).Encode(e)
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv, pool, rec
}

type auditLog struct {
	mu     sync.Mutex
	events []Event
}

func (a *auditLog) add(e Event) {
	a.mu.Lock()
	a.events = append(a.events, e)
	a.mu.Unlock()
}

func (a *auditLog) has(kind, secret, place string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.ContainsFunc(a.events, func(e Event) bool {
		return e.Kind == kind && e.Secret == secret && (place == "" || e.Place == place)
	})
}

// startBroker starts a broker binding GITHUB_TOKEN to host.
func startBroker(t *testing.T, host string, roots *x509.CertPool, extra ...Binding) (*Broker, *auditLog) {
	t.Helper()
	log := &auditLog{}
	b, err := Start(Config{
		Bindings:      append([]Binding{{Name: "GITHUB_TOKEN", Hosts: []string{host}}}, extra...),
		Secrets:       map[string]string{"GITHUB_TOKEN": realToken, "ANTHROPIC_API_KEY": "sk-ant-api03-" + strings.Repeat("Qq1", 20)},
		Key:           testKey,
		UpstreamRoots: roots,
		UID:           os.Getuid(),
		Dir:           t.TempDir(),
		Env:           map[string]string{},
		Audit:         log.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, log
}

// childEnv is a client's whole environment: the broker's variables and a
// PATH.
func childEnv(b *Broker) []string {
	env := []string{"PATH=/usr/bin:/bin:" + os.Getenv("PATH"), "HOME=" + os.TempDir()}
	for k, v := range b.ChildEnv() {
		env = append(env, k+"="+v)
	}
	return env
}

func checkNoReal(t *testing.T, what string, data []byte) {
	t.Helper()
	if bytes.Contains(data, []byte(realToken)) {
		t.Errorf("%s holds the real value", what)
	}
}

// TestClientsThroughProxy: real clients, given only the fake and the proxy
// variables, reach the bound host with the real value; what they print
// (the host's echo of the value) holds only the fake.
func TestClientsThroughProxy(t *testing.T) {
	srv, roots, got := standIn(t)
	host := srv.Listener.Addr().String()
	b, log := startBroker(t, host, roots)
	fake := b.Fakes()["GITHUB_TOKEN"]
	url := "https://" + host + "/repos?x=1"
	clients := []struct {
		name string
		argv []string
	}{
		{"curl", []string{"curl", "-sS", "--fail", "-H", "Authorization: token " + fake, url}},
		{"python3 urllib", []string{"python3", "-c", `import os, sys, urllib.request
r = urllib.request.Request(sys.argv[1], headers={"Authorization": "Bearer " + os.environ["GITHUB_TOKEN"]})
sys.stdout.write(urllib.request.urlopen(r).read().decode())`, url}},
		{"git-style basic", []string{"curl", "-sS", "--fail", "-u", "x-access-token:" + fake, url}},
	}
	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			if _, err := exec.LookPath(c.argv[0]); err != nil {
				t.Fatalf("%s is needed: %v", c.argv[0], err)
			}
			n := len(got.all())
			cmd := exec.Command(c.argv[0], c.argv[1:]...)
			cmd.Env = childEnv(b)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %s", err, stderr.String())
			}
			checkNoReal(t, "the client's output", out)
			var e echo
			if json.Unmarshal(out, &e) == nil { // the echo, as the child reads it
				checkNoReal(t, "the echoed Basic credential", []byte(basicUserPass(e.Auth)))
			}
			checkNoReal(t, "the client's stderr", stderr.Bytes())
			if !bytes.Contains(out, []byte(fake)) && !strings.Contains(basicUserPass(e.Auth), fake) {
				t.Errorf("the echo does not hold the fake in place of the real value: %s", out)
			}
			if len(got.all()) != n+1 {
				t.Fatalf("the host got %d requests", len(got.all())-n)
			}
			h := got.all()[n]
			if !strings.Contains(h.Auth, realToken) && !strings.Contains(basicUserPass(h.Auth), realToken) {
				t.Errorf("the host did not get the real value in Authorization (got %d bytes)", len(h.Auth))
			}
		})
	}
	if !log.has("swapped", "GITHUB_TOKEN", "header:Authorization") {
		t.Error("no swapped event")
	}
	for _, kv := range childEnv(b) {
		checkNoReal(t, "the child's environment", []byte(kv))
	}
}

// brokerFor starts a loopback HTTPS server (HTTP/1.1) answering with h,
// and a broker bound to it; it returns the server's address and the broker.
func brokerFor(t *testing.T, h http.Handler) (string, *Broker) {
	t.Helper()
	srv := httptest.NewTLSServer(h)
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	host := srv.Listener.Addr().String()
	b, _ := startBroker(t, host, roots)
	return host, b
}

// proxyTransport is a client's transport through b as its HTTPS proxy,
// trusting b's CA; its connections are closed when tb ends.
func proxyTransport(tb testing.TB, b *Broker) *http.Transport {
	tb.Helper()
	pu, err := url.Parse(b.ChildEnv()["HTTPS_PROXY"])
	if err != nil {
		tb.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(b.CAPEM())
	tr := &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: pool}}
	tb.Cleanup(tr.CloseIdleConnections)
	return tr
}

func basicUserPass(v string) string {
	r := &http.Request{Header: http.Header{"Authorization": {v}}}
	u, p, _ := r.BasicAuth()
	return u + ":" + p
}

// TestGoClient: a Go net/http client through the proxy (the proxy named
// explicitly: ProxyFromEnvironment never proxies loopback), a streamed
// response scrubbed. A client that offers HTTP/1.1 and HTTP/2 gets
// HTTP/1.1 (the faster stream through the broker); one that offers only
// HTTP/2 gets HTTP/2.
func TestGoClient(t *testing.T) {
	srv, roots, got := standIn(t)
	host := srv.Listener.Addr().String()
	b, _ := startBroker(t, host, roots)
	fake := b.Fakes()["GITHUB_TOKEN"]
	for _, tc := range []struct {
		name      string
		h1, h2    bool
		wantMajor int
	}{
		{"offers both", true, true, 1},
		{"offers only h2", false, true, 2},
		{"offers only http/1.1", true, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := proxyTransport(t, b)
			tr.Protocols = new(http.Protocols)
			tr.Protocols.SetHTTP1(tc.h1)
			tr.Protocols.SetHTTP2(tc.h2)
			c := &http.Client{Transport: tr}
			req, _ := http.NewRequest("GET", "https://"+host+"/leak", nil)
			req.Header.Set("Authorization", "Bearer "+fake)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			checkNoReal(t, "the response body", body)
			checkNoReal(t, "the response header", []byte(resp.Header.Get("X-Echo")))
			if resp.Header.Get("X-Echo") != fake || strings.Count(string(body), fake) != 3 {
				t.Errorf("the real value did not come back as the fake: %d bytes", len(body))
			}
			if resp.ProtoMajor != tc.wantMajor {
				t.Errorf("the broker spoke %s, want HTTP/%d", resp.Proto, tc.wantMajor)
			}
			if e := got.last(); !strings.Contains(e.Auth, realToken) {
				t.Error("the host did not get the real value")
			}
		})
	}
}

// leakBigValues is how many times /leakbig sends the real value.
const leakBigValues = 64

// TestLargeResponseScrubbed: a streamed response of a megabyte, read from
// the host ahead of the child past its first aheadAfter bytes, comes to the
// child whole with every real value in it, split across the host's writes,
// replaced by the fake.
func TestLargeResponseScrubbed(t *testing.T) {
	srv, roots, _ := standIn(t)
	host := srv.Listener.Addr().String()
	b, _ := startBroker(t, host, roots)
	fake := b.Fakes()["GITHUB_TOKEN"]
	resp, err := (&http.Client{Transport: proxyTransport(t, b)}).Get("https://" + host + "/leakbig")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	checkNoReal(t, "the response body", body)
	if want := leakBigValues * (16000 + len(realToken) + 1); len(body) != want || len(body) < 2*aheadAfter {
		t.Errorf("%d bytes, want %d (past %d)", len(body), want, aheadAfter)
	}
	if n := strings.Count(string(body), fake); n != leakBigValues {
		t.Errorf("%d fakes, want %d", n, leakBigValues)
	}
}

// TestChildHangsUpMidStream: a child that stops reading a long response
// and hangs up, after the broker began reading it ahead, ends the
// broker's connection to the host (the host's writes fail) and the
// goroutine reading ahead.
func TestChildHangsUpMidStream(t *testing.T) {
	hostDone := make(chan error, 1)
	host, b := brokerFor(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("data: endless\n\n", 1000))
		for {
			if _, err := w.Write(chunk); err != nil {
				hostDone <- err
				return
			}
		}
	}))
	tr := proxyTransport(t, b)
	resp, err := (&http.Client{Transport: tr}).Get("https://" + host + "/endless")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.CopyN(io.Discard, resp.Body, 4*aheadAfter); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // unread: the transport closes the connection
	tr.CloseIdleConnections()
	select {
	case <-hostDone:
	case <-time.After(20 * time.Second):
		t.Fatal("the host is still being read 20 s after the child hung up")
	}
	waitNoAhead(t)
}

// TestFakeToUnboundHostRefused: the fake sent to a host it is not bound to
// is refused by the broker (403, an event), and that host never sees a
// request; in a body to its own host it arrives as the fake.
func TestFakeToUnboundHostRefused(t *testing.T) {
	srv, roots, got := standIn(t)
	other, _, otherGot := standIn(t)
	host := srv.Listener.Addr().String()
	b, log := startBroker(t, host, roots)
	fake := b.Fakes()["GITHUB_TOKEN"]
	// Plain HTTP to another host, through the proxy: the broker sees it.
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the unbound host got a request holding %q", r.Header.Get("Authorization")[:6])
	}))
	defer plain.Close()
	env := b.ChildEnv()
	pu, _ := url.Parse(env["HTTP_PROXY"])
	c := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu)}}
	for _, place := range []string{"header", "query"} {
		req, _ := http.NewRequest("GET", plain.URL+"/x", nil)
		if place == "header" {
			req.Header.Set("Authorization", "Bearer "+fake)
		} else {
			req.URL.RawQuery = "token=" + fake
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", place, resp.StatusCode)
		}
	}
	if !log.has("refused", "GITHUB_TOKEN", "header:Authorization") || !log.has("refused", "GITHUB_TOKEN", "query:token") {
		t.Errorf("no refused events: %+v", log.events)
	}
	_ = other
	if len(otherGot.all()) != 0 {
		t.Error("the other host got a request")
	}
	// In a body (an issue, a gist) to its own host: the fake, not the value.
	cmd := exec.Command("curl", "-sS", "--fail", "-X", "POST", "--data", "my token is "+fake, "https://"+host+"/issues")
	cmd.Env = childEnv(b)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("curl: %v %s", err, out)
	}
	e := got.last()
	if strings.Contains(e.Body, realToken) || !strings.Contains(e.Body, fake) {
		t.Errorf("the body did not arrive with the fake: %d bytes", len(e.Body))
	}
	if !log.has("unswapped", "GITHUB_TOKEN", "body") {
		t.Error("no unswapped event for the body")
	}
}

// TestCredentialRequired: without the launch's proxy credential, or with
// a wrong base-URL prefix, nothing is served.
func TestCredentialRequired(t *testing.T) {
	srv, roots, got := standIn(t)
	host := srv.Listener.Addr().String()
	b, log := startBroker(t, host, roots)
	fake := b.Fakes()["GITHUB_TOKEN"]
	for _, proxy := range []string{"http://" + b.Addr(), "http://envsieve:wrong@" + b.Addr()} {
		cmd := exec.Command("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--proxy", proxy,
			"-H", "Authorization: token "+fake, "https://"+host+"/x")
		cmd.Env = childEnv(b)
		out, _ := cmd.Output()
		if !strings.Contains(string(out), "407") && !strings.Contains(string(out), "000") {
			t.Errorf("proxy %s: got %s, want a refused CONNECT (407)", strings.Split(proxy, "@")[0], out)
		}
	}
	resp, err := http.Get("http://" + b.Addr() + "/0123456789abcdef0123456789abcdef/anthropic_base_url/v1/messages")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a wrong base-URL prefix: %d, want 403", resp.StatusCode)
	}
	if len(got.all()) != 0 {
		t.Error("the host got a request")
	}
	if !log.has("denied", "", "proxy-credential") || !log.has("denied", "", "base-url-credential") {
		t.Errorf("no denied events: %+v", log.events)
	}
}

// TestBaseURL: base-URL mode with node's fetch: the variable points at the
// broker, the upstream gets the real key, the child holds the fake.
func TestBaseURL(t *testing.T) {
	srv, roots, got := standIn(t)
	key := "sk-ant-api03-" + strings.Repeat("Qq1", 20)
	b, _ := startBroker(t, "api.github.invalid", roots, Binding{Name: "ANTHROPIC_API_KEY", BaseURL: "ANTHROPIC_BASE_URL",
		In: []string{"header:x-api-key"}, Upstream: srv.URL + "/anthropic"})
	env := b.ChildEnv()
	fake := env["ANTHROPIC_API_KEY"]
	if fake == key || !strings.HasPrefix(fake, "sk-ant-api03-") || len(fake) != len(key) {
		t.Fatalf("the fake is not format-preserving: prefix %q, len %d", fake[:13], len(fake))
	}
	cmd := exec.Command("node", "-e", `fetch(process.env.ANTHROPIC_BASE_URL + "/v1/messages", {method: "POST",
  headers: {"x-api-key": process.env.ANTHROPIC_API_KEY, "content-type": "application/json"}, body: "{}"})
  .then(r => r.text()).then(t => process.stdout.write(t)).catch(e => { console.error(String(e)); process.exit(1) })`)
	cmd.Env = childEnv(b)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v %s", err, out)
	}
	e := got.last()
	if e.APIKey != key || e.Path != "/anthropic/v1/messages" {
		t.Errorf("the upstream got path %q and a key of %d bytes, want the real key", e.Path, len(e.APIKey))
	}
	if strings.Contains(string(out), key) || !strings.Contains(string(out), fake) {
		t.Errorf("the echo did not come back with the fake")
	}
	// curl honours HTTP_PROXY, which points at the broker too: the
	// base-URL request arrives through the proxy and is served the same.
	cmd = exec.Command("curl", "-sS", "--fail", "-H", "x-api-key: "+fake, env["ANTHROPIC_BASE_URL"]+"/v1/models")
	cmd.Env = childEnv(b)
	out, err = cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("curl: %v %s", err, out)
	}
	if e := got.last(); e.APIKey != key || e.Path != "/anthropic/v1/models" {
		t.Errorf("through the proxy variables: the upstream got path %q and a key of %d bytes", e.Path, len(e.APIKey))
	}
}

// TestCAConstrained: the launch CA cannot vouch for a host it was not made
// for.
func TestCAConstrained(t *testing.T) {
	ca, err := newAuthority([]string{"api.github.com", "127.0.0.1:8443"})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	for host, ok := range map[string]bool{"api.github.com": true, "127.0.0.1": true, "evil.example": false, "10.0.0.1": false} {
		leaf, err := ca.leaf(host)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := x509.ParseCertificate(leaf.Certificate[0])
		_, verr := c.Verify(x509.VerifyOptions{Roots: pool, DNSName: host})
		if (verr == nil) != ok {
			t.Errorf("%s: verify error %v, want ok=%v", host, verr, ok)
		}
	}
}

func TestMatchHost(t *testing.T) {
	for _, tc := range []struct {
		pattern, target string
		want            bool
	}{
		{"api.github.com", "api.github.com:443", true},
		{"api.github.com", "API.GitHub.com:8443", true},
		{"api.github.com:443", "api.github.com:8443", false},
		{"*.github.com", "uploads.github.com:443", true},
		{"*.github.com", "github.com:443", false},
		{"*.github.com", "evilgithub.com:443", false},
		{"127.0.0.1:8080", "127.0.0.1:8080", true},
		{"github.com", "github.com.evil.com:443", false},
	} {
		if got := matchHost(tc.pattern, tc.target); got != tc.want {
			t.Errorf("matchHost(%q, %q) = %v", tc.pattern, tc.target, got)
		}
	}
}

var _ = net.Listen
