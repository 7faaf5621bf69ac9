// Command broker measures what the credential broker adds to an HTTPS
// request, side by side in one run: the direct request (the floor), a
// plain CONNECT tunnel (the broker with the host unbound), the broker
// terminating TLS and swapping the fake for the real value, a bare TLS
// relay (the floor of any proxy that terminates TLS: relay.go) and, when
// mitmdump is installed, mitmproxy doing the same header rewrite. It
// prints p50 and p99 per request with keep-alive and with a new connection
// each time, the time to the first byte of a streamed response, and the
// throughput of a large streamed response, with ratios to the floor; the
// throughput again with curl, in a process of its own, as the client.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/envsieve/envsieve/internal/broker"
)

var token = "ghp" + "_" + strings.Repeat("B3nc", 9)

func main() {
	n := flag.Int("n", 2000, "requests per mode")
	mb := flag.Int("mb", 1024, "MiB of the streamed response")
	mitm := flag.Bool("mitm", true, "measure mitmproxy too, when mitmdump is installed")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run (this process: server, client and broker) to `file`")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		check(err)
		check(pprof.StartCPUProfile(f))
		defer pprof.StopCPUProfile()
	}
	chunk := []byte(strings.Repeat("data: {\"delta\":\"hello world, streamed\"}\n\n", 1000))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			total := *mb << 20
			if v, err := strconv.Atoi(r.URL.Query().Get("mib")); err == nil {
				total = v << 20
			}
			for sent := 0; sent < total; sent += len(chunk) {
				w.Write(chunk[:min(len(chunk), total-sent)])
			}
		case "/first":
			w.Write([]byte("data: first\n\n"))
			w.(http.Flusher).Flush()
			time.Sleep(20 * time.Millisecond)
			w.Write([]byte("data: done\n\n"))
		default:
			if r.Header.Get("Authorization") != "Bearer "+token {
				http.Error(w, "bad token", http.StatusUnauthorized)
				return
			}
			io.WriteString(w, `{"ok":true}`)
		}
	}))
	srv.EnableHTTP2 = false
	srv.StartTLS()
	defer srv.Close()
	host := srv.Listener.Addr().String()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	dir, _ := os.MkdirTemp("", "envsieve-brokerbench-")
	defer os.RemoveAll(dir)

	bound, err := broker.Start(broker.Config{Bindings: []broker.Binding{{Name: "GITHUB_TOKEN", Hosts: []string{host}}},
		Secrets: map[string]string{"GITHUB_TOKEN": token}, Key: []byte("0123456789abcdef0123456789abcdef"),
		UpstreamRoots: roots, UID: os.Getuid(), Dir: dir})
	check(err)
	defer bound.Close()
	tunnelDir, _ := os.MkdirTemp("", "envsieve-brokerbench-")
	defer os.RemoveAll(tunnelDir)
	tunnel, err := broker.Start(broker.Config{Bindings: []broker.Binding{{Name: "GITHUB_TOKEN", Hosts: []string{"unbound.invalid"}}},
		Secrets: map[string]string{"GITHUB_TOKEN": token}, Key: []byte("0123456789abcdef0123456789abcdef"), UID: os.Getuid(), Dir: tunnelDir})
	check(err)
	defer tunnel.Close()
	fake := bound.Fakes()["GITHUB_TOKEN"]
	brokerRoots := x509.NewCertPool()
	brokerRoots.AppendCertsFromPEM(bound.CAPEM())

	relayAddr := startRelay(host, srv.TLS, roots)

	type mode struct {
		name  string
		proxy string
		roots *x509.CertPool
		auth  string
		dial  string // the address to dial instead of host's
	}
	modes := []mode{
		{"direct", "", roots, token, ""},
		{"CONNECT tunnel", tunnel.ChildEnv()["HTTPS_PROXY"], roots, token, ""},
		{"TLS relay, no HTTP (floor)", "", roots, token, relayAddr},
		{"envsieve broker", bound.ChildEnv()["HTTPS_PROXY"], brokerRoots, fake, ""},
	}
	if !*mitm {
		fmt.Println("# mitmproxy: not measured (-mitm=false)")
	} else if m, stop := startMitm(host, fake); m != "" {
		defer stop()
		ca, err := os.ReadFile(filepath.Join(os.Getenv("HOME"), ".mitmproxy", "mitmproxy-ca-cert.pem"))
		check(err)
		mitmRoots := x509.NewCertPool()
		mitmRoots.AppendCertsFromPEM(ca)
		modes = append(modes, mode{"mitmproxy (header rewrite)", m, mitmRoots, fake, ""})
	} else {
		fmt.Println("# mitmproxy: mitmdump not found (apt-get install mitmproxy), not measured")
	}
	fmt.Printf("# %d requests per mode, loopback HTTPS server, HTTP/1.1\n", *n)
	fmt.Printf("%-28s %12s %12s %12s %12s %14s\n", "mode", "ka p50", "ka p99", "new p50", "new p99", "first byte")
	var floor [5]time.Duration
	for i, m := range modes {
		ka := measure(*n, client(m.proxy, m.roots, m.dial, true), "https://"+host+"/api", "Bearer "+m.auth)
		nc := measure(*n/4, client(m.proxy, m.roots, m.dial, false), "https://"+host+"/api", "Bearer "+m.auth)
		fb := firstByte(50, client(m.proxy, m.roots, m.dial, true), "https://"+host+"/first")
		row := [5]time.Duration{pct(ka, 50), pct(ka, 99), pct(nc, 50), pct(nc, 99), pct(fb, 50)}
		if i == 0 {
			floor = row
		}
		fmt.Printf("%-28s", m.name)
		for j, d := range row {
			w := 12
			if j == 4 {
				w = 14
			}
			cell := fmt.Sprintf("%v", d.Round(time.Microsecond))
			if i > 0 {
				cell = fmt.Sprintf("+%v", (d - floor[j]).Round(time.Microsecond))
			}
			fmt.Printf(" %*s", w, cell)
		}
		if i > 0 {
			fmt.Printf("   (x%.2f ka p50)", float64(row[0])/float64(floor[0]))
		}
		fmt.Println()
	}
	fmt.Printf("\n# throughput of a %d MiB streamed response\n", *mb)
	for _, m := range modes {
		c := client(m.proxy, m.roots, m.dial, true)
		size := *mb
		if strings.HasPrefix(m.name, "mitmproxy") {
			size = min(size, 64) // a few MB/s: the whole size would take many minutes
		}
		start := time.Now()
		resp, err := c.Get(fmt.Sprintf("https://%s/big?mib=%d", host, size))
		check(err)
		nb, err := io.Copy(io.Discard, resp.Body)
		check(err)
		resp.Body.Close()
		el := time.Since(start)
		fmt.Printf("%-28s %8.0f MB/s (%d bytes in %v)\n", m.name, float64(nb)/el.Seconds()/1e6, nb, el.Round(time.Millisecond))
	}
	curlThroughput(dir, host, srv.Certificate(), relayAddr, bound, *mb)
}

