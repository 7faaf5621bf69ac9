package broker

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
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
