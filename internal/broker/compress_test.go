package broker

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/zstd"
)

// encodeWith applies codings to data in order (the first is applied
// first, as a Content-Encoding lists them). "deflate-raw" is raw deflate
// sent as "deflate" (as some servers do).
func encodeWith(t testing.TB, codings []string, data []byte) []byte {
	t.Helper()
	for _, c := range codings {
		var buf bytes.Buffer
		var w io.WriteCloser
		switch c {
		case "gzip", "x-gzip":
			w = gzip.NewWriter(&buf)
		case "deflate":
			w = zlib.NewWriter(&buf)
		case "deflate-raw":
			w, _ = flate.NewWriter(&buf, flate.DefaultCompression)
		case "br":
			w = brotli.NewWriter(&buf)
		case "zstd":
			z, err := zstd.NewWriter(&buf, zstd.WithEncoderConcurrency(1))
			if err != nil {
				t.Fatal(err)
			}
			w = z
		default:
			t.Fatalf("no encoder for %q", c)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		data = buf.Bytes()
	}
	return data
}

// headerCodings is how a list of test codings is named in Content-Encoding.
func headerCodings(codings []string) string {
	return strings.ReplaceAll(strings.Join(codings, ", "), "deflate-raw", "deflate")
}

// decodeAs undoes a Content-Encoding with the standard decoders, as a
// child's client would: what the child would read.
func decodeAs(t *testing.T, ce string, data []byte) []byte {
	t.Helper()
	if ce == "" {
		return data
	}
	cs := strings.Split(ce, ",")
	for i := len(cs) - 1; i >= 0; i-- {
		var r io.Reader
		var err error
		name := strings.TrimSpace(cs[i])
		switch name {
		case "gzip", "x-gzip":
			r, err = gzip.NewReader(bytes.NewReader(data))
		case "deflate":
			if r, err = zlib.NewReader(bytes.NewReader(data)); err != nil {
				r, err = flate.NewReader(bytes.NewReader(data)), nil
			}
		case "br":
			r = brotli.NewReader(bytes.NewReader(data))
		case "zstd":
			r, err = zstd.NewReader(bytes.NewReader(data))
		default:
			t.Fatalf("the child got a Content-Encoding it cannot read: %q", name)
		}
		if err != nil {
			t.Fatalf("decoding %s: %v", name, err)
		}
		out, err := io.ReadAll(r)
		if err != nil {
			t.Fatalf("decoding %s: %v", name, err)
		}
		data = out
	}
	return data
}

// compressHost is a stand-in bound host that ignores Accept-Encoding: at
// /echo?enc=gzip,br it answers with the Authorization header it received
// (the real value, after the broker's swap), encoded with those codings in
// order; at /bomb?enc=gzip (or zstd, or "gzip, zstd"), 64 MiB of zeros
// and the value; at /unknown, the
// value in an encoding no one decodes. It records the Accept-Encoding it
// was sent.
type compressHost struct {
	srv   *httptest.Server
	roots *x509.CertPool
	mu    sync.Mutex
	ae    []string
}

var (
	bombOnce sync.Once
	bombs    map[string][]byte
)

func newCompressHost(t *testing.T) *compressHost {
	t.Helper()
	h := &compressHost{}
	h.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.ae = append(h.ae, r.Header.Get("Accept-Encoding"))
		h.mu.Unlock()
		auth := r.Header.Get("Authorization")
		switch r.URL.Path {
		case "/echo":
			codings := strings.Split(r.URL.Query().Get("enc"), ",")
			body := []byte(strings.Repeat("padding ", 100) + `{"auth":"` + auth + `"}` + "\n")
			w.Header().Set("Content-Encoding", headerCodings(codings))
			w.Header().Set("Content-Length", fmt.Sprint(len(encodeWith(t, codings, body))))
			w.Write(encodeWith(t, codings, body))
		case "/bomb":
			// Members (gzip) or frames (zstd), one after another, decode as
			// one stream: 64 of 1 MiB of zeros each, then the value; in
			// "gzip, zstd", the gzip bomb inside a zstd frame.
			enc := r.URL.Query().Get("enc")
			bombOnce.Do(func() {
				bombs = map[string][]byte{}
				for _, c := range []string{"gzip", "zstd"} {
					zeros := encodeWith(t, []string{c}, make([]byte, 1<<20))
					bombs[c] = append(bytes.Repeat(zeros, 64), encodeWith(t, []string{c}, []byte(realToken))...)
				}
				bombs["gzip, zstd"] = encodeWith(t, []string{"zstd"}, bombs["gzip"])
			})
			w.Header().Set("Content-Encoding", enc)
			w.Write(bombs[enc])
		case "/unknown":
			w.Header().Set("Content-Encoding", r.URL.Query().Get("enc"))
			b := []byte(auth)
			for i := range b {
				b[i] ^= 0x5a // an "encoding" a client of the host might know
			}
			w.Write(b)
		case "/stream":
			// Two events, each flushed through the encoder; the second only
			// after the child has read the first.
			codings := []string{r.URL.Query().Get("enc")}
			w.Header().Set("Content-Encoding", headerCodings(codings))
			enc := streamEncoder(t, codings[0], w)
			fmt.Fprintf(enc, "data: %s\n\n", auth)
			enc.Flush()
			w.(http.Flusher).Flush()
			select {
			case <-streamAck:
			case <-time.After(10 * time.Second):
			}
			fmt.Fprintf(enc, "data: second %s\n\n", auth)
			enc.Close()
		}
	}))
	h.srv.EnableHTTP2 = true
	h.srv.StartTLS()
	t.Cleanup(h.srv.Close)
	h.roots = x509.NewCertPool()
	h.roots.AddCert(h.srv.Certificate())
	return h
}

