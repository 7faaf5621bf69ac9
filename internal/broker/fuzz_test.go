package broker

import (
	"bytes"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
)

func base64Std(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// chunked yields data in the pieces cuts describes (each byte of cuts is
// the next piece's length, 1 to 256).
type chunked struct {
	data []byte
	cuts []byte
	i    int
}

func (c *chunked) Read(p []byte) (int, error) {
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(c.cuts) > 0 {
		n = int(c.cuts[c.i%len(c.cuts)]) + 1
		c.i++
	}
	n = min(n, len(p), len(c.data))
	copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

// FuzzScrub: however a response is split, the real value (raw or base64
// at any alignment) never comes out of the scrubber, and what comes out
// is the input with each value replaced by the fake: nothing else changes,
// nothing is lost.
func FuzzScrub(f *testing.F) {
	f.Add([]byte("prefix "), []byte(" suffix"), []byte{3, 7, 1})
	f.Add([]byte(""), []byte(""), []byte{0})
	f.Add([]byte(realToken[:10]), []byte(realToken[5:]), []byte{255, 0, 2})
	f.Fuzz(func(t *testing.T, head, tail, cuts []byte) {
		fake := Fake(testKey, "GITHUB_TOKEN", realToken)
		pairs := scrubPairs("GITHUB_TOKEN", realToken, fake)
		in := append(append(append(append([]byte{}, head...), realToken...), tail...), realToken...)
		want := bytes.ReplaceAll(in, []byte(realToken), []byte(fake))
		// What the broker replaces in one piece is the reference.
		ref := append([]byte{}, in...)
		replaceAll(ref, pairs, nil)
		got, err := io.ReadAll(newScrubber(io.NopCloser(&chunked{data: in, cuts: cuts}), newPatterns(pairs), nil))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(got, []byte(realToken)) {
			t.Fatal("the real value came through")
		}
		if !bytes.Equal(got, ref) {
			t.Fatalf("split output differs from one-piece output (%d vs %d bytes)", len(got), len(ref))
		}
		if !bytes.Contains(head, []byte(fake[:4])) && !bytes.Contains(tail, []byte(fake[:4])) && len(got) != len(want) {
			t.Fatalf("length changed: %d, want %d", len(got), len(want))
		}
	})
}

func TestScrubOneByteReader(t *testing.T) {
	fake := Fake(testKey, "GITHUB_TOKEN", realToken)
	in := "a " + realToken + " b " + realToken[:7] + " c " + realToken
	got, err := io.ReadAll(newScrubber(io.NopCloser(iotest.OneByteReader(strings.NewReader(in))), newPatterns(scrubPairs("G", realToken, fake)), nil))
	if err != nil {
		t.Fatal(err)
	}
	want := "a " + fake + " b " + realToken[:7] + " c " + fake
	if string(got) != want {
		t.Errorf("got %q", got)
	}
}

// FuzzSwap: whatever headers and query a request carries, the swap never
// leaves a fake in a place it swaps (on a bound host, over TLS) and never
// puts the real value into a request to a host the secret is not bound
// to.
func FuzzSwap(f *testing.F) {
	f.Add("Bearer ", "", "token=", true, "GET")
	f.Add("Basic ", "x-access-token:", "", false, "POST")
	f.Add("", "noise", "q=", true, "DELETE")
	f.Fuzz(func(t *testing.T, authPre, otherPre, query string, bound bool, method string) {
		fake := Fake(testKey, "GITHUB_TOKEN", realToken)
		s := &brokered{Binding: Binding{Name: "GITHUB_TOKEN", Hosts: []string{"api.github.com"}, Methods: []string{"GET", "POST"}},
			real: realToken, fake: fake, in: defaultIn}
		b := &Broker{secrets: []*brokered{s}}
		target := "api.github.com:443"
		if !bound {
			target = "evil.example:443"
		}
		auth := authPre + fake
		if strings.HasPrefix(authPre, "Basic ") {
			auth = "Basic " + base64Std(otherPre+fake)
		}
		r, err := http.NewRequest(method, "https://"+target+"/x", nil)
		if err != nil {
			return
		}
		r.Header.Set("Authorization", auth)
		r.Header.Set("X-Other", otherPre+fake)
		r.URL.RawQuery = url.Values{"q": {query + fake}}.Encode()
		method = r.Method // "" is GET
		code, _ := b.swap(r, b.secrets, target, nil, true)
		dump := r.Header.Get("Authorization") + r.Header.Get("X-Other") + r.URL.RawQuery + basicUserPass(r.Header.Get("Authorization"))
		if !bound && strings.Contains(dump, realToken) {
			t.Fatal("the real value went into a request to an unbound host")
		}
		if !bound && code != http.StatusForbidden {
			t.Fatal("a fake to an unbound host was not refused")
		}
		if bound && code == 0 {
			if strings.Contains(r.Header.Get("Authorization"), fake) || strings.Contains(basicUserPass(r.Header.Get("Authorization")), fake) {
				t.Fatal("a fake was left in a swapped place")
			}
			if strings.Contains(r.Header.Get("X-Other"), realToken) || strings.Contains(r.URL.RawQuery, realToken) {
				t.Fatal("the real value went into a place that is not swapped")
			}
		}
		if bound && code == 0 && !strings.EqualFold(method, "GET") && !strings.EqualFold(method, "POST") {
			t.Fatalf("method %q got the real value", method)
		}
	})
}
