// Command broker measures what the credential broker adds to an HTTPS
// request, side by side in one run: the direct request (the floor), a
// plain CONNECT tunnel (the broker with the host unbound), the broker
// terminating TLS and swapping the fake for the real value, and, when
// mitmdump is installed, mitmproxy doing the same header rewrite. It
// prints p50 and p99 per request with keep-alive and with a new connection
// each time, the time to the first byte of a streamed response, and the
// throughput of a large streamed response, with ratios to the floor.
package main

import (
	"crypto/tls"
	"crypto/x509"
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

	"github.com/envsieve/envsieve/broker"
)

var token = "ghp" + "_" + strings.Repeat("B3nc", 9)

func main() {
	n := flag.Int("n", 2000, "requests per mode")
	mb := flag.Int("mb", 1024, "MiB of the streamed response")
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

	type mode struct {
		name  string
		proxy string
		roots *x509.CertPool
		auth  string
	}
	modes := []mode{
		{"direct", "", roots, token},
		{"CONNECT tunnel", tunnel.ChildEnv()["HTTPS_PROXY"], roots, token},
		{"envsieve broker", bound.ChildEnv()["HTTPS_PROXY"], brokerRoots, fake},
	}
	if m, stop := startMitm(host, fake); m != "" {
		defer stop()
		ca, err := os.ReadFile(filepath.Join(os.Getenv("HOME"), ".mitmproxy", "mitmproxy-ca-cert.pem"))
		check(err)
		mitmRoots := x509.NewCertPool()
		mitmRoots.AppendCertsFromPEM(ca)
		modes = append(modes, mode{"mitmproxy (header rewrite)", m, mitmRoots, fake})
	} else {
		fmt.Println("# mitmproxy: mitmdump not found (apt-get install mitmproxy), not measured")
	}
	fmt.Printf("# %d requests per mode, loopback HTTPS server, HTTP/1.1\n", *n)
	fmt.Printf("%-28s %12s %12s %12s %12s %14s\n", "mode", "ka p50", "ka p99", "new p50", "new p99", "first byte")
	var floor [5]time.Duration
	for i, m := range modes {
		ka := measure(*n, m.proxy, m.roots, "https://"+host+"/api", "Bearer "+m.auth, true)
		nc := measure(*n/4, m.proxy, m.roots, "https://"+host+"/api", "Bearer "+m.auth, false)
		fb := firstByte(50, m.proxy, m.roots, "https://"+host+"/first")
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
		c := client(m.proxy, m.roots, true)
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
}

func client(proxy string, roots *x509.CertPool, keepAlive bool) *http.Client {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}, DisableKeepAlives: !keepAlive, MaxIdleConnsPerHost: 4}
	if proxy != "" {
		u, err := url.Parse(proxy)
		check(err)
		tr.Proxy = http.ProxyURL(u)
	}
	return &http.Client{Transport: tr}
}

func measure(n int, proxy string, roots *x509.CertPool, u, auth string, keepAlive bool) []time.Duration {
	c := client(proxy, roots, keepAlive)
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

func firstByte(n int, proxy string, roots *x509.CertPool, u string) []time.Duration {
	c := client(proxy, roots, true)
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
