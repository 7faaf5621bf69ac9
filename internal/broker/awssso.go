package broker

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/envsieve/envsieve/internal/sigv4"
)

// AWSSSO gives a profile's IAM Identity Center (SSO) role keys: the access
// token `aws sso login` left in the user's SSO cache, exchanged at the SSO
// portal for the role's temporary keys, again when they are about to
// expire. The broker reads the cache outside the tree (the seal masks it
// inside). An expired SSO token is an error that says to run `aws sso
// login` outside the tree; the broker does not refresh the token itself.
type AWSSSO struct {
	// CacheDir is the SSO cache (~/.aws/sso/cache). Required.
	CacheDir string
	// Session is the profile's sso_session name; "" means the legacy
	// form, keyed by StartURL.
	Session, StartURL string
	// Region is the sso_region; AccountID and RoleName the profile's
	// sso_account_id and sso_role_name. Required.
	Region, AccountID, RoleName string
	// Portal is the portal's base URL; "" means
	// https://portal.sso.REGION.amazonaws.com (tests point it elsewhere).
	Portal string
	// Client makes the portal request; nil means http.DefaultClient.
	Client *http.Client

	mu  sync.Mutex
	cur sigv4.Credentials
	exp time.Time
	ok  bool
}

// ssoToken is the part of a cache file the broker reads.
type ssoToken struct {
	AccessToken string `json:"accessToken"`
	ExpiresAt   string `json:"expiresAt"`
}

// Credentials returns the role's keys, fetched again when they expire
// within AWSRefreshBefore.
func (s *AWSSSO) Credentials(ctx context.Context) (sigv4.Credentials, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if s.ok && s.exp.Sub(now) > AWSRefreshBefore {
		return s.cur, nil
	}
	c, exp, err := s.fetch(ctx)
	if err != nil {
		if s.ok && now.Before(s.exp) {
			return s.cur, nil
		}
		return sigv4.Credentials{}, err
	}
	s.cur, s.exp, s.ok = c, exp, true
	return c, nil
}

func (s *AWSSSO) fetch(ctx context.Context) (sigv4.Credentials, time.Time, error) {
	var none sigv4.Credentials
	if s.CacheDir == "" || s.Region == "" || s.AccountID == "" || s.RoleName == "" || s.Session == "" && s.StartURL == "" {
		return none, time.Time{}, errors.New("aws sso: the profile lacks sso_region, sso_account_id, sso_role_name or its session")
	}
	key := s.Session
	if key == "" {
		key = s.StartURL
	}
	sum := sha1.Sum([]byte(key))
	data, err := os.ReadFile(filepath.Join(s.CacheDir, hex.EncodeToString(sum[:])+".json"))
	if err != nil {
		return none, time.Time{}, fmt.Errorf("aws sso: no cached login (run aws sso login outside the tree): %w", err)
	}
	var tok ssoToken
	if err := json.Unmarshal(data, &tok); err != nil || tok.AccessToken == "" {
		return none, time.Time{}, errors.New("aws sso: the cached login is not understood")
	}
	if exp, err := time.Parse(time.RFC3339, tok.ExpiresAt); err != nil || !time.Now().Before(exp) {
		return none, time.Time{}, errors.New("aws sso: the cached login has expired: run aws sso login outside the tree")
	}
	base := s.Portal
	if base == "" {
		base = "https://portal.sso." + s.Region + ".amazonaws.com"
	}
	u := base + "/federation/credentials?" + url.Values{"account_id": {s.AccountID}, "role_name": {s.RoleName}}.Encode()
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return none, time.Time{}, fmt.Errorf("aws sso: %w", err)
	}
	req.Header.Set("X-Amz-Sso_bearer_token", tok.AccessToken)
	client := s.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return none, time.Time{}, fmt.Errorf("aws sso: the portal: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return none, time.Time{}, fmt.Errorf("aws sso: the portal answered %s", resp.Status)
	}
	var out struct {
		RoleCredentials struct {
			AccessKeyID     string `json:"accessKeyId"`
			SecretAccessKey string `json:"secretAccessKey"`
			SessionToken    string `json:"sessionToken"`
			Expiration      int64  `json:"expiration"`
		} `json:"roleCredentials"`
	}
	rc := &out.RoleCredentials
	if err := json.Unmarshal(body, &out); err != nil || rc.AccessKeyID == "" || rc.SecretAccessKey == "" || rc.Expiration == 0 {
		return none, time.Time{}, errors.New("aws sso: the portal's answer is not role credentials")
	}
	return sigv4.Credentials{AccessKeyID: rc.AccessKeyID, SecretAccessKey: rc.SecretAccessKey, SessionToken: rc.SessionToken},
		time.UnixMilli(rc.Expiration), nil
}
