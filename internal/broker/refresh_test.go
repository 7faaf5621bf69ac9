package broker

import (
	"bytes"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
)

// The tokens of the refresh tests, assembled at run time.
var (
	oldAccess  = "sk-ant-oat01-" + strings.Repeat("Ac1", 30)
	oldRefresh = "sk-ant-ort01-" + strings.Repeat("Rf2", 30)
	newAccess  = "sk-ant-oat01-" + strings.Repeat("Nw3", 30)
	newRefresh = "sk-ant-ort01-" + strings.Repeat("Nr4", 30)
)

// tokenStandIn is an HTTPS stand-in of a provider: its API answers with
// the Authorization it got; its token endpoint (/v1/oauth/token, a JSON
// or form body) renews the tokens when given the real refresh token.
type tokenStandIn struct {
	mu          sync.Mutex
	auths       []string
	refreshSeen []string
	bodies      []string
}

func (s *tokenStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bodies = append(s.bodies, string(body))
	if r.URL.Path != "/v1/oauth/token" {
		s.auths = append(s.auths, r.Header.Get("Authorization"))
		io.WriteString(w, "ok")
		return
	}
	var rt string
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var req map[string]string
		json.Unmarshal(body, &req)
		rt = req["refresh_token"]
	} else {
		q, _ := url.ParseQuery(string(body))
		rt = q.Get("refresh_token")
	}
	s.refreshSeen = append(s.refreshSeen, rt)
	if rt != oldRefresh && rt != newRefresh {
		http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"token_type":"Bearer","access_token":"`+newAccess+`","refresh_token":"`+newRefresh+`","expires_in":28800,"scope":"user:inference"}`)
}

func (s *tokenStandIn) last() (auth, refresh string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.auths) > 0 {
		auth = s.auths[len(s.auths)-1]
	}
	if len(s.refreshSeen) > 0 {
		refresh = s.refreshSeen[len(s.refreshSeen)-1]
	}
	return
}

// refreshBroker starts a stand-in and a broker with an access token bound
// to it and a refresh token bound to its token endpoint's body field.
func refreshBroker(t testing.TB, alsoBound ...string) (*tokenStandIn, string, *Broker, *auditLog, *[]map[string]string) {
	t.Helper()
	st := &tokenStandIn{}
	srv := httptest.NewTLSServer(st)
	t.Cleanup(srv.Close)
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	host := srv.Listener.Addr().String()
	log := &auditLog{}
	var mu sync.Mutex
	var hooks []map[string]string
	b, err := Start(Config{
		Bindings: []Binding{
			{Name: "claude:accessToken", Hosts: append([]string{host}, alsoBound...)},
			{Name: "claude:refreshToken", Hosts: []string{host}, In: []string{"json:refresh_token", "form:refresh_token"},
				Paths: []string{"/v1/oauth/token"}, Renews: map[string]string{"access_token": "claude:accessToken", "refresh_token": "claude:refreshToken"}},
		},
		Secrets:       map[string]string{"claude:accessToken": oldAccess, "claude:refreshToken": oldRefresh},
		Key:           testKey,
		UpstreamRoots: roots,
		UID:           os.Getuid(),
		Dir:           t.TempDir(),
		Env:           map[string]string{},
		Audit:         log.add,
		OnRefresh: func(secret string, tokens map[string]string) {
			mu.Lock()
			hooks = append(hooks, tokens)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return st, host, b, log, &hooks
}

func do(t testing.TB, c *http.Client, method, u, ctype, body, auth string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	if auth != "" {
		req.Header.Set("Authorization", "Bearer "+auth)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data)
}

// TestTokenRefresh: the tree's fake access token reaches the API as the
// real one; its refresh with the fake refresh token reaches the token
// endpoint with the real one; the new tokens come back as new fakes, the
// hook gets the new reals, and the new fake access token then reaches the
// API as the new real one. JSON and form bodies alike.
func TestTokenRefresh(t *testing.T) {
	for _, tc := range []struct{ name, ctype, body string }{
		{"json", "application/json", `{"grant_type":"refresh_token","refresh_token":%q,"client_id":"c","scope":"user:inference"}`},
		{"json escaped", "application/json; charset=utf-8", `{"refresh_token" : %q}`},
		{"form", "application/x-www-form-urlencoded", "grant_type=refresh_token&refresh_token=%s&client_id=c"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, host, b, log, hooks := refreshBroker(t)
			c := &http.Client{Transport: proxyTransport(t, b)}
			fakes := b.Fakes()
			fa, fr := fakes["claude:accessToken"], fakes["claude:refreshToken"]
			if _, ok := b.ChildEnv()["claude:accessToken"]; ok {
				t.Error("a login file's credential went into the environment")
			}
			if code, _ := do(t, c, "POST", "https://"+host+"/v1/messages", "", "{}", fa); code != 200 {
				t.Fatalf("API: %d", code)
			}
			if a, _ := st.last(); a != "Bearer "+oldAccess {
				t.Fatal("the API did not get the real access token")
			}
			var body string
			switch tc.name {
			case "json":
				body = strings.Replace(tc.body, "%q", `"`+fr+`"`, 1)
			case "json escaped":
				// The fake with its first letter \u-escaped: the field's value is still the fake.
				body = strings.Replace(tc.body, "%q", `"\u0073`+fr[1:]+`"`, 1)
			default:
				body = strings.Replace(tc.body, "%s", url.QueryEscape(fr[:5])+"%"+strings.ToUpper(hexByte(fr[5]))+fr[6:], 1)
			}
			code, resp := do(t, c, "POST", "https://"+host+"/v1/oauth/token", tc.ctype, body, "")
			if code != 200 {
				t.Fatalf("refresh: %d %s", code, resp)
			}
			if _, r := st.last(); r != oldRefresh {
				t.Fatal("the token endpoint did not get the real refresh token")
			}
			for _, real := range []string{oldAccess, oldRefresh, newAccess, newRefresh} {
				if strings.Contains(resp, real) {
					t.Fatal("the refresh response reached the tree with a real token")
				}
			}
			var got map[string]any
			if err := json.Unmarshal([]byte(resp), &got); err != nil {
				t.Fatal(err)
			}
			na, nr := got["access_token"].(string), got["refresh_token"].(string)
			if na == fa || nr == fr || len(na) != len(newAccess) || !strings.HasPrefix(na, "sk-ant-oat01-") || got["expires_in"].(float64) != 28800 {
				t.Fatalf("the tree did not get new fakes of the new tokens: %v", got)
			}
			if f := b.Fakes(); f["claude:accessToken"] != na || f["claude:refreshToken"] != nr {
				t.Error("Fakes does not give the new fakes")
			}
			if len(*hooks) != 1 || (*hooks)[0]["access_token"] != newAccess || (*hooks)[0]["refresh_token"] != newRefresh || (*hooks)[0]["expires_in"] != "28800" {
				t.Fatalf("the hook did not get the new real tokens: %d calls", len(*hooks))
			}
			if !log.has("renewed", "claude:accessToken", "body:access_token") || !log.has("swapped", "claude:refreshToken", "") {
				t.Error("the refresh is not audited")
			}
			do(t, c, "GET", "https://"+host+"/v1/messages", "", "", na)
			if a, _ := st.last(); a != "Bearer "+newAccess {
				t.Fatal("the new fake did not reach the API as the new real token")
			}
			// The older fake keeps working until the session ends (the
			// provider decides whether the old token still is valid).
			do(t, c, "GET", "https://"+host+"/v1/messages", "", "", fa)
			if a, _ := st.last(); a != "Bearer "+oldAccess {
				t.Fatal("the older fake stopped working")
			}
			// A second refresh with the new fake refresh token.
			code, resp = do(t, c, "POST", "https://"+host+"/v1/oauth/token", "application/json", `{"refresh_token":"`+nr+`"}`, "")
			if _, r := st.last(); code != 200 || r != newRefresh {
				t.Fatalf("the second refresh: %d, endpoint got the real one: %v", code, r == newRefresh)
			}
			if strings.Contains(resp, na) || strings.Contains(resp, newAccess) {
				t.Error("the second refresh gave the same fake again, or a real value")
			}
		})
	}
}

func hexByte(c byte) string {
	return string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15])
}

// TestRefreshTokenElsewhereRefused: the fake refresh token is swapped only
// in its endpoint's field: in another path's body, another field, another
// host's body, it is refused (403) and audited, and never reaches a host
// as the real value; a token endpoint's body past maxBody is refused.
func TestRefreshTokenElsewhereRefused(t *testing.T) {
	// The other host is bound to the access token, so the broker
	// intercepts it and sees its bodies.
	other := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if body, _ := io.ReadAll(r.Body); bytes.Contains(body, []byte(oldRefresh)) {
			t.Error("the real refresh token reached another host")
		}
	}))
	defer other.Close()
	otherHost := other.Listener.Addr().String()
	st, host, b, log, hooks := refreshBroker(t, otherHost)
	c := &http.Client{Transport: proxyTransport(t, b)}
	fr := b.Fakes()["claude:refreshToken"]
	for _, tc := range []struct{ name, url, ctype, body string }{
		{"another path", "https://" + host + "/v1/messages", "application/json", `{"refresh_token":"` + fr + `"}`},
		{"another field", "https://" + host + "/v1/oauth/token", "application/json", `{"token":"` + fr + `"}`},
		{"inside the field", "https://" + host + "/v1/oauth/token", "application/json", `{"refresh_token":"x` + fr + `"}`},
		{"another host", "https://" + otherHost + "/v1/oauth/token", "application/json", `{"refresh_token":"` + fr + `"}`},
		{"a big body", "https://" + host + "/v1/messages", "text/plain", strings.Repeat("a", 200<<10) + fr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _ := do(t, c, "POST", tc.url, tc.ctype, tc.body, "")
			if code != http.StatusForbidden {
				t.Errorf("got %d, want 403", code)
			}
			st.mu.Lock()
			for _, seen := range append(st.bodies, st.refreshSeen...) {
				if strings.Contains(seen, oldRefresh) {
					t.Error("the real refresh token reached a host")
				}
			}
			st.mu.Unlock()
			if !log.has("refused", "claude:refreshToken", "body") {
				t.Error("not audited as refused")
			}
		})
	}
	big := `{"refresh_token":"` + fr + `","pad":"` + strings.Repeat("a", maxBody) + `"}`
	if code, _ := do(t, c, "POST", "https://"+host+"/v1/oauth/token", "application/json", big, ""); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a token request past maxBody: %d, want 413", code)
	}
	if len(*hooks) != 0 {
		t.Error("a refused request renewed tokens")
	}
}

// TestBodyPlaceNeedsPaths: a binding with a body place and no paths is
// refused at Start.
func TestBodyPlaceNeedsPaths(t *testing.T) {
	_, err := Start(Config{Bindings: []Binding{{Name: "R", Hosts: []string{"a.example"}, In: []string{"form:refresh_token"}}},
		Secrets: map[string]string{"R": strings.Repeat("r", 20)}, Key: testKey, UID: -1, Dir: t.TempDir()})
	if err == nil {
		t.Fatal("no error")
	}
}

// FuzzBodySwap: whatever the body, its content type and where the fake
// refresh token lies in it (however encoded), the real refresh token comes
// out only as the whole value of a refresh_token field of a token
// endpoint's request, and never in a request to another path.
func FuzzBodySwap(f *testing.F) {
	f.Add([]byte(`{"grant_type":"refresh_token","refresh_token":"@"}`), uint8(0), true)
	f.Add([]byte(`grant_type=refresh_token&refresh_token=@&x=@`), uint8(1), true)
	f.Add([]byte(`{"a":{"refresh_token":"@"},"refresh_token":"\u0040"}`), uint8(0), false)
	f.Add([]byte(`refresh%5Ftoken=@&refresh_token=%40`), uint8(1), true)
	b, err := Start(Config{
		Bindings: []Binding{{Name: "R", Hosts: []string{"auth.example"}, In: []string{"json:refresh_token", "form:refresh_token"},
			Paths: []string{"/oauth/token"}}},
		Secrets: map[string]string{"R": oldRefresh}, Key: testKey, UID: -1, Dir: f.TempDir(),
	})
	if err != nil {
		f.Fatal(err)
	}
	defer b.Close()
	fake := b.Fakes()["R"]
	f.Fuzz(func(t *testing.T, tmpl []byte, ct uint8, onPath bool) {
		body := bytes.ReplaceAll(tmpl, []byte("@"), []byte(fake))
		ctype := []string{"application/json", "application/x-www-form-urlencoded", "text/plain", "application/vnd.x+json"}[int(ct)%4]
		path := "/oauth/token"
		if !onPath {
			path = "/other"
		}
		r, _ := http.NewRequest("POST", "https://auth.example"+path, bytes.NewReader(body))
		r.Header.Set("Content-Type", ctype)
		secrets, _, _ := b.table()
		code, _, _ := b.swapBody(r, secrets, "auth.example:443", nil, true)
		if code != 0 {
			return
		}
		out, _ := io.ReadAll(r.Body)
		if r.ContentLength != int64(len(out)) {
			t.Fatal("Content-Length does not match the body")
		}
		n := bytes.Count(out, []byte(oldRefresh))
		if n == 0 {
			return
		}
		if !onPath {
			t.Fatal("the real value went into a request to another path")
		}
		whole := 0
		if fields, ok := jsonFields(out); ok && strings.HasSuffix(ctype, "json") {
			for _, fl := range fields {
				if fl.key == "refresh_token" && fl.isString && fl.value == oldRefresh {
					whole++
				}
			}
		} else if ctype == "application/x-www-form-urlencoded" {
			for _, p := range strings.Split(string(out), "&") {
				k, v, _ := strings.Cut(p, "=")
				uk, _ := url.QueryUnescape(k)
				uv, _ := url.QueryUnescape(v)
				if uk == "refresh_token" && uv == oldRefresh && v == url.QueryEscape(oldRefresh) {
					whole++
				}
			}
		}
		if n != whole {
			t.Fatalf("the real value is in the body %d times, as a refresh_token field's value %d times", n, whole)
		}
	})
}

// BenchmarkRefreshDirect is the floor of a token refresh: the real
// refresh token straight to a loopback token endpoint, keep-alive.
func BenchmarkRefreshDirect(b *testing.B) {
	srv := httptest.NewTLSServer(&tokenStandIn{})
	b.Cleanup(srv.Close)
	c := srv.Client()
	for b.Loop() {
		if code, _ := do(b, c, "POST", srv.URL+"/v1/oauth/token", "application/json", `{"grant_type":"refresh_token","refresh_token":"`+oldRefresh+`"}`, ""); code != 200 {
			b.Fatal(code)
		}
	}
}

// BenchmarkRefreshBroker is the same refresh through the broker: the
// body's fake swapped, the response's tokens renewed and faked, the hook
// called; each refresh with the fake the last one gave.
func BenchmarkRefreshBroker(b *testing.B) {
	_, host, br, _, _ := refreshBroker(b)
	c := &http.Client{Transport: proxyTransport(b, br)}
	fr := br.Fakes()["claude:refreshToken"]
	for b.Loop() {
		code, resp := do(b, c, "POST", "https://"+host+"/v1/oauth/token", "application/json", `{"grant_type":"refresh_token","refresh_token":"`+fr+`"}`, "")
		if code != 200 {
			b.Fatal(code)
		}
		var got map[string]any
		json.Unmarshal([]byte(resp), &got)
		fr = got["refresh_token"].(string)
	}
}

// TestRefreshGenerations: the fake before a refresh keeps working; one
// renewed twice over is no longer swapped (it reaches the host as the
// fake it is).
func TestRefreshGenerations(t *testing.T) {
	st, host, b, _, _ := refreshBroker(t)
	c := &http.Client{Transport: proxyTransport(t, b)}
	first := b.Fakes()["claude:accessToken"]
	fr := b.Fakes()["claude:refreshToken"]
	refresh := func() {
		code, resp := do(t, c, "POST", "https://"+host+"/v1/oauth/token", "application/json", `{"refresh_token":"`+fr+`"}`, "")
		var got map[string]any
		if code != 200 || json.Unmarshal([]byte(resp), &got) != nil {
			t.Fatalf("refresh: %d", code)
		}
		fr = got["refresh_token"].(string)
	}
	refresh()
	do(t, c, "GET", "https://"+host+"/v1/messages", "", "", first)
	if a, _ := st.last(); a != "Bearer "+oldAccess {
		t.Fatal("the fake before the refresh stopped working")
	}
	refresh()
	do(t, c, "GET", "https://"+host+"/v1/messages", "", "", first)
	if a, _ := st.last(); a != "Bearer "+first {
		t.Fatal("a fake renewed twice over is still swapped")
	}
}

// TestRenewKeepsNoFake: a token response that holds a fake (a host that
// echoes what it was sent) renews nothing with it: the fake is never kept
// as a real value nor handed to the hook for the user's file.
func TestRenewKeepsNoFake(t *testing.T) {
	_, _, b, log, hooks := refreshBroker(t)
	fakes := b.Fakes()
	secrets, _, _ := b.table()
	var ref *refresh
	for _, s := range secrets {
		if s.Name == "claude:refreshToken" {
			ref = &refresh{secret: s}
		}
	}
	out := b.renew(ref, []byte(`{"access_token":"`+fakes["claude:accessToken"]+`","refresh_token":"`+newRefresh+`"}`), "h:443")
	if len(*hooks) != 1 || (*hooks)[0]["access_token"] != "" || (*hooks)[0]["refresh_token"] != newRefresh {
		t.Fatalf("the hook got %v", *hooks)
	}
	if !strings.Contains(string(out), fakes["claude:accessToken"]) || !log.has("denied", "claude:accessToken", "token-response-fake") {
		t.Error("the echoed fake was renewed")
	}
}