var streamAck = make(chan struct{}, 1)

type flushWriteCloser interface {
	io.WriteCloser
	Flush() error
}

func streamEncoder(t *testing.T, coding string, w io.Writer) flushWriteCloser {
	switch coding {
	case "gzip":
		return gzip.NewWriter(w)
	case "deflate":
		return zlib.NewWriter(w)
	case "br":
		return brotli.NewWriter(w)
	case "zstd":
		z, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		return z
	}
	t.Fatalf("no stream encoder for %q", coding)
	return nil
}

func (h *compressHost) acceptEncodings() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.ae...)
}

// startBrokerCfg is startBroker with a change to the config.
func startBrokerCfg(t *testing.T, host string, roots *x509.CertPool, change func(*Config)) (*Broker, *auditLog) {
	t.Helper()
	log := &auditLog{}
	cfg := Config{
		Bindings:      []Binding{{Name: "GITHUB_TOKEN", Hosts: []string{host}}},
		Secrets:       map[string]string{"GITHUB_TOKEN": realToken},
		Key:           testKey,
		UpstreamRoots: roots,
		UID:           os.Getuid(),
		Dir:           t.TempDir(),
		Env:           map[string]string{},
		Audit:         log.add,
	}
	if change != nil {
		change(&cfg)
	}
	b, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, log
}

var compressCases = [][]string{
	{"gzip"}, {"x-gzip"}, {"deflate"}, {"deflate-raw"}, {"br"}, {"zstd"},
	{"gzip", "br"}, {"deflate", "zstd", "gzip"},
}

// TestCompressedEchoGoClient: a bound host that echoes the swapped
// Authorization header compressed (whatever it was asked for) reaches a Go
// client, which asks for every encoding, holding only the fake; the broker
// asked the host for identity.
func TestCompressedEchoGoClient(t *testing.T) {
	h := newCompressHost(t)
	host := h.srv.Listener.Addr().String()
	b, _ := startBrokerCfg(t, host, h.roots, nil)
	fake := b.Fakes()["GITHUB_TOKEN"]
	for _, h2 := range []bool{false, true} {
		tr := proxyTransport(t, b)
		tr.ForceAttemptHTTP2 = h2
		client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		for _, codings := range compressCases {
			t.Run(fmt.Sprintf("%s/h2=%v", strings.Join(codings, "+"), h2), func(t *testing.T) {
				req, _ := http.NewRequest("GET", "https://"+host+"/echo?enc="+strings.Join(codings, ","), nil)
				req.Header.Set("Authorization", "token "+fake)
				// Named, so that net/http hands the body over as it came.
				req.Header.Set("Accept-Encoding", "gzip, deflate, br, zstd")
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				raw, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				checkNoReal(t, "the body as sent", raw)
				got := decodeAs(t, resp.Header.Get("Content-Encoding"), raw)
				checkNoReal(t, "the body as decoded", got)
				if !bytes.Contains(got, []byte(fake)) {
					t.Errorf("the echo does not hold the fake: %.200q", bytes.ReplaceAll(got, []byte(realToken), []byte("<real>")))
				}
				if ce := resp.Header.Get("Content-Encoding"); ce != "" {
					t.Errorf("the child got Content-Encoding %q: the broker sends what it scrubbed, decoded", ce)
				}
				if cl := resp.Header.Get("Content-Length"); cl != "" && cl != fmt.Sprint(len(raw)) {
					t.Errorf("Content-Length %s for a %d-byte body", cl, len(raw))
				}
			})
		}
	}
	for _, ae := range h.acceptEncodings() {
		if ae != "identity" {
			t.Errorf("the host was sent Accept-Encoding %q, want identity", ae)
		}
	}
}

