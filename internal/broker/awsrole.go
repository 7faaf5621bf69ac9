package broker

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/envsieve/envsieve/internal/sigv4"
)

// AWSAssumeRole gives an assume-role profile's keys (role_arn with a
// source_profile): the broker calls STS AssumeRole itself, signed with
// the source profile's real keys, outside the tree, and again when the
// role's keys are about to expire; the tree holds fakes. A failed refresh
// keeps the last keys while they are valid. A web identity profile
// (role_arn with a web_identity_token_file: TokenFile, no Source) is
// assumed the same way with AssumeRoleWithWebIdentity.
type AWSAssumeRole struct {
	// Source gives the source profile's real keys. Required.
	Source AWSSource
	// RoleARN is the role; SessionName the role_session_name ("" makes
	// one); ExternalID the external_id; Duration the duration_seconds (0
	// is STS's default, an hour).
	RoleARN, SessionName, ExternalID string
	Duration                         int
	// Region is the profile's region: the STS endpoint is regional in it
	// (sts.REGION.amazonaws.com); "" is the global one, signed for
	// us-east-1.
	Region string
	// Endpoint is the STS endpoint the profile names (endpoint_url);
	// "" is AWS's.
	Endpoint string
	// Client makes the request; nil means http.DefaultClient.
	Client *http.Client
	// TokenFile, for a web identity profile (Source nil), is the file
	// whose token is exchanged, unsigned, at AssumeRoleWithWebIdentity;
	// read at each call (a projected token is rotated).
	TokenFile string

	mu  sync.Mutex
	cur sigv4.Credentials
	exp time.Time
	ok  bool
}

// Credentials returns the role's current keys, assuming it again when
// there are none or they expire within AWSRefreshBefore.
func (a *AWSAssumeRole) Credentials(ctx context.Context) (sigv4.Credentials, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := time.Now()
	if a.ok && a.exp.Sub(now) > AWSRefreshBefore {
		return a.cur, nil
	}
	c, exp, err := a.assume(ctx)
	if err != nil {
		if a.ok && now.Before(a.exp) {
			return a.cur, nil
		}
		return sigv4.Credentials{}, err
	}
	a.cur, a.exp, a.ok = c, exp, true
	return c, nil
}

// stsCredentials are the keys of an STS answer.
type stsCredentials struct {
	AccessKeyID     string `xml:"AccessKeyId"`
	SecretAccessKey string
	SessionToken    string
	Expiration      string
}

// assumeRoleResponse is STS's answer, the part the broker reads: of
// AssumeRole, or of AssumeRoleWithWebIdentity.
type assumeRoleResponse struct {
	Credentials stsCredentials `xml:"AssumeRoleResult>Credentials"`
	WebIdentity stsCredentials `xml:"AssumeRoleWithWebIdentityResult>Credentials"`
}

// assume calls AssumeRole once. Its errors hold no key.
func (a *AWSAssumeRole) assume(ctx context.Context) (sigv4.Credentials, time.Time, error) {
	var none sigv4.Credentials
	if a.Source == nil && a.TokenFile == "" || a.RoleARN == "" {
		return none, time.Time{}, errors.New("assume role: no source profile, token file or role")
	}
	action := "AssumeRole"
	var src sigv4.Credentials
	var token []byte
	if a.Source != nil {
		var err error
		if src, err = a.Source.Credentials(ctx); err != nil {
			return none, time.Time{}, fmt.Errorf("assume role: the source profile: %w", err)
		}
	} else {
		// A web identity: the token is the credential, read outside the
		// tree (the seal masks the file), again at each call.
		action = "AssumeRoleWithWebIdentity"
		data, err := os.ReadFile(a.TokenFile)
		if err != nil {
			return none, time.Time{}, fmt.Errorf("assume role with web identity: the token file: %w", errors.Unwrap(err))
		}
		if token = bytes.TrimSpace(data); len(token) == 0 {
			return none, time.Time{}, errors.New("assume role with web identity: the token file is empty")
		}
	}
	region, endpoint := a.Region, a.Endpoint
	if region == "" {
		region = "us-east-1"
		if endpoint == "" {
			endpoint = "https://sts.amazonaws.com"
		}
	}
	if endpoint == "" {
		endpoint = "https://sts." + region + ".amazonaws.com"
	}
	session := a.SessionName
	if session == "" {
		session = "envsieve-" + strconv.FormatInt(time.Now().Unix(), 10)
	}
	form := url.Values{"Action": {action}, "Version": {"2011-06-15"}, "RoleArn": {a.RoleARN}, "RoleSessionName": {session}}
	if token != nil {
		form.Set("WebIdentityToken", string(token))
	}
	if a.ExternalID != "" {
		form.Set("ExternalId", a.ExternalID)
	}
	if a.Duration > 0 {
		form.Set("DurationSeconds", strconv.Itoa(a.Duration))
	}
	body := []byte(form.Encode())
	req, err := http.NewRequestWithContext(ctx, "POST", endpoint+"/", bytes.NewReader(body))
	if err != nil {
		return none, time.Time{}, fmt.Errorf("assume role: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	if token == nil {
		if err := sigv4.Sign(req, src, region, "sts", body, time.Now()); err != nil {
			return none, time.Time{}, fmt.Errorf("assume role: %w", err)
		}
	}
	client := a.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return none, time.Time{}, fmt.Errorf("assume role: STS: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		return none, time.Time{}, fmt.Errorf("assume role: STS answered %s", resp.Status)
	}
	var out assumeRoleResponse
	c := &out.Credentials
	if token != nil {
		c = &out.WebIdentity
	}
	if err := xml.Unmarshal(data, &out); err != nil || c.AccessKeyID == "" || c.SecretAccessKey == "" || c.SessionToken == "" {
		return none, time.Time{}, errors.New("assume role: STS's answer holds no credentials")
	}
	exp, err := time.Parse(time.RFC3339, c.Expiration)
	if err != nil {
		return none, time.Time{}, errors.New("assume role: STS's Expiration is not RFC 3339")
	}
	return sigv4.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey, SessionToken: c.SessionToken}, exp, nil
}
