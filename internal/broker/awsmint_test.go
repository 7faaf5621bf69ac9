package broker

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/sigv4"
)

// The keys a stand-in STS mints: real temporary keys the tree must never
// see.
var (
	mintedTemp = sigv4.Credentials{AccessKeyID: "ASIAM1NTEDM1NTED0001", SecretAccessKey: strings.Repeat("m1nt/SECRET+", 4)[:40],
		SessionToken: "IQoJb3JpZ2luX2VjEM1NT" + strings.Repeat("mintedT0ken/", 20)}
	mintedLong = sigv4.Credentials{AccessKeyID: "AKIAM1NTEDLONG000001", SecretAccessKey: strings.Repeat("LongM1nted", 4)}
)

// mintStandIn is a stand-in for AWS's credential-minting endpoints on
// loopback TLS. A request signed with a key it knows (the real long-term
// keys, then every set it minted) is verified with that key's secret; STS
// actions mint mintedTemp, IAM CreateAccessKey mintedLong, and
// GetCallerIdentity answers which key signed; AssumeRole of a role whose
// ARN ends in "/mfa" needs mfaSerial and mfaCode. /federation/credentials is
// the SSO portal (a bearer token), /cognito Cognito's
// GetCredentialsForIdentity, /odd a secret in a shape the broker does not
// know, /big credentials past the broker's cap; ?gzip compresses.
type mintStandIn struct {
	mu      sync.Mutex
	keys    map[string]sigv4.Credentials
	callers []string // the key ids GetCallerIdentity was signed with
	// assumed are the AssumeRole calls it answered: the key id that
	// signed each and its form.
	assumed []assumeCall
}

// assumeCall is one AssumeRole call a mintStandIn answered.
type assumeCall struct {
	key  string
	form url.Values
}

// The MFA device and code a stand-in's role ".../mfa" requires.
const (
	mfaSerial = "arn:aws:iam::123456789012:mfa/me"
	mfaCode   = "123456"
)

// calls returns how many GetCallerIdentity requests m served.
func (m *mintStandIn) calls() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.callers)
}