// TestCompressedEchoCurl: the same with curl --compressed, which asks for
// and decodes gzip, deflate, br and zstd.
func TestCompressedEchoCurl(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("curl is needed: %v", err)
	}
	h := newCompressHost(t)
	host := h.srv.Listener.Addr().String()
	b, _ := startBrokerCfg(t, host, h.roots, nil)
	fake := b.Fakes()["GITHUB_TOKEN"]
	for _, codings := range compressCases {
		t.Run(strings.Join(codings, "+"), func(t *testing.T) {
			cmd := exec.Command("curl", "-sS", "--fail", "--compressed", "--max-time", "10",
				"-H", "Authorization: token "+fake, "https://"+host+"/echo?enc="+strings.Join(codings, ","))
			cmd.Env = childEnv(b)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			checkNoReal(t, "curl's output", out)
			checkNoReal(t, "curl's stderr", stderr.Bytes())
			if err != nil {
				t.Fatalf("curl: %v", err) // stderr not printed: it could hold what the host sent
			}
			if !bytes.Contains(out, []byte(fake)) {
				t.Errorf("the echo does not hold the fake: %.200q", bytes.ReplaceAll(out, []byte(realToken), []byte("<real>")))
			}
		})
	}
}

// TestCompressedStreamed: a compressed event stream reaches the child one
// event at a time, decoded and scrubbed: the host sends its second event
// only after the child has read the first.
func TestCompressedStreamed(t *testing.T) {
	h := newCompressHost(t)
	host := h.srv.Listener.Addr().String()
	b, _ := startBrokerCfg(t, host, h.roots, nil)
	fake := b.Fakes()["GITHUB_TOKEN"]
	client := &http.Client{Transport: proxyTransport(t, b), Timeout: 20 * time.Second}
	for _, enc := range []string{"gzip", "deflate", "br", "zstd"} {
		t.Run(enc, func(t *testing.T) {
			req, _ := http.NewRequest("GET", "https://"+host+"/stream?enc="+enc, nil)
			req.Header.Set("Authorization", "token "+fake)
			req.Header.Set("Accept-Encoding", enc)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ce := resp.Header.Get("Content-Encoding"); ce != "" {
				t.Fatalf("the child got Content-Encoding %q", ce)
			}
			first := make([]byte, 0, 256)
			deadline := time.Now().Add(5 * time.Second)
			for !bytes.Contains(first, []byte("\n\n")) && time.Now().Before(deadline) {
				buf := make([]byte, 256)
				n, err := resp.Body.Read(buf)
				first = append(first, buf[:n]...)
				if err != nil {
					break
				}
			}
			if !bytes.Contains(first, []byte("data: token "+fake+"\n\n")) {
				t.Fatalf("the first event did not come before the second was sent: %.100q", first)
			}
			streamAck <- struct{}{}
			rest, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			all := append(first, rest...)
			checkNoReal(t, "the stream", all)
			if !bytes.Contains(all, []byte("data: second token "+fake)) {
				t.Errorf("the second event is missing: %q", rest)
			}
		})
	}
}

