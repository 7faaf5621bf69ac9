package broker

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/sigv4"
)

// The real AWS keys of these tests, assembled at run time; the fakes are
// derived from them as a launch derives them.
var (
	awsReal = sigv4.Credentials{
		AccessKeyID:     "AKIA" + strings.Repeat("R3AL", 4),
		SecretAccessKey: strings.Repeat("rEaL/sEcReT", 4)[:40],
	}
	awsFake = sigv4.Credentials{
		AccessKeyID:     Fake(testKey, "aws:default:id", awsReal.AccessKeyID),
		SecretAccessKey: Fake(testKey, "aws:default", awsReal.SecretAccessKey),
	}
)

// awsSeen is what an AWS stand-in received.
type awsSeen struct {
	Method, Path, Query, KeyID, Payload, Token string
	Bytes                                      int
}

type awsRecorder struct {
	mu   sync.Mutex
	seen []awsSeen
	// denied counts requests the stand-in refused (not signed with the
	// real keys).
	denied int
}

func (a *awsRecorder) all() []awsSeen {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]awsSeen(nil), a.seen...)
}

// awsStandIn starts an HTTPS stand-in for AWS on loopback that serves
// only requests signed with real (its secret, key id and session token),
// as AWS would: it answers STS GetCallerIdentity and enough of S3 for the
// CLI's ls and cp (multipart included).
func awsStandIn(t testing.TB, real sigv4.Credentials) (*httptest.Server, *x509.CertPool, *awsRecorder) {
	t.Helper()
	rec := &awsRecorder{}
	deny := func(w http.ResponseWriter, code, why string) {
		rec.mu.Lock()
		rec.denied++
		rec.mu.Unlock()
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusForbidden)
		fmt.Fprintf(w, "<Error><Code>%s</Code><Message>%s</Message></Error>", code, why)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := sigv4.Parse(r)
		if err != nil || s == nil {
			deny(w, "AccessDenied", "not signed")
			return
		}
		if s.AccessKeyID != real.AccessKeyID {
			deny(w, "InvalidAccessKeyId", "unknown key")
			return
		}
		if r.Header.Get("X-Amz-Security-Token") != real.SessionToken {
			deny(w, "InvalidToken", "token")
			return
		}
		body, _ := io.ReadAll(r.Body)
		sum := sha256.Sum256(body)
		bodyHash := hex.EncodeToString(sum[:])
		if len(s.PayloadHash) == 64 && s.PayloadHash != bodyHash {
			deny(w, "XAmzContentSHA256Mismatch", "payload")
			return
		}
		if err := s.Verify(r, real.SecretAccessKey, bodyHash); err != nil {
			deny(w, "SignatureDoesNotMatch", "signature")
			return
		}
		rec.mu.Lock()
		rec.seen = append(rec.seen, awsSeen{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery,
			KeyID: s.AccessKeyID, Payload: s.PayloadHash, Token: r.Header.Get("X-Amz-Security-Token"), Bytes: len(body)})
		rec.mu.Unlock()
		w.Header().Set("Content-Type", "text/xml")
		q := r.URL.Query()
		switch {
		case r.Method == "POST" && strings.Contains(string(body), "Action=GetCallerIdentity"):
			io.WriteString(w, `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>`+
				`<Arn>arn:aws:iam::123456789012:user/standin</Arn><UserId>AIDASTANDIN</UserId><Account>123456789012</Account>`+
				`</GetCallerIdentityResult><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></GetCallerIdentityResponse>`)
		case r.Method == "GET" && r.URL.Path == "/":
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><ListAllMyBucketsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">`+
				`<Owner><ID>1</ID></Owner><Buckets><Bucket><Name>standin-bucket</Name><CreationDate>2026-01-01T00:00:00.000Z</CreationDate></Bucket></Buckets></ListAllMyBucketsResult>`)
		case r.Method == "POST" && q.Has("uploads"):
			fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><InitiateMultipartUploadResult><Bucket>b</Bucket><Key>k</Key><UploadId>up1</UploadId></InitiateMultipartUploadResult>`)
		case r.Method == "PUT":
			w.Header().Set("ETag", `"`+bodyHash[:32]+`"`)
		case r.Method == "POST" && q.Has("uploadId"):
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><CompleteMultipartUploadResult><Location>x</Location><Bucket>b</Bucket><Key>k</Key><ETag>"e-2"</ETag></CompleteMultipartUploadResult>`)
		case r.Method == "GET" && q.Get("list-type") == "2":
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>b</Name><Prefix></Prefix><KeyCount>0</KeyCount><MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated></ListBucketResult>`)
		}
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv, pool, rec
}

// startAWSBroker starts a broker holding the AWS credential c (its fakes
// re-signed for host as a profile's endpoint_url) and nothing else.
func startAWSBroker(t testing.TB, host string, roots *x509.CertPool, c AWSCred, change func(*Config)) (*Broker, *auditLog) {
	t.Helper()
	log := &auditLog{}
	c.Hosts = append(c.Hosts, host)
	cfg := Config{AWS: []AWSCred{c}, Secrets: map[string]string{}, Key: testKey, UpstreamRoots: roots,
		UID: -1, Dir: t.TempDir(), Env: map[string]string{}, Audit: log.add}
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

// clientSign signs r as an SDK would with c: X-Amz-Date now, the given
// payload hash ("" signs the body's hash without declaring it), every
// header signed.
func clientSign(t testing.TB, r *http.Request, c sigv4.Credentials, service, payload string, body []byte) {
	t.Helper()
	now := time.Now().UTC().Format("20060102T150405Z")
	r.Header.Set("X-Amz-Date", now)
	if payload != "" {
		r.Header.Set("X-Amz-Content-Sha256", payload)
	} else {
		sum := sha256.Sum256(body)
		payload = hex.EncodeToString(sum[:])
	}
	if c.SessionToken != "" {
		r.Header.Set("X-Amz-Security-Token", c.SessionToken)
	}
	signed := []string{"host"}
	for k := range r.Header {
		signed = append(signed, strings.ToLower(k))
	}
	sortStrings(signed)
	creq := sigv4.CanonicalRequest(r, signed, service == "s3", payload)
	sum := sha256.Sum256([]byte(creq))
	scope := now[:8] + "/us-east-1/" + service + "/aws4_request"
	sts := "AWS4-HMAC-SHA256\n" + now + "\n" + scope + "\n" + hex.EncodeToString(sum[:])
	mac := hmacHex(sigv4.SigningKey(c.SecretAccessKey, now[:8], "us-east-1", service), sts)
	r.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential="+c.AccessKeyID+"/"+scope+", SignedHeaders="+strings.Join(signed, ";")+", Signature="+mac)
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestAWSResign: requests signed with the fake keys reach the stand-in
// signed with the real ones (it verifies with the real secret); what
// cannot be re-signed, or is not signed with the fake, is refused with its
// reason, and the stand-in never sees it.
func TestAWSResign(t *testing.T) {
	realTok := awsReal
	realTok.AccessKeyID = "ASIA" + awsReal.AccessKeyID[4:]
	realTok.SessionToken = "IQoJb3JpZ2luX2VjE" + strings.Repeat("T0k3n", 30)
	for _, real := range []sigv4.Credentials{awsReal, realTok} {
		srv, roots, rec := awsStandIn(t, real)
		host := srv.Listener.Addr().String()
		b, log := startAWSBroker(t, host, roots, AWSCred{Name: "aws:default", Fake: awsFake, Real: AWSStatic(real)}, nil)
		client := &http.Client{Transport: proxyTransport(t, b)}
		base := "https://" + host
		other := awsFake
		other.SecretAccessKey = strings.Repeat("o", 40)
		unknown := sigv4.Credentials{AccessKeyID: "AKIA" + strings.Repeat("UNKN", 4), SecretAccessKey: awsFake.SecretAccessKey}
		cases := []struct {
			name, method, path, service, payload string
			body                                 string
			creds                                sigv4.Credentials
			change                               func(r *http.Request)
			want                                 int
			place                                string
		}{
			{name: "sts, body hashed by the broker", method: "POST", path: "/", service: "sts", body: "Action=GetCallerIdentity&Version=2011-06-15", creds: awsFake, want: 200, place: "sigv4"},
			{name: "s3 list, signed empty payload", method: "GET", path: "/", service: "s3", payload: hashHex(""), creds: awsFake, want: 200, place: "sigv4"},
			{name: "s3 put, unsigned payload", method: "PUT", path: "/bucket/a%20key", service: "s3", payload: sigv4.UnsignedPayload, body: "data", creds: awsFake, want: 200, place: "sigv4"},
			{name: "s3 put, unsigned trailer", method: "PUT", path: "/bucket/k", service: "s3", payload: sigv4.StreamingUnsignedTrailer, body: "4\r\ndata\r\n0\r\n\r\n", creds: awsFake, want: 200, place: "sigv4"},
			{name: "another secret", method: "GET", path: "/", service: "s3", payload: hashHex(""), creds: other, want: 403, place: "sigv4-signature"},
			{name: "unknown key", method: "GET", path: "/", service: "s3", payload: hashHex(""), creds: unknown, want: 403, place: "sigv4-unknown-key"},
			{name: "signed chunks", method: "PUT", path: "/bucket/k", service: "s3", payload: "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", creds: awsFake, want: 403, place: "sigv4-chunked"},
			{name: "changed after signing", method: "GET", path: "/", service: "s3", payload: hashHex(""), creds: awsFake,
				change: func(r *http.Request) { r.URL.Path = "/other" }, want: 403, place: "sigv4-signature"},
			{name: "another token", method: "GET", path: "/", service: "s3", payload: hashHex(""), creds: awsFake,
				change: func(r *http.Request) { r.Header.Set("X-Amz-Security-Token", "stolen") }, want: 403, place: "sigv4-token"},
			{name: "sigv4a", method: "GET", path: "/", service: "s3", payload: hashHex(""), creds: awsFake,
				change: func(r *http.Request) {
					r.Header.Set("Authorization", strings.Replace(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256", "AWS4-ECDSA-P256-SHA256", 1))
				}, want: 403, place: "sigv4a"},
			{name: "presigned with the fake", method: "GET", path: "/bucket/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" + awsFake.AccessKeyID +
				"%2F20260101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=" + strings.Repeat("a", 64), service: "s3", want: 403, place: "sigv4-presigned"},
		}
		for _, c := range cases {
			t.Run(real.AccessKeyID[:4]+"/"+c.name, func(t *testing.T) {
				n, denied := len(rec.all()), rec.denied
				r, err := http.NewRequest(c.method, base+c.path, strings.NewReader(c.body))
				if err != nil {
					t.Fatal(err)
				}
				if c.creds.AccessKeyID != "" {
					clientSign(t, r, c.creds, c.service, c.payload, []byte(c.body))
				}
				if c.change != nil {
					c.change(r)
				}
				resp, err := client.Do(r)
				if err != nil {
					t.Fatal(err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != c.want {
					t.Fatalf("status %d, want %d: %s", resp.StatusCode, c.want, out)
				}
				if strings.Contains(string(out), real.SecretAccessKey) || real.SessionToken != "" && strings.Contains(string(out), real.SessionToken) {
					t.Error("the answer holds a real key")
				}
				if !log.has(map[bool]string{true: "swapped", false: "denied"}[c.want == 200], "aws:default", c.place) && !log.has("denied", "", c.place) {
					t.Errorf("no event of place %s: %+v", c.place, log.events)
				}
				got := rec.all()
				if c.want != 200 {
					if len(got) != n || rec.denied != denied {
						t.Error("the stand-in got a refused request")
					}
					return
				}
				if len(got) != n+1 {
					t.Fatalf("the stand-in served %d requests (denied %d)", len(got)-n, rec.denied-denied)
				}
				if e := got[n]; e.KeyID != real.AccessKeyID || e.Token != real.SessionToken || e.Bytes != len(c.body) {
					t.Errorf("the stand-in saw key %s, token %t, %d bytes", e.KeyID, e.Token != "", e.Bytes)
				}
			})
		}
	}
}

// TestAWSFakeToOtherHostRefused: the fake key id in a request to a host
// it is not re-signed for is refused as a leak.
func TestAWSFakeToOtherHostRefused(t *testing.T) {
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the other host got the request")
	}))
	t.Cleanup(other.Close)
	srv, roots, _ := awsStandIn(t, awsReal)
	b, log := startAWSBroker(t, srv.Listener.Addr().String(), roots, AWSCred{Name: "aws:default", Fake: awsFake, Real: AWSStatic(awsReal)}, nil)
	r, _ := http.NewRequest("GET", other.URL+"/", nil)
	clientSign(t, r, awsFake, "s3", hashHex(""), nil)
	resp, err := (&http.Client{Transport: proxyTransport(t, b)}).Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 || !log.has("refused", "aws:default", "header:Authorization") {
		t.Errorf("status %d, events %+v", resp.StatusCode, log.events)
	}
}

// TestAWSChildEnv: AWS credentials turn proxy mode on, the AWS endpoints
// leave NO_PROXY, and the environment's fakes are given where asked.
func TestAWSChildEnv(t *testing.T) {
	srv, roots, _ := awsStandIn(t, awsReal)
	b, _ := startAWSBroker(t, srv.Listener.Addr().String(), roots, AWSCred{Name: "aws:env", Fake: awsFake, Real: AWSStatic(awsReal), Env: true},
		func(c *Config) { c.Env = map[string]string{"NO_PROXY": "s3.amazonaws.com,.amazonaws.com,example.org"} })
	env := b.ChildEnv()
	if env["HTTPS_PROXY"] == "" || env["AWS_CA_BUNDLE"] == "" {
		t.Error("no proxy mode")
	}
	if env["NO_PROXY"] != "example.org" {
		t.Errorf("NO_PROXY %q", env["NO_PROXY"])
	}
	if env["AWS_ACCESS_KEY_ID"] != awsFake.AccessKeyID || env["AWS_SECRET_ACCESS_KEY"] != awsFake.SecretAccessKey {
		t.Error("the environment's fakes are not given")
	}
	for k, v := range env {
		if strings.Contains(v, awsReal.SecretAccessKey) || strings.Contains(v, awsReal.AccessKeyID) {
			t.Errorf("%s holds a real key", k)
		}
	}
}

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

func hmacHex(key []byte, s string) string {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(s))
	return hex.EncodeToString(h.Sum(nil))
}

// TestAWSProcess: credential_process's keys are cached until they near
// their expiration, then the process runs again; a failed refresh keeps
// keys that are still valid, and no error holds the process's output.
func TestAWSProcess(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "creds")
	count := filepath.Join(dir, "count")
	write := func(exp time.Duration, fail bool) {
		body := "#!/bin/sh\necho run >> " + count + "\n"
		if fail {
			body += "echo '" + awsReal.SecretAccessKey + "' >&2; echo '" + awsReal.SecretAccessKey + "'; exit 1\n"
		} else {
			body += "printf '%s' '{\"Version\": 1, \"AccessKeyId\": \"" + awsReal.AccessKeyID + "\", \"SecretAccessKey\": \"" + awsReal.SecretAccessKey +
				"\", \"SessionToken\": \"tok\", \"Expiration\": \"" + time.Now().Add(exp).UTC().Format(time.RFC3339) + "\"}'\n"
		}
		if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	runs := func() int {
		data, _ := os.ReadFile(count)
		return strings.Count(string(data), "run")
	}
	p := &AWSProcess{Argv: []string{script}, Env: []string{"PATH=/usr/bin:/bin"}}
	ctx := context.Background()
	write(time.Hour, false)
	for i := 0; i < 3; i++ {
		c, err := p.Credentials(ctx)
		if err != nil || c.AccessKeyID != awsReal.AccessKeyID || c.SessionToken != "tok" {
			t.Fatalf("%v %v", c.AccessKeyID, err)
		}
	}
	if runs() != 1 {
		t.Errorf("valid keys: the process ran %d times", runs())
	}
	p = &AWSProcess{Argv: []string{script}, Env: []string{"PATH=/usr/bin:/bin"}}
	write(2*time.Minute, false) // within AWSRefreshBefore: every use refreshes
	p.Credentials(ctx)
	p.Credentials(ctx)
	if runs() != 3 {
		t.Errorf("expiring keys: the process ran %d times in all, want 3", runs())
	}
	write(0, true)
	if c, err := p.Credentials(ctx); err != nil || c.AccessKeyID != awsReal.AccessKeyID {
		t.Errorf("a failed refresh dropped keys still valid: %v", err)
	}
	p = &AWSProcess{Argv: []string{script}, Env: []string{"PATH=/usr/bin:/bin"}}
	_, err := p.Credentials(ctx)
	if err == nil || strings.Contains(err.Error(), awsReal.SecretAccessKey) {
		t.Errorf("a failing process: %v", err != nil)
	}
	if _, err := (&AWSProcess{Argv: []string{script}}).Credentials(ctx); err == nil {
		t.Error("a nil Env is not an error")
	}
}

// BenchmarkBrokerAWS is BenchmarkBroker's request signed with the AWS
// fakes (an S3 GET with its empty payload's hash): verified and re-signed
// on the way, where BenchmarkBroker's is swapped.
func BenchmarkBrokerAWS(b *testing.B) {
	srv, roots := benchServer(b)
	host := srv.Listener.Addr().String()
	br, _ := startAWSBroker(b, host, roots, AWSCred{Name: "aws:default", Fake: awsFake, Real: AWSStatic(awsReal)}, nil)
	c := &http.Client{Transport: proxyTransport(b, br)}
	signed, _ := http.NewRequest("GET", "https://"+host+"/bucket/key", nil)
	clientSign(b, signed, awsFake, "s3", hashHex(""), nil)
	for b.Loop() {
		req, _ := http.NewRequest("GET", signed.URL.String(), nil)
		req.Header = signed.Header.Clone()
		resp, err := c.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("status %d", resp.StatusCode)
		}
	}
}

// TestAWSBodiesHeldCapped: the bodies the broker holds to hash are capped
// across requests: past the cap a request is refused, and what was held
// is given back when requests end.
func TestAWSBodiesHeldCapped(t *testing.T) {
	old := testOnlyAWSMaxHeld
	testOnlyAWSMaxHeld = 100
	t.Cleanup(func() { testOnlyAWSMaxHeld = old })
	srv, roots, rec := awsStandIn(t, awsReal)
	host := srv.Listener.Addr().String()
	b, log := startAWSBroker(t, host, roots, AWSCred{Name: "aws:default", Fake: awsFake, Real: AWSStatic(awsReal)}, nil)
	client := &http.Client{Transport: proxyTransport(t, b)}
	post := func(body string) int {
		r, _ := http.NewRequest("POST", "https://"+host+"/", strings.NewReader(body))
		clientSign(t, r, awsFake, "sts", "", []byte(body))
		resp, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	small := "Action=GetCallerIdentity&Version=2011-06-15"
	for i := 0; i < 5; i++ { // each held and given back
		if code := post(small); code != 200 {
			t.Fatalf("request %d: status %d", i, code)
		}
	}
	if code := post(small + "&" + strings.Repeat("x", 100)); code != 403 || !log.has("denied", "aws:default", "sigv4-body-size") {
		t.Errorf("past the cap: status %d", code)
	}
	if n := len(rec.all()); n != 5 {
		t.Errorf("the stand-in served %d", n)
	}
	deadline := time.Now().Add(2 * time.Second)
	for awsHeld.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := awsHeld.Load(); n != 0 {
		t.Errorf("%d bytes still counted as held", n)
	}
}

// TestAWSAssumeRole: the broker assumes the role at STS with the source
// profile's real keys (the stand-in verifies them), keeps the role's keys
// until they near their expiration, and assumes it again then; an STS
// refusal is an error without a key in it.
func TestAWSAssumeRole(t *testing.T) {
	role := sigv4.Credentials{AccessKeyID: "ASIAROLEROLEROLE1234", SecretAccessKey: strings.Repeat("roleSecret", 4), SessionToken: "roleToken"}
	var calls atomic.Int32
	var expiry atomic.Int64
	sts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		sum := sha256.Sum256(body)
		s, err := sigv4.Parse(r)
		q, _ := url.ParseQuery(string(body))
		if err != nil || s == nil || s.AccessKeyID != awsReal.AccessKeyID || s.Service != "sts" || s.Region != "eu-west-1" ||
			s.Verify(r, awsReal.SecretAccessKey, hex.EncodeToString(sum[:])) != nil || q.Get("Action") != "AssumeRole" ||
			q.Get("RoleArn") != "arn:aws:iam::1:role/dev" || q.Get("ExternalId") != "ext" || q.Get("RoleSessionName") != "me" {
			http.Error(w, "<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>", http.StatusForbidden)
			return
		}
		calls.Add(1)
		fmt.Fprintf(w, `<AssumeRoleResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><AssumeRoleResult><Credentials>`+
			`<AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey><SessionToken>%s</SessionToken><Expiration>%s</Expiration>`+
			`</Credentials></AssumeRoleResult></AssumeRoleResponse>`, role.AccessKeyID, role.SecretAccessKey, role.SessionToken,
			time.UnixMilli(expiry.Load()).UTC().Format(time.RFC3339))
	}))
	t.Cleanup(sts.Close)
	newRole := func(src sigv4.Credentials) *AWSAssumeRole {
		return &AWSAssumeRole{Source: AWSStatic(src), RoleARN: "arn:aws:iam::1:role/dev", SessionName: "me", ExternalID: "ext",
			Region: "eu-west-1", Endpoint: sts.URL, Client: sts.Client()}
	}
	ctx := context.Background()
	expiry.Store(time.Now().Add(time.Hour).UnixMilli())
	a := newRole(awsReal)
	for i := 0; i < 3; i++ {
		if c, err := a.Credentials(ctx); err != nil || c != role {
			t.Fatalf("%+v %v", c, err)
		}
	}
	if calls.Load() != 1 {
		t.Errorf("valid keys: %d calls", calls.Load())
	}
	expiry.Store(time.Now().Add(2 * time.Minute).UnixMilli())
	a = newRole(awsReal)
	a.Credentials(ctx)
	a.Credentials(ctx)
	if calls.Load() != 3 {
		t.Errorf("expiring keys: %d calls in all, want 3", calls.Load())
	}
	_, err := newRole(sigv4.Credentials{AccessKeyID: "AKIAOTHEROTHEROTHER1", SecretAccessKey: "other"}).Credentials(ctx)
	if err == nil || strings.Contains(err.Error(), "AKIAOTHER") {
		t.Errorf("another key: %v", err)
	}
}