func newMintStandIn(t *testing.T) (*httptest.Server, *x509.CertPool, *mintStandIn) {
	t.Helper()
	m := &mintStandIn{keys: map[string]sigv4.Credentials{awsReal.AccessKeyID: awsReal}}
	exp := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	xmlCreds := func(c sigv4.Credentials) string {
		return "<Credentials>\n  <AccessKeyId>" + c.AccessKeyID + "</AccessKeyId>\n  <SecretAccessKey>" + c.SecretAccessKey +
			"</SecretAccessKey>\n  <SessionToken>" + c.SessionToken + "</SessionToken>\n  <Expiration>" + exp + "</Expiration>\n</Credentials>"
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var out string
		switch r.URL.Path {
		case "/federation/credentials":
			out = fmt.Sprintf(`{"roleCredentials":{"accessKeyId":%q,"secretAccessKey":%q,"sessionToken":%q,"expiration":%d}}`,
				mintedTemp.AccessKeyID, mintedTemp.SecretAccessKey, mintedTemp.SessionToken, time.Now().Add(time.Hour).UnixMilli())
		case "/cognito":
			out = fmt.Sprintf(`{"IdentityId":"us-east-1:x","Credentials":{"AccessKeyId":%q,"SecretKey":%q,"SessionToken":%q,"Expiration":%d}}`,
				mintedTemp.AccessKeyID, mintedTemp.SecretAccessKey, mintedTemp.SessionToken, time.Now().Add(time.Hour).Unix())
		case "/odd":
			out = "[minted]\naws_access_key_id = " + mintedTemp.AccessKeyID + "\naws_secret_access_key = " + mintedTemp.SecretAccessKey + "\n"
		case "/big":
			out = `{"Credentials":{"AccessKeyId":"` + mintedTemp.AccessKeyID + `","SecretAccessKey":"` + mintedTemp.SecretAccessKey +
				`"},"pad":"` + strings.Repeat("x", 2<<20) + `"}`
		case "/bigtail":
			out = `{"pad":"` + strings.Repeat("x", 2<<20) + `","Credentials":{"AccessKeyId":"` + mintedTemp.AccessKeyID +
				`","SecretAccessKey":"` + mintedTemp.SecretAccessKey + `"}}`
		default:
			s, err := sigv4.Parse(r)
			var key sigv4.Credentials
			ok := false
			if err == nil && s != nil {
				m.mu.Lock()
				key, ok = m.keys[s.AccessKeyID]
				m.mu.Unlock()
			}
			sum := sha256.Sum256(body)
			if err != nil || !ok || r.Header.Get("X-Amz-Security-Token") != key.SessionToken || s.Verify(r, key.SecretAccessKey, hex.EncodeToString(sum[:])) != nil {
				w.WriteHeader(http.StatusForbidden)
				io.WriteString(w, "<ErrorResponse><Error><Code>InvalidClientTokenId</Code></Error></ErrorResponse>")
				return
			}
			q, _ := url.ParseQuery(string(body))
			action := q.Get("Action")
			switch action {
			case "GetCallerIdentity":
				m.mu.Lock()
				m.callers = append(m.callers, s.AccessKeyID)
				m.mu.Unlock()
				out = "<GetCallerIdentityResponse><GetCallerIdentityResult><Arn>arn:aws:sts::123456789012:assumed-role/standin/" + s.AccessKeyID[:4] +
					"</Arn><UserId>AROA</UserId><Account>123456789012</Account></GetCallerIdentityResult></GetCallerIdentityResponse>"
			case "GetSessionToken", "AssumeRole", "GetFederationToken", "AssumeRoleWithSAML", "AssumeRoleWithWebIdentity":
				extra := ""
				if action == "AssumeRole" && strings.HasSuffix(q.Get("RoleArn"), "/mfa") &&
					(q.Get("SerialNumber") != mfaSerial || q.Get("TokenCode") != mfaCode) {
					w.WriteHeader(http.StatusForbidden)
					io.WriteString(w, "<ErrorResponse><Error><Code>AccessDenied</Code><Message>MultiFactorAuthentication failed</Message></Error></ErrorResponse>")
					return
				}
				if action == "AssumeRole" {
					m.mu.Lock()
					m.assumed = append(m.assumed, assumeCall{key: s.AccessKeyID, form: q})
					m.mu.Unlock()
					extra = "<AssumedRoleUser><Arn>arn:aws:sts::1:assumed-role/r/s</Arn><AssumedRoleId>AROA:s</AssumedRoleId></AssumedRoleUser>"
				}
				out = `<` + action + `Response xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><` + action + `Result>` + xmlCreds(mintedTemp) + extra +
					`</` + action + `Result><ResponseMetadata><RequestId>1</RequestId></ResponseMetadata></` + action + `Response>`
			case "CreateAccessKey":
				out = `<CreateAccessKeyResponse><CreateAccessKeyResult><AccessKey><UserName>me</UserName><AccessKeyId>` + mintedLong.AccessKeyID +
					`</AccessKeyId><Status>Active</Status><SecretAccessKey>` + mintedLong.SecretAccessKey +
					`</SecretAccessKey><CreateDate>2026-01-01T00:00:00Z</CreateDate></AccessKey></CreateAccessKeyResult></CreateAccessKeyResponse>`
			default:
				w.WriteHeader(http.StatusBadRequest)
				return
			}
		}
		m.mu.Lock()
		m.keys[mintedTemp.AccessKeyID], m.keys[mintedLong.AccessKeyID] = mintedTemp, mintedLong
		m.mu.Unlock()
		w.Header().Set("Content-Type", "text/xml")
		if strings.HasPrefix(out, "{") {
			w.Header().Set("Content-Type", "application/json")
		}
		if r.URL.Query().Has("gzip") {
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			io.WriteString(zw, out)
			zw.Close()
			w.Header().Set("Content-Encoding", "gzip")
			w.Write(z.Bytes())
			return
		}
		io.WriteString(w, out)
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return srv, pool, m
}

func (a *auditLog) hasKind(kind string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, e := range a.events {
		if e.Kind == kind {
			return true
		}
	}
	return false
}

func (a *auditLog) count(kind, place string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, e := range a.events {
		if e.Kind == kind && e.Place == place {
			n++
		}
	}
	return n
}

// mintedIn returns the keys an answer gives, whatever its shape (STS's
// XML, the portal's or Cognito's JSON).
func mintedIn(t *testing.T, body []byte) sigv4.Credentials {
	t.Helper()
	var x struct {
		ID     string `xml:"AccessKeyId"`
		Secret string `xml:"SecretAccessKey"`
		Token  string `xml:"SessionToken"`
	}
	if bytes.HasPrefix(body, []byte("<")) {
		// The first element with an AccessKeyId, two levels down.
		dec := xml.NewDecoder(bytes.NewReader(body))
		for {
			tok, err := dec.Token()
			if err != nil {
				t.Fatalf("no keys in the answer")
			}
			if se, ok := tok.(xml.StartElement); ok && (se.Name.Local == "Credentials" || se.Name.Local == "AccessKey") {
				if err := dec.DecodeElement(&x, &se); err != nil {
					t.Fatal(err)
				}
				return sigv4.Credentials{AccessKeyID: x.ID, SecretAccessKey: x.Secret, SessionToken: x.Token}
			}
		}
	}
	var j map[string]json.RawMessage
	if err := json.Unmarshal(body, &j); err != nil {
		t.Fatal(err)
	}
	raw := j["roleCredentials"]
	if raw == nil {
		raw = j["Credentials"]
	}
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	str := func(keys ...string) string {
		for _, k := range keys {
			if s, ok := c[k].(string); ok {
				return s
			}
		}
		return ""
	}
	return sigv4.Credentials{AccessKeyID: str("accessKeyId", "AccessKeyId"), SecretAccessKey: str("secretAccessKey", "SecretKey"),
		SessionToken: str("sessionToken", "SessionToken")}
}

// TestAWSMintedKeysFaked: a tree holding only the fakes asks AWS for new
// credentials (STS GetSessionToken, AssumeRole, GetFederationToken,
// AssumeRoleWithSAML and -WebIdentity, IAM CreateAccessKey, the SSO
// portal, Cognito; plain and gzip'd): the answer it gets holds fresh
// fakes, never the minted keys, and a request it signs with those fakes
// reaches AWS re-signed with the minted keys. An answer with a secret the
// broker cannot rewrite (an unknown shape, past its cap) is refused, 502,
// never passed on.
func TestAWSMintedKeysFaked(t *testing.T) {
	srv, roots, m := newMintStandIn(t)
	host := srv.Listener.Addr().String()
	b, log := startAWSBroker(t, host, roots, AWSCred{Name: "aws:default", Fake: awsFake, Real: AWSStatic(awsReal)}, nil)
	client := &http.Client{Transport: proxyTransport(t, b)}
	do := func(t *testing.T, path, body string, c sigv4.Credentials) (int, []byte) {
		t.Helper()
		r, err := http.NewRequest("POST", "https://"+host+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		if c.AccessKeyID != "" {
			service := "sts"
			if strings.Contains(body, "CreateAccessKey") {
				service = "iam"
			}
			clientSign(t, r, c, service, "", []byte(body))
		}
		resp, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, out
	}
	noMinted := func(t *testing.T, what string, out []byte) {
		t.Helper()
		for _, v := range []string{mintedTemp.SecretAccessKey, mintedTemp.SessionToken, mintedTemp.AccessKeyID, mintedLong.SecretAccessKey, mintedLong.AccessKeyID} {
			if bytes.Contains(out, []byte(v)) {
				t.Fatalf("%s: the tree got a minted real key", what)
			}
		}
	}
	for _, c := range []struct{ name, path, body string }{
		{"GetSessionToken", "/", "Action=GetSessionToken&Version=2011-06-15"},
		{"GetSessionToken gzip", "/?gzip", "Action=GetSessionToken&Version=2011-06-15"},
		{"AssumeRole", "/", "Action=AssumeRole&Version=2011-06-15&RoleArn=arn%3Aaws%3Aiam%3A%3A1%3Arole%2Fr&RoleSessionName=s"},
		{"GetFederationToken", "/", "Action=GetFederationToken&Version=2011-06-15&Name=n"},
		{"AssumeRoleWithSAML", "/", "Action=AssumeRoleWithSAML&Version=2011-06-15"},
		{"AssumeRoleWithWebIdentity", "/", "Action=AssumeRoleWithWebIdentity&Version=2011-06-15"},
		{"CreateAccessKey", "/", "Action=CreateAccessKey&Version=2010-05-08"},
		{"SSO portal", "/federation/credentials", ""},
		{"SSO portal gzip", "/federation/credentials?gzip", ""},
		{"Cognito", "/cognito", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			signer := awsFake
			if c.body == "" {
				signer = sigv4.Credentials{} // a bearer token, not SigV4
			}
			code, out := do(t, c.path, c.body, signer)
			noMinted(t, "the answer", out)
			if code != 200 {
				t.Fatalf("status %d: %s", code, out)
			}
			got := mintedIn(t, out)
			if got.AccessKeyID == "" || got.SecretAccessKey == "" {
				t.Fatalf("the answer lost its keys: %s", out)
			}
			if !log.hasKind("minted") {
				t.Errorf("no minted event: %+v", log.events)
			}
			n := m.calls()
			code, out = do(t, "/", "Action=GetCallerIdentity&Version=2011-06-15", got)
			noMinted(t, "GetCallerIdentity's answer", out)
			m.mu.Lock()
			callers := append([]string(nil), m.callers[n:]...)
			m.mu.Unlock()
			want := mintedTemp.AccessKeyID
			if c.name == "CreateAccessKey" {
				want = mintedLong.AccessKeyID
			}
			if code != 200 || len(callers) != 1 || callers[0] != want {
				t.Errorf("a request signed with the minted fakes: status %d, the stand-in saw %v: %s", code, callers, out)
			}
		})
	}
	for _, c := range []struct{ name, path, place string }{
		{"unknown shape", "/odd", "aws-credentials-shape"},
		{"past the cap", "/big", "aws-credentials-size"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out := do(t, c.path, "", sigv4.Credentials{})
			noMinted(t, "the answer", out)
			if code != http.StatusBadGateway || !log.has("denied", "", c.place) || !strings.Contains(string(out), c.place) {
				t.Errorf("status %d, events %+v", code, log.events)
			}
		})
	}
	// Past the cap with the keys after it: streamed, and cut before the
	// secret's name (its status has gone).
	t.Run("past the cap, keys at the end", func(t *testing.T) {
		before := log.count("denied", "aws-credentials-size")
		_, out := do(t, "/bigtail", "", sigv4.Credentials{})
		noMinted(t, "the answer", out)
		if bytes.Contains(bytes.ToLower(out), []byte("secretaccesskey")) || log.count("denied", "aws-credentials-size") != before+1 {
			t.Errorf("%d bytes came, events %+v", len(out), log.events)
		}
	})
}