// TestDecompressionBomb: a response that decodes past the cap is cut at
// the cap (the child reads an error, not a clean end), audited; the host's
// bytes never reach the child as they came.
func TestDecompressionBomb(t *testing.T) {
	h := newCompressHost(t)
	host := h.srv.Listener.Addr().String()
	const max = 1 << 20
	b, log := startBrokerCfg(t, host, h.roots, func(c *Config) { c.MaxDecoded = max })
	client := &http.Client{Transport: proxyTransport(t, b), Timeout: 20 * time.Second}
	for _, enc := range []string{"gzip", "zstd", "gzip, zstd"} {
		t.Run(enc, func(t *testing.T) {
			req, _ := http.NewRequest("GET", "https://"+host+"/bomb?enc="+strings.ReplaceAll(enc, " ", "%20"), nil)
			req.Header.Set("Accept-Encoding", "gzip, zstd")
			start := time.Now()
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			raw, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			checkNoReal(t, "the body", raw)
			if ce := resp.Header.Get("Content-Encoding"); ce != "" {
				t.Errorf("the child got the bomb as the host sent it (Content-Encoding %q, %d bytes)", ce, len(raw))
			}
			if len(raw) > max {
				t.Errorf("the child got %d bytes, past the cap of %d", len(raw), max)
			}
			if rerr == nil {
				t.Error("the response ended cleanly: a cut response must end with an error")
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
	if !log.has("denied", "", "decoded-size") {
		t.Errorf("no decoded-size event: %+v", log.events)
	}
}

// TestUnknownEncodingRefused: a Content-Encoding the broker cannot decode
// is answered with 502 and audited; the host's body is not passed on.
func TestUnknownEncodingRefused(t *testing.T) {
	h := newCompressHost(t)
	host := h.srv.Listener.Addr().String()
	b, log := startBrokerCfg(t, host, h.roots, nil)
	fake := b.Fakes()["GITHUB_TOKEN"]
	client := &http.Client{Transport: proxyTransport(t, b), Timeout: 10 * time.Second}
	for _, enc := range []string{"compress", "x-xor", "gzip, x-xor", "gzip,gzip,gzip,gzip,gzip"} {
		t.Run(enc, func(t *testing.T) {
			req, _ := http.NewRequest("GET", "https://"+host+"/unknown?enc="+strings.ReplaceAll(enc, " ", "%20"), nil)
			req.Header.Set("Authorization", "token "+fake)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadGateway {
				t.Errorf("status %d, want 502", resp.StatusCode)
			}
			xored := []byte("token " + realToken)
			for i := range xored {
				xored[i] ^= 0x5a
			}
			if bytes.Contains(body, xored) {
				t.Error("the host's undecodable body reached the child")
			}
		})
	}
	if !log.has("denied", "", "content-encoding") {
		t.Errorf("no content-encoding event: %+v", log.events)
	}
}

// TestDecodedCutOnCorruptStream: a stream that stops decoding midway is cut
// with an error, never passed on raw.
func TestDecodedCutOnCorruptStream(t *testing.T) {
	good := encodeWith(t, []string{"gzip"}, bytes.Repeat([]byte("hello "), 10000))
	bad := append([]byte{}, good...)
	for i := len(bad) / 2; i < len(bad)/2+64; i++ {
		bad[i] ^= 0xff
	}
	var failed []error
	d := newDecoded(io.NopCloser(bytes.NewReader(bad)), []string{"gzip"}, 1<<20, func(err error) { failed = append(failed, err) })
	_, err := io.ReadAll(d)
	if err == nil || !errors.Is(err, errCoding) {
		t.Errorf("err = %v, want a decoding error", err)
	}
	if len(failed) != 1 {
		t.Errorf("reported %d times", len(failed))
	}
	// An empty body with a coding is empty.
	d = newDecoded(io.NopCloser(bytes.NewReader(nil)), []string{"gzip", "br"}, 1<<20, nil)
	if out, err := io.ReadAll(d); err != nil || len(out) != 0 {
		t.Errorf("empty body: %q, %v", out, err)
	}
}

// FuzzDecodedScrub: for any body, split in any way, in any of the
// encodings (stacked too), the real value never comes out of the decoder
// and scrubber the broker reads a compressed response through, and an
// intact stream comes out whole with each value replaced. A corrupted
// stream (flip set) may be cut, never leak.
func FuzzDecodedScrub(f *testing.F) {
	f.Add([]byte("prefix "), []byte(" suffix"), []byte{3, 7, 1}, uint8(0), uint16(0), uint8(0))
	f.Add([]byte(""), []byte(""), []byte{0}, uint8(5), uint16(9), uint8(0xff))
	f.Add([]byte(realToken[:10]), []byte(realToken[5:]), []byte{255, 0, 2}, uint8(7), uint16(3), uint8(0))
	f.Add(bytes.Repeat([]byte("a"), 5000), []byte(realToken), []byte{31}, uint8(6), uint16(100), uint8(1))
	fake := Fake(testKey, "GITHUB_TOKEN", realToken)
	ps := newPatterns(scrubPairs("GITHUB_TOKEN", realToken, fake))
	f.Fuzz(func(t *testing.T, head, tail, cuts []byte, which uint8, at uint16, flip uint8) {
		codings := compressCases[int(which)%len(compressCases)]
		in := append(append(append(append([]byte{}, head...), realToken...), tail...), realToken...)
		ref := append([]byte{}, in...)
		replaceAll(ref, ps.pairs, nil)
		data := encodeWith(t, codings, in)
		if flip != 0 {
			data[int(at)%len(data)] ^= flip
		}
		names := strings.Split(headerCodings(codings), ", ")
		d := newDecoded(io.NopCloser(&chunked{data: data, cuts: cuts}), names, 1<<20, nil)
		got, err := io.ReadAll(newScrubber(d, ps, nil))
		if bytes.Contains(got, []byte(realToken)) {
			t.Fatal("the real value came through")
		}
		if flip != 0 {
			return
		}
		if err != nil {
			t.Fatalf("an intact stream failed: %v", err)
		}
		if !bytes.Equal(got, ref) {
			t.Fatalf("decoded output differs (%d vs %d bytes)", len(got), len(ref))
		}
	})
}
