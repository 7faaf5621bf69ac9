package broker

import (
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
)

// TestReload: a credential the user logs in again to during the session
// (Config.Reload answers a new value) reaches the host in the next swap,
// with the fake the child holds unchanged; the new value, of the same or
// another length, is scrubbed from responses; while Reload has nothing
// newer, the value held goes.
func TestReload(t *testing.T) {
	srv, roots, got := standIn(t)
	host := srv.Listener.Addr().String()
	var mu sync.Mutex
	current, fresh := realToken, false
	log := &auditLog{}
	b, err := Start(Config{
		Bindings: []Binding{{Name: "git-credentials:https://" + host, Hosts: []string{host}}},
		Secrets:  map[string]string{"git-credentials:https://" + host: realToken},
		Key:      testKey, UpstreamRoots: roots, UID: os.Getuid(), Dir: t.TempDir(), Env: map[string]string{}, Audit: log.add,
		Reload: func(name string) (string, bool) {
			mu.Lock()
			defer mu.Unlock()
			return current, fresh && strings.HasPrefix(name, "git-credentials:")
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	fake := b.Fakes()["git-credentials:https://"+host]
	c := &http.Client{Transport: proxyTransport(t, b)}
	get := func(path string) string {
		t.Helper()
		req, _ := http.NewRequest("GET", "https://"+host+path, nil)
		req.SetBasicAuth("alice", fake)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	for _, tc := range []struct {
		name, value string
		fresh       bool
	}{
		{"nothing newer", realToken, false},
		{"a new value of the same length", "ghp_" + strings.Repeat("N3wV", 9), true},
		{"a new value of another length", "ghp_" + strings.Repeat("L0ng3r", 9), true},
		{"then nothing newer: the last one held", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			if tc.value != "" {
				current = tc.value
			}
			fresh = tc.fresh
			want := current
			mu.Unlock()
			body := get("/")
			if u := basicUserPass(got.last().Auth); u != "alice:"+want {
				t.Errorf("the host got another password (%d bytes, want %d)", len(u), len("alice:"+want))
			}
			if strings.Contains(body, want) || strings.Contains(body, realToken) {
				t.Error("the host's echo of a real value reached the child")
			}
		})
	}
	if b.Fakes()["git-credentials:https://"+host] != fake {
		t.Error("the fake changed")
	}
	if !log.has("reloaded", "git-credentials:https://"+host, "") {
		t.Error("no reloaded event")
	}
}

// TestUserRoots: the user's own CAs are in the bundle the child's clients
// trust (with the system roots and the launch CA), and in the file of the
// launch CA alone.
func TestUserRoots(t *testing.T) {
	company := "-----BEGIN CERTIFICATE-----\nY29tcGFueQ==\n-----END CERTIFICATE-----"
	b, err := Start(Config{Secrets: map[string]string{"T": realToken}, Bindings: []Binding{{Name: "T", Hosts: []string{"h.example"}}},
		Key: testKey, UID: -1, Dir: t.TempDir(), Env: map[string]string{}, SystemRoots: os.DevNull, UserRoots: []byte(company)})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for _, k := range []string{"GIT_SSL_CAINFO", "NODE_EXTRA_CA_CERTS"} {
		data, err := os.ReadFile(b.ChildEnv()[k])
		if err != nil || !strings.HasPrefix(string(data), company+"\n") || !strings.HasSuffix(string(data), string(b.CAPEM())) {
			t.Errorf("%s: the user's CA and the launch CA are not both in it (%v)", k, err)
		}
	}
}