// FuzzAWSMintRewrite: however an answer from AWS that holds minted keys
// is framed (text before and after, in XML or JSON), compressed and split,
// and wherever the broker's cap falls, the minted secret and session
// token never reach the tree: the answer comes rewritten, refused, or
// cut.
func FuzzAWSMintRewrite(f *testing.F) {
	f.Add([]byte("<R><Result>"), []byte("</Result></R>"), uint8(0), []byte{3, 200}, uint16(0))
	f.Add([]byte(`{"roleCredentials":`), []byte(`}`), uint8(1), []byte{0}, uint16(64))
	f.Add([]byte("<!--"), []byte("-->"), uint8(2), []byte{9}, uint16(0))
	f.Add([]byte(`{"a":"`), []byte(`"}`), uint8(7), []byte{1, 2}, uint16(300))
	f.Add([]byte("x = "), []byte(""), uint8(4), []byte{}, uint16(10))
	b, err := Start(Config{AWS: []AWSCred{{Name: "aws:default", Fake: awsFake, Real: AWSStatic(awsReal)}}, Secrets: map[string]string{},
		Key: testKey, UID: -1, Dir: f.TempDir(), Env: map[string]string{}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { b.Close() })
	xmlSet := "<Credentials><AccessKeyId>" + mintedTemp.AccessKeyID + "</AccessKeyId><SecretAccessKey>" + mintedTemp.SecretAccessKey +
		"</SecretAccessKey><SessionToken>" + mintedTemp.SessionToken + "</SessionToken></Credentials>"
	jsonSet := `{"accessKeyId":"` + mintedTemp.AccessKeyID + `","secretAccessKey":"` + mintedTemp.SecretAccessKey +
		`","sessionToken":"` + mintedTemp.SessionToken + `"}`
	codings := []string{"", "gzip", "deflate", "br", "zstd"}
	f.Fuzz(func(t *testing.T, head, tail []byte, mode uint8, cuts []byte, capAt uint16) {
		set := xmlSet
		if mode&1 == 1 {
			set = jsonSet
		}
		body := append(append(append([]byte{}, head...), set...), tail...)
		coding := codings[int(mode>>1)%len(codings)]
		wire := body
		if coding != "" {
			wire = encodeWith(t, []string{coding}, body)
		}
		old := testOnlyAWSMintMax
		if capAt > 0 {
			testOnlyAWSMintMax = int(capAt)
		}
		defer func() { testOnlyAWSMintMax = old }()
		resp := &http.Response{StatusCode: 200, Header: http.Header{}, ContentLength: -1}
		var rc io.ReadCloser = io.NopCloser(&chunked{data: wire, cuts: cuts})
		if coding != "" {
			rc = newDecoded(rc, []string{coding}, 1<<20, nil)
		}
		out, err := b.awsResponse(resp, rc, "sts.amazonaws.com:443", &b.cfg.AWS[0])
		if err != nil {
			return // refused
		}
		got, _ := io.ReadAll(out) // a cut answer ends with an error
		for _, v := range []string{mintedTemp.SecretAccessKey, mintedTemp.SessionToken} {
			if bytes.Contains(got, []byte(v)) {
				t.Fatalf("a minted value reached the tree: %q", got)
			}
		}
	})
}

// TestAWSFetchedKeysScrubbed: keys the broker fetched itself (a
// credential_process, SSO, an assumed role: not among the launch's
// secrets) are scrubbed from answers as a file's are: a host that echoes
// the id, secret and session token it was signed with, in its body and a
// header, reaches the tree with none of them.
func TestAWSFetchedKeysScrubbed(t *testing.T) {
	fetched := sigv4.Credentials{AccessKeyID: "ASIAFETCHEDFETCHED01", SecretAccessKey: strings.Repeat("FetchedSecret/", 3)[:40],
		SessionToken: "IQoJb3JpZ2luX2VjEFETCH" + strings.Repeat("fetchedT0k3n+", 25)}
	_, roots, _ := awsStandIn(t, fetched)
	echo := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := sigv4.Parse(r)
		if err != nil || s.AccessKeyID != fetched.AccessKeyID {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.Header().Set("X-Echo", fetched.SessionToken)
		io.WriteString(w, "you are "+fetched.AccessKeyID+" with "+fetched.SecretAccessKey+" and "+fetched.SessionToken+"\n")
	}))
	echo.StartTLS()
	t.Cleanup(echo.Close)
	roots.AddCert(echo.Certificate())
	host := echo.Listener.Addr().String()
	fake := sigv4.Credentials{AccessKeyID: awsFake.AccessKeyID, SecretAccessKey: awsFake.SecretAccessKey,
		SessionToken: Fake(testKey, "aws:p:token", strings.Repeat("IQoJb3JpZ2luX2VjEAoaCXVzLWVhc3QtMSJHMEUCIQD+", 9)[:356])}
	src := AWSFunc(func(context.Context) (sigv4.Credentials, error) { return fetched, nil })
	b, _ := startAWSBroker(t, host, roots, AWSCred{Name: "aws:p", Fake: fake, Real: src}, nil)
	client := &http.Client{Transport: proxyTransport(t, b)}
	r, _ := http.NewRequest("GET", "https://"+host+"/", nil)
	clientSign(t, r, fake, "s3", hashHex(""), nil)
	resp, err := client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(out), "you are") {
		t.Fatalf("status %d: %s", resp.StatusCode, out)
	}
	for what, s := range map[string]string{"the body": string(out), "a header": resp.Header.Get("X-Echo")} {
		for _, v := range []string{fetched.AccessKeyID, fetched.SecretAccessKey, fetched.SessionToken} {
			if strings.Contains(s, v) {
				t.Errorf("%s holds a fetched real key", what)
			}
		}
	}
}

