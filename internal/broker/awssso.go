package broker

import (
	"bytes"
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
// inside). An SSO token within 15 minutes of its expiry is refreshed, as
// botocore does, with the cache's refresh token at the OIDC service, and
// written back to the cache; an expired one that cannot be is an error
// that says to run `aws sso login` outside the tree.
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
	// OIDC is the SSO OIDC service's base URL; "" means
	// https://oidc.REGION.amazonaws.com (tests point it elsewhere).
	OIDC string
	// Client makes the portal request; nil means http.DefaultClient.
	Client *http.Client

	mu  sync.Mutex
	cur sigv4.Credentials
	exp time.Time
	ok  bool
}

// ssoToken is the part of a cache file the broker reads: the token, and
// for an sso-session's login the client registration and refresh token
// that renew it.
type ssoToken struct {
	AccessToken           string `json:"accessToken"`
	ExpiresAt             string `json:"expiresAt"`
	ClientID              string `json:"clientId"`
	ClientSecret          string `json:"clientSecret"`
	RegistrationExpiresAt string `json:"registrationExpiresAt"`
	RefreshToken          string `json:"refreshToken"`
}

// ssoRefreshWindow is how long before its expiry an SSO token is
// refreshed (botocore's SSOTokenProvider: 15 minutes).
const ssoRefreshWindow = 15 * time.Minute

// canRefresh reports whether the cache holds what a refresh needs: a
// refresh token and a client registration that has not expired.
func (t ssoToken) canRefresh() bool {
	if t.RefreshToken == "" || t.ClientID == "" || t.ClientSecret == "" {
		return false
	}
	reg, err := time.Parse(time.RFC3339, t.RegistrationExpiresAt)
	return err == nil && time.Now().Before(reg)
}

// refreshToken renews the cached SSO token at the OIDC service's token
// endpoint (CreateToken, grant refresh_token), as botocore does, and
// writes the new token back to the cache file path (old: its bytes; the
// other fields kept, replaced by rename, mode 0600). Its errors hold no
// token or secret.
func (s *AWSSSO) refreshToken(ctx context.Context, path string, old []byte, tok ssoToken) (ssoToken, error) {
	base := s.OIDC
	if base == "" {
		base = "https://oidc." + s.Region + ".amazonaws.com"
	}
	body, _ := json.Marshal(map[string]string{"grantType": "refresh_token", "clientId": tok.ClientID,
		"clientSecret": tok.ClientSecret, "refreshToken": tok.RefreshToken})
	req, err := http.NewRequestWithContext(ctx, "POST", base+"/token", bytes.NewReader(body))
	if err != nil {
		return tok, fmt.Errorf("aws sso: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	client := s.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return tok, fmt.Errorf("aws sso: the token endpoint: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return tok, fmt.Errorf("aws sso: the token endpoint answered %s", resp.Status)
	}
	var out struct {
		AccessToken  string `json:"accessToken"`
		ExpiresIn    int64  `json:"expiresIn"`
		RefreshToken string `json:"refreshToken"`
	}
	if err := json.Unmarshal(data, &out); err != nil || out.AccessToken == "" || out.ExpiresIn <= 0 || out.ExpiresIn > 366*24*3600 {
		return tok, errors.New("aws sso: the token endpoint's answer is not a token")
	}
	tok.AccessToken = out.AccessToken
	tok.ExpiresAt = time.Now().Add(time.Duration(out.ExpiresIn) * time.Second).UTC().Format(time.RFC3339)
	if out.RefreshToken != "" {
		tok.RefreshToken = out.RefreshToken
	}
	// Written back, so that the user's aws and the next launch use the
	// new token (the old refresh token may be spent).
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(old, &fields); err != nil {
		return tok, nil
	}
	for k, v := range map[string]string{"accessToken": tok.AccessToken, "expiresAt": tok.ExpiresAt, "refreshToken": tok.RefreshToken} {
		fields[k], _ = json.Marshal(v)
	}
	if newData, err := json.Marshal(fields); err == nil {
		if f, err := os.CreateTemp(filepath.Dir(path), ".envsieve-sso-*"); err == nil {
			_, werr := f.Write(newData)
			cerr := f.Close()
			if werr != nil || cerr != nil || os.Chmod(f.Name(), 0o600) != nil || os.Rename(f.Name(), path) != nil {
				os.Remove(f.Name())
			}
		}
	}
	return tok, nil
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
	path := filepath.Join(s.CacheDir, hex.EncodeToString(sum[:])+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		return none, time.Time{}, fmt.Errorf("aws sso: no cached login (run aws sso login outside the tree): %w", err)
	}
	var tok ssoToken
	if err := json.Unmarshal(data, &tok); err != nil || tok.AccessToken == "" {
		return none, time.Time{}, errors.New("aws sso: the cached login is not understood")
	}
	exp, err := time.Parse(time.RFC3339, tok.ExpiresAt)
	if err != nil {
		return none, time.Time{}, errors.New("aws sso: the cached login's expiresAt is not RFC 3339")
	}
	if time.Until(exp) < ssoRefreshWindow && tok.canRefresh() {
		// As botocore: refreshed within 15 minutes of its expiry; a
		// failed refresh leaves a token still valid in use.
		if t, err := s.refreshToken(ctx, path, data, tok); err == nil {
			tok = t
			exp, _ = time.Parse(time.RFC3339, t.ExpiresAt)
		}
	}
	if !time.Now().Before(exp) {
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
