package broker

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestAWSSSO: the cached SSO login is exchanged at the portal for the
// role's keys, which are kept until they near their expiration; an
// expired login is an error that names the fix and holds no token.
func TestAWSSSO(t *testing.T) {
	const bearer = "aoaAAAAA" + "ssoAccessToken"
	var calls atomic.Int32
	var expiry atomic.Int64
	portal := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/federation/credentials" || r.Header.Get("X-Amz-Sso_bearer_token") != bearer ||
			r.URL.Query().Get("account_id") != "123456789012" || r.URL.Query().Get("role_name") != "Dev" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		calls.Add(1)
		fmt.Fprintf(w, `{"roleCredentials":{"accessKeyId":%q,"secretAccessKey":%q,"sessionToken":"tok","expiration":%d}}`,
			awsReal.AccessKeyID, awsReal.SecretAccessKey, expiry.Load())
	}))
	t.Cleanup(portal.Close)
	dir := t.TempDir()
	writeCache := func(key string, exp time.Time) {
		sum := sha1.Sum([]byte(key))
		data := fmt.Sprintf(`{"startUrl":"https://d-1.awsapps.com/start","region":"us-east-1","accessToken":%q,"expiresAt":%q}`, bearer, exp.UTC().Format(time.RFC3339))
		if err := os.WriteFile(filepath.Join(dir, hex.EncodeToString(sum[:])+".json"), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	newSSO := func() *AWSSSO {
		return &AWSSSO{CacheDir: dir, Session: "corp", Region: "us-east-1", AccountID: "123456789012", RoleName: "Dev",
			Portal: portal.URL, Client: portal.Client()}
	}
	ctx := context.Background()
	writeCache("corp", time.Now().Add(time.Hour))
	expiry.Store(time.Now().Add(time.Hour).UnixMilli())
	s := newSSO()
	for i := 0; i < 3; i++ {
		c, err := s.Credentials(ctx)
		if err != nil || c.AccessKeyID != awsReal.AccessKeyID || c.SessionToken != "tok" {
			t.Fatalf("%v", err)
		}
	}
	if calls.Load() != 1 {
		t.Errorf("valid keys: %d portal calls", calls.Load())
	}
	expiry.Store(time.Now().Add(2 * time.Minute).UnixMilli())
	s = newSSO()
	s.Credentials(ctx)
	s.Credentials(ctx)
	if calls.Load() != 3 {
		t.Errorf("expiring keys: %d portal calls in all, want 3", calls.Load())
	}
	writeCache("corp", time.Now().Add(-time.Minute))
	_, err := newSSO().Credentials(ctx)
	if err == nil || !strings.Contains(err.Error(), "aws sso login") || strings.Contains(err.Error(), bearer) {
		t.Errorf("an expired login: %v", err)
	}
	if _, err := (&AWSSSO{CacheDir: dir, Session: "other", Region: "us-east-1", AccountID: "1", RoleName: "r"}).Credentials(ctx); err == nil {
		t.Error("no cached login is not an error")
	}
}

// TestAWSSSOTokenRefresh: a cached SSO token that has expired, or expires
// within 15 minutes, is refreshed at the OIDC token endpoint with the
// cache's refresh token and client registration (as botocore does), the
// new token used at the portal and written back to the cache (other
// fields kept, mode 0600); a refresh the endpoint refuses leaves an
// expired login an error that names aws sso login, and the cache as it
// was; a legacy cache without a refresh token is not refreshed.
func TestAWSSSOTokenRefresh(t *testing.T) {
	const oldTok, newTok = "aoaOLDaccessToken", "aoaNEWaccessToken"
	const refresh, newRefresh = "aorREFRESHtoken", "aorROTATEDrefresh"
	var refused atomic.Bool
	var tokenCalls atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/token":
			tokenCalls.Add(1)
			var in map[string]string
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil || r.Method != "POST" || in["grantType"] != "refresh_token" ||
				in["refreshToken"] != refresh || in["clientId"] != "cid" || in["clientSecret"] != "csecret" || refused.Load() {
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, `{"accessToken":%q,"expiresIn":28800,"refreshToken":%q,"tokenType":"Bearer"}`, newTok, newRefresh)
		case "/federation/credentials":
			if r.Header.Get("X-Amz-Sso_bearer_token") != newTok {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			fmt.Fprintf(w, `{"roleCredentials":{"accessKeyId":%q,"secretAccessKey":%q,"sessionToken":"tok","expiration":%d}}`,
				awsReal.AccessKeyID, awsReal.SecretAccessKey, time.Now().Add(time.Hour).UnixMilli())
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	sum := sha1.Sum([]byte("corp"))
	cache := filepath.Join(dir, hex.EncodeToString(sum[:])+".json")
	write := func(exp time.Time, withRefresh bool) {
		data := fmt.Sprintf(`{"startUrl":"https://d-1.awsapps.com/start","region":"us-east-1","accessToken":%q,"expiresAt":%q`, oldTok, exp.UTC().Format(time.RFC3339))
		if withRefresh {
			data += fmt.Sprintf(`,"clientId":"cid","clientSecret":"csecret","registrationExpiresAt":%q,"refreshToken":%q`,
				time.Now().Add(24*time.Hour).UTC().Format(time.RFC3339), refresh)
		}
		if err := os.WriteFile(cache, []byte(data+"}"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	newSSO := func() *AWSSSO {
		return &AWSSSO{CacheDir: dir, Session: "corp", Region: "us-east-1", AccountID: "1", RoleName: "Dev",
			Portal: srv.URL, OIDC: srv.URL, Client: srv.Client()}
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		exp  time.Duration
	}{{"expired", -time.Minute}, {"expiring", 5 * time.Minute}} {
		t.Run(tc.name, func(t *testing.T) {
			write(time.Now().Add(tc.exp), true)
			before := tokenCalls.Load()
			c, err := newSSO().Credentials(ctx)
			if err != nil || c.AccessKeyID != awsReal.AccessKeyID {
				t.Fatalf("%v", err)
			}
			if tokenCalls.Load() != before+1 {
				t.Errorf("%d token calls", tokenCalls.Load()-before)
			}
			data, _ := os.ReadFile(cache)
			var got map[string]string
			if err := json.Unmarshal(data, &got); err != nil || got["accessToken"] != newTok || got["refreshToken"] != newRefresh ||
				got["clientId"] != "cid" || got["startUrl"] != "https://d-1.awsapps.com/start" {
				t.Errorf("the cache written back: %v %v", got, err)
			}
			if exp, err := time.Parse(time.RFC3339, got["expiresAt"]); err != nil || time.Until(exp) < 7*time.Hour {
				t.Errorf("expiresAt %q", got["expiresAt"])
			}
			if fi, err := os.Stat(cache); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("the cache's mode: %v %v", fi.Mode(), err)
			}
		})
	}
	refused.Store(true)
	write(time.Now().Add(-time.Minute), true)
	before, _ := os.ReadFile(cache)
	_, err := newSSO().Credentials(ctx)
	if err == nil || !strings.Contains(err.Error(), "aws sso login") || strings.Contains(err.Error(), refresh) || strings.Contains(err.Error(), "csecret") {
		t.Errorf("a refused refresh: %v", err)
	}
	if after, _ := os.ReadFile(cache); string(after) != string(before) {
		t.Error("a refused refresh changed the cache")
	}
	refused.Store(false)
	write(time.Now().Add(-time.Minute), false)
	calls := tokenCalls.Load()
	if _, err := newSSO().Credentials(ctx); err == nil || tokenCalls.Load() != calls {
		t.Errorf("a login without a refresh token: %v, %d token calls", err, tokenCalls.Load()-calls)
	}
}