// curlThroughput measures the streamed response again with curl as the
// client, in a process of its own as an agent's tools are, offering
// HTTP/2 and HTTP/1.1 as it does by default; through the broker it is given
// the environment the broker gives a child (its proxy and CA bundle).
func curlThroughput(dir, host string, cert *x509.Certificate, relayAddr string, b *broker.Broker, mb int) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		fmt.Println("# curl not found: not measured")
		return
	}
	hostCA := filepath.Join(dir, "host-ca.pem")
	check(os.WriteFile(hostCA, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600))
	fmt.Printf("\n# the same with curl as the client (%s)\n", curlVersion(curl))
	u := fmt.Sprintf("https://%s/big?mib=%d", host, mb)
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	var childEnv []string
	for k, v := range b.ChildEnv() {
		childEnv = append(childEnv, k+"="+v)
	}
	_, port, _ := net.SplitHostPort(host)
	for _, m := range []struct {
		name string
		env  []string
		args []string
	}{
		{"direct", env, []string{"--cacert", hostCA}},
		{"TLS relay, no HTTP (floor)", env, []string{"--cacert", hostCA, "--connect-to", "127.0.0.1:" + port + ":" + relayAddr}},
		// curl never proxies what NO_PROXY names, and the broker's child
		// environment keeps loopback there: the proxy is named.
		{"envsieve broker", append(env, childEnv...), []string{"--proxy", b.ChildEnv()["HTTPS_PROXY"]}},
	} {
		cmd := exec.Command(curl, append(m.args, "-sS", "-o", "/dev/null", "-w", "%{speed_download} %{size_download} %{http_version}", u)...)
		cmd.Env = m.env
		out, err := cmd.Output()
		check(err)
		var speed float64
		var size int64
		var version string
		_, err = fmt.Sscan(string(out), &speed, &size, &version)
		check(err)
		if size != int64(mb)<<20 {
			check(fmt.Errorf("curl %s: %d bytes, want %d", m.name, size, int64(mb)<<20))
		}
		fmt.Printf("%-28s %8.0f MB/s (HTTP/%s)\n", m.name, speed/1e6, version)
	}
}