// TestAWSWebIdentity: for a web identity profile the broker reads the
// token file itself and calls STS AssumeRoleWithWebIdentity (unsigned:
// the token is the credential), keeps the role's keys until they near
// their expiry, and reads the file again for the next call (a projected
// token is rotated); a refusal is an error without the token in it.
func TestAWSWebIdentity(t *testing.T) {
	dir := t.TempDir()
	tokFile := dir + "/token"
	os.WriteFile(tokFile, []byte("tok-one\n"), 0o600)
	var mu sync.Mutex
	var seen []string
	sts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		q, _ := url.ParseQuery(string(body))
		if r.Header.Get("Authorization") != "" || q.Get("Action") != "AssumeRoleWithWebIdentity" || q.Get("RoleArn") != "arn:aws:iam::1:role/irsa" ||
			q.Get("RoleSessionName") != "me" || q.Get("WebIdentityToken") == "bad" {
			http.Error(w, "<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>", http.StatusForbidden)
			return
		}
		mu.Lock()
		seen = append(seen, q.Get("WebIdentityToken"))
		mu.Unlock()
		fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>%s</AccessKeyId>`+
			`<SecretAccessKey>%s</SecretAccessKey><SessionToken>%s</SessionToken><Expiration>%s</Expiration></Credentials>`+
			`</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`, mintedTemp.AccessKeyID, mintedTemp.SecretAccessKey,
			mintedTemp.SessionToken, time.Now().Add(2*time.Minute).UTC().Format(time.RFC3339))
	}))
	t.Cleanup(sts.Close)
	a := &AWSAssumeRole{TokenFile: tokFile, RoleARN: "arn:aws:iam::1:role/irsa", SessionName: "me", Region: "eu-west-1",
		Endpoint: sts.URL, Client: sts.Client()}
	ctx := context.Background()
	if c, err := a.Credentials(ctx); err != nil || c != mintedTemp {
		t.Fatalf("%v", err)
	}
	os.WriteFile(tokFile, []byte("tok-two"), 0o600)
	if c, err := a.Credentials(ctx); err != nil || c != mintedTemp { // within 5 minutes of expiry: again
		t.Fatalf("%v", err)
	}
	mu.Lock()
	if len(seen) != 2 || seen[0] != "tok-one" || seen[1] != "tok-two" {
		t.Errorf("the stand-in saw tokens %q", seen)
	}
	mu.Unlock()
	os.WriteFile(tokFile, []byte("bad"), 0o600)
	_, err := (&AWSAssumeRole{TokenFile: tokFile, RoleARN: "arn:aws:iam::1:role/irsa", SessionName: "me", Region: "eu-west-1",
		Endpoint: sts.URL, Client: sts.Client()}).Credentials(ctx)
	if err == nil || strings.Contains(err.Error(), "bad") {
		t.Errorf("a refused token: %v", err)
	}
}

// TestAWSStreamNotHeld: an event stream from AWS (Bedrock's) is streamed:
// each event reaches the tree as it comes, only bytes that could start a
// secret key's name held back; a name cuts the stream before it.
func TestAWSStreamNotHeld(t *testing.T) {
	b, err := Start(Config{AWS: []AWSCred{{Name: "aws:default", Fake: awsFake, Real: AWSStatic(awsReal)}}, Secrets: map[string]string{},
		Key: testKey, UID: -1, Dir: t.TempDir(), Env: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	pr, pw := io.Pipe()
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/vnd.amazon.eventstream"}}, ContentLength: -1}
	body, err := b.awsResponse(resp, pr, "bedrock-runtime.us-east-1.amazonaws.com:443", nil)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1024)
	for _, ev := range []string{"\x00\x00\x00\x20event one {\"bytes\":\"eyJ0eXBlIjoi\"}", "event two ends in secret_"} {
		go pw.Write([]byte(ev))
		n, err := body.Read(buf)
		want := ev
		if strings.HasSuffix(ev, "secret_") {
			want = strings.TrimSuffix(ev, "secret_") // could start secret_access_key
		}
		if err != nil || string(buf[:n]) != want {
			t.Fatalf("read %q, %v; want %q at once", buf[:n], err, want)
		}
	}
	go func() { pw.Write([]byte("access_key\": \"x\"")); pw.Close() }()
	if rest, err := io.ReadAll(body); err == nil || len(rest) != 0 {
		t.Errorf("a secret key's name in a stream: %q, %v", rest, err)
	}
}