func curlVersion(curl string) string {
	cmd := exec.Command(curl, "--version")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.Output()
	check(err)
	first, _, _ := strings.Cut(string(out), "\n")
	return strings.Join(strings.Fields(first)[:2], " ")
}

// client is an HTTP/1.1 client through proxy (when not empty) that dials
// dial instead of a URL's host (when not empty).
func client(proxy string, roots *x509.CertPool, dial string, keepAlive bool) *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: !keepAlive, MaxIdleConnsPerHost: 4}
	if dial != "" {
		tr.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, dial)
		}
	}
	if proxy != "" {
		u, err := url.Parse(proxy)
		check(err)
		tr.Proxy = http.ProxyURL(u)
	}
	return &http.Client{Transport: tr}
}

func measure(n int, c *http.Client, u, auth string) []time.Duration {
	out := make([]time.Duration, 0, n)
	for i := 0; i < n+20; i++ {
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Authorization", auth)
		start := time.Now()
		resp, err := c.Do(req)
		check(err)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			check(fmt.Errorf("status %d: the token did not arrive", resp.StatusCode))
		}
		if i >= 20 { // warm-up
			out = append(out, time.Since(start))
		}
	}
	return out
}

func firstByte(n int, c *http.Client, u string) []time.Duration {
	out := make([]time.Duration, 0, n)
	for i := 0; i < n; i++ {
		start := time.Now()
		resp, err := c.Get(u)
		check(err)
		buf := make([]byte, 1)
		_, err = resp.Body.Read(buf)
		check(err)
		out = append(out, time.Since(start))
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return out
}

func pct(d []time.Duration, p int) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// startMitm runs mitmdump as an explicit proxy that replaces the fake by
// the token in Authorization (what the broker does), trusting the stand-in
// upstream without verification (it has no way to take its CA here).
func startMitm(host, fake string) (string, func()) {
	mitm, err := exec.LookPath("mitmdump")
	if err != nil {
		return "", nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	script := filepath.Join(os.TempDir(), "envsieve-mitm-swap.py")
	check(os.WriteFile(script, []byte(fmt.Sprintf(`
def request(flow):
    a = flow.request.headers.get("Authorization", "")
    if %q in a:
        flow.request.headers["Authorization"] = a.replace(%q, %q)
`, fake, fake, token)), 0o600))
	cmd := exec.Command(mitm, "-q", "--listen-host", "127.0.0.1", "--listen-port", fmt.Sprint(port), "--ssl-insecure", "-s", script)
	cmd.Env = os.Environ()
	check(cmd.Start())
	ca := filepath.Join(os.Getenv("HOME"), ".mitmproxy", "mitmproxy-ca-cert.pem")
	for i := 0; i < 600; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			if _, err := os.Stat(ca); err == nil {
				break
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", port), func() { cmd.Process.Kill(); cmd.Wait() }
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "brokerbench:", err)
		os.Exit(1)
	}
}
