package sigv4

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// The AWS SigV4 test suite's credentials, scope and date
// (docs.aws.amazon.com, "Signature Version 4 test suite").
const (
	suiteID     = "AKIDEXAMPLE"
	suiteSecret = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
	suiteDate   = "20150830T123600Z"
	suiteScope  = "AKIDEXAMPLE/20150830/us-east-1/service/aws4_request"
	emptyHash   = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
)

// vector is one case of the suite: a request and its published signature.
type vector struct {
	name, method, target string
	headers              [][2]string
	body                 string
	signed, signature    string
}

var suite = []vector{
	{name: "get-vanilla", method: "GET", target: "/", signed: "host;x-amz-date",
		signature: "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"},
	{name: "get-unreserved", method: "GET", target: "/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz",
		signed: "host;x-amz-date", signature: "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"},
	{name: "get-slashes", method: "GET", target: "//example//", signed: "host;x-amz-date",
		signature: "9a624bd73a37c9a373b5312afbebe7a714a789de108f0bdfe846570885f57e84"},
	{name: "get-vanilla-query-order-key-case", method: "GET", target: "/?Param2=value2&Param1=value1",
		signed: "host;x-amz-date", signature: "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"},
	{name: "get-vanilla-query-order-value", method: "GET", target: "/?Param1=value2&Param1=value1",
		signed: "host;x-amz-date", signature: "5772eed61e12b33fae39ee5e7012498b51d56abc0abb7c60486157bd471c4694"},
	{name: "get-vanilla-utf8-query", method: "GET", target: "/?%E1%88%B4=bar",
		signed: "host;x-amz-date", signature: "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"},
	{name: "get-header-value-order", method: "GET", target: "/",
		headers: [][2]string{{"My-Header1", "value4"}, {"My-Header1", "value1"}, {"My-Header1", "value3"}, {"My-Header1", "value2"}},
		signed:  "host;my-header1;x-amz-date", signature: "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"},
	{name: "get-header-key-duplicate", method: "GET", target: "/",
		headers: [][2]string{{"My-Header1", "value2"}, {"My-Header1", "value2"}, {"My-Header1", "value1"}},
		signed:  "host;my-header1;x-amz-date", signature: "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea"},
	{name: "get-header-value-trim", method: "GET", target: "/",
		headers: [][2]string{{"My-Header1", " value1"}, {"My-Header2", `"a   b   c"`}},
		signed:  "host;my-header1;my-header2;x-amz-date", signature: "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"},
	{name: "post-x-www-form-urlencoded", method: "POST", target: "/",
		headers: [][2]string{{"Content-Type", "application/x-www-form-urlencoded"}}, body: "Param1=value1",
		signed: "content-type;host;x-amz-date", signature: "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"},
}

// request builds v's request as a server receives it, with auth as its
// Authorization.
func (v vector) request(t testing.TB, auth string) *http.Request {
	t.Helper()
	r, err := http.NewRequest(v.method, "https://example.amazonaws.com"+v.target, strings.NewReader(v.body))
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("X-Amz-Date", suiteDate)
	for _, h := range v.headers {
		r.Header.Add(h[0], h[1])
	}
	r.Header.Set("Authorization", auth)
	return r
}

func (v vector) auth() string {
	return "AWS4-HMAC-SHA256 Credential=" + suiteScope + ", SignedHeaders=" + v.signed + ", Signature=" + v.signature
}

func hashOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// TestSuiteVectors: each published request verifies with the suite's
// secret, and signing it again with the same credentials gives the
// published Authorization byte for byte.
func TestSuiteVectors(t *testing.T) {
	for _, v := range suite {
		t.Run(v.name, func(t *testing.T) {
			r := v.request(t, v.auth())
			s, err := Parse(r)
			if err != nil {
				t.Fatal(err)
			}
			if !s.NeedsBody() {
				t.Fatal("the suite declares no payload hash")
			}
			if err := s.Verify(r, suiteSecret, hashOf(v.body)); err != nil {
				t.Fatal(err)
			}
			r.Header.Set("Authorization", "x")
			if err := s.Resign(r, Credentials{AccessKeyID: suiteID, SecretAccessKey: suiteSecret}, hashOf(v.body)); err != nil {
				t.Fatal(err)
			}
			if got := r.Header.Get("Authorization"); got != v.auth() {
				t.Errorf("re-signed:\n got %s\nwant %s", got, v.auth())
			}
		})
	}
}

// TestSuiteCanonicalRequest: the suite's published canonical request of
// post-x-www-form-urlencoded, line by line.
func TestSuiteCanonicalRequest(t *testing.T) {
	v := suite[len(suite)-1]
	r := v.request(t, v.auth())
	got := CanonicalRequest(r, strings.Split(v.signed, ";"), false, hashOf(v.body))
	want := strings.Join([]string{"POST", "/", "", "content-type:application/x-www-form-urlencoded",
		"host:example.amazonaws.com", "x-amz-date:20150830T123600Z", "", "content-type;host;x-amz-date",
		"9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e"}, "\n")
	if got != want {
		t.Errorf("canonical request:\n%s\nwant:\n%s", got, want)
	}
}

// TestVerifyRefuses: a signature made with another secret, or a request
// changed after signing, does not verify.
func TestVerifyRefuses(t *testing.T) {
	v := suite[3]
	cases := []struct {
		name   string
		change func(r *http.Request)
		secret string
	}{
		{"another secret", func(*http.Request) {}, strings.Repeat("x", 40)},
		{"query changed", func(r *http.Request) { r.URL.RawQuery = "Param2=value2&Param1=value3" }, suiteSecret},
		{"path changed", func(r *http.Request) { r.URL.Path = "/other" }, suiteSecret},
		{"method changed", func(r *http.Request) { r.Method = "DELETE" }, suiteSecret},
		{"host changed", func(r *http.Request) { r.Host = "evil.example" }, suiteSecret},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := v.request(t, v.auth())
			s, err := Parse(r)
			if err != nil {
				t.Fatal(err)
			}
			c.change(r)
			if err := s.Verify(r, c.secret, emptyHash); ReasonOf(err) != ReasonSignature {
				t.Errorf("got %v, want %s", err, ReasonSignature)
			}
		})
	}
}

// TestResignRoundTrip: a request signed with a fake is re-signed with
// other credentials, and verifies with their secret; the session token
// is set and signed, or removed, as the new credentials say.
func TestResignRoundTrip(t *testing.T) {
	fake := Credentials{AccessKeyID: "AKIAFAKEFAKEFAKEFAKE", SecretAccessKey: strings.Repeat("f", 40)}
	fakeTok := Credentials{AccessKeyID: "ASIAFAKEFAKEFAKEFAKE", SecretAccessKey: strings.Repeat("f", 40), SessionToken: "FAKETOKEN"}
	real := Credentials{AccessKeyID: "AKIAREALREALREALREAL", SecretAccessKey: strings.Repeat("r", 40)}
	realTok := Credentials{AccessKeyID: "ASIAREALREALREALREAL", SecretAccessKey: strings.Repeat("r", 40), SessionToken: "REALTOKEN"}
	cases := []struct {
		name       string
		from, to   Credentials
		service    string
		payload    string
		wantSigned string
	}{
		{"long-term to long-term", fake, real, "sts", "", "host;x-amz-date"},
		{"long-term to session", fake, realTok, "sts", "", "host;x-amz-date;x-amz-security-token"},
		{"session to session", fakeTok, realTok, "s3", UnsignedPayload, "host;x-amz-content-sha256;x-amz-date;x-amz-security-token"},
		{"session to long-term", fakeTok, real, "s3", StreamingUnsignedTrailer, "host;x-amz-content-sha256;x-amz-date"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, _ := http.NewRequest("PUT", "https://bucket.s3.amazonaws.com/a%20key/x%2Fy?uploads=&partNumber=2", strings.NewReader("body"))
			r.Header.Set("X-Amz-Date", "20260101T000000Z")
			if c.payload != "" {
				r.Header.Set("X-Amz-Content-Sha256", c.payload)
			}
			signClient(t, r, c.from, c.service)
			s, err := Parse(r)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Verify(r, c.from.SecretAccessKey, hashOf("body")); err != nil {
				t.Fatal(err)
			}
			if err := s.Resign(r, c.to, hashOf("body")); err != nil {
				t.Fatal(err)
			}
			if got := r.Header.Get("X-Amz-Security-Token"); got != c.to.SessionToken {
				t.Errorf("token %q, want %q", got, c.to.SessionToken)
			}
			s2, err := Parse(r)
			if err != nil {
				t.Fatal(err)
			}
			if s2.AccessKeyID != c.to.AccessKeyID || strings.Join(s2.SignedHeaders, ";") != c.wantSigned {
				t.Errorf("re-signed as %s with %v", s2.AccessKeyID, s2.SignedHeaders)
			}
			if err := s2.Verify(r, c.to.SecretAccessKey, hashOf("body")); err != nil {
				t.Errorf("the re-signed request does not verify with the new secret: %v", err)
			}
			if err := s2.Verify(r, c.from.SecretAccessKey, hashOf("body")); err == nil {
				t.Error("the re-signed request still verifies with the old secret")
			}
		})
	}
}

// signClient signs r as a client would, with the headers it has (all of
// them, sorted) and the path mode of its service.
func signClient(t testing.TB, r *http.Request, c Credentials, service string) {
	t.Helper()
	if c.SessionToken != "" {
		r.Header.Set("X-Amz-Security-Token", c.SessionToken)
	}
	signed := []string{"host"}
	for k := range r.Header {
		if k != "Authorization" {
			signed = append(signed, strings.ToLower(k))
		}
	}
	sortStrings(signed)
	date := r.Header.Get("X-Amz-Date")
	s := &Signed{Auth: Auth{AccessKeyID: c.AccessKeyID, Date: date[:8], Region: "us-east-1", Service: service, SignedHeaders: signed}, AmzDate: date}
	payload := r.Header.Get("X-Amz-Content-Sha256")
	if payload == "" {
		payload = hashOf("body")
	}
	mode := pathGeneric
	if isS3(service) {
		mode = pathAsSent
	}
	s.Signature = hex.EncodeToString(s.sign(SigningKey(c.SecretAccessKey, s.Date, s.Region, s.Service), r, signed, mode, payload))
	r.Header.Set("Authorization", s.Auth.String())
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// TestParseRefuses: what cannot be re-signed is refused with its reason.
func TestParseRefuses(t *testing.T) {
	good := "AWS4-HMAC-SHA256 Credential=" + suiteScope + ", SignedHeaders=host;x-amz-date, Signature=" + strings.Repeat("a", 64)
	cases := []struct {
		name   string
		target string
		auth   string
		hdr    [][2]string
		want   Reason
	}{
		{"presigned", "/?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=x&X-Amz-Signature=" + strings.Repeat("a", 64), "", nil, ReasonPresigned},
		{"presigned, lower case", "/?x-amz-signature=ab", good, nil, ReasonPresigned},
		{"sigv4a", "/", "AWS4-ECDSA-P256-SHA256 Credential=AKIDEXAMPLE/20150830/s3/aws4_request, SignedHeaders=host, Signature=ab", nil, ReasonSigV4A},
		{"signed chunks", "/", good, [][2]string{{"X-Amz-Content-Sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD"}}, ReasonChunked},
		{"signed chunks, trailer", "/", good, [][2]string{{"X-Amz-Content-Sha256", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"}}, ReasonChunked},
		{"signed chunks, ecdsa", "/", good, [][2]string{{"X-Amz-Content-Sha256", "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD"}}, ReasonChunked},
		{"bad payload hash", "/", good, [][2]string{{"X-Amz-Content-Sha256", "nothex"}}, ReasonMalformed},
		{"two payload hashes", "/", good, [][2]string{{"X-Amz-Content-Sha256", UnsignedPayload}, {"X-Amz-Content-Sha256", UnsignedPayload}}, ReasonMalformed},
		{"other algorithm", "/", "AWS AKIDEXAMPLE:abc", nil, ReasonMalformed},
		{"host unsigned", "/", strings.Replace(good, "host;x-amz-date", "x-amz-date", 1), nil, ReasonMalformed},
		{"headers unsorted", "/", strings.Replace(good, "host;x-amz-date", "x-amz-date;host", 1), nil, ReasonMalformed},
		{"short signature", "/", strings.Replace(good, strings.Repeat("a", 64), "ab", 1), nil, ReasonMalformed},
		{"scope without aws4_request", "/", strings.Replace(good, "aws4_request", "aws5_request", 1), nil, ReasonMalformed},
		{"repeated parameter", "/", good + ", Signature=" + strings.Repeat("a", 64), nil, ReasonMalformed},
		{"unknown parameter", "/", good + ", Foo=bar", nil, ReasonMalformed},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, _ := http.NewRequest("GET", "https://example.amazonaws.com"+c.target, nil)
			r.Header.Set("X-Amz-Date", suiteDate)
			if c.auth != "" {
				r.Header.Set("Authorization", c.auth)
			}
			for _, h := range c.hdr {
				r.Header.Add(h[0], h[1])
			}
			_, err := Parse(r)
			if ReasonOf(err) != c.want {
				t.Errorf("got %v, want %s", err, c.want)
			}
		})
	}
	t.Run("date of another day", func(t *testing.T) {
		r, _ := http.NewRequest("GET", "https://example.amazonaws.com/", nil)
		r.Header.Set("X-Amz-Date", "20150831T000000Z")
		r.Header.Set("Authorization", good)
		if _, err := Parse(r); ReasonOf(err) != ReasonMalformed {
			t.Errorf("got %v", err)
		}
	})
	t.Run("unsigned request", func(t *testing.T) {
		r, _ := http.NewRequest("GET", "https://example.amazonaws.com/", nil)
		if s, err := Parse(r); s != nil || err != nil {
			t.Errorf("got %v, %v", s, err)
		}
	})
}

// TestResignNeedsVerify: re-signing a request that was not verified is
// an error, so no code path signs with the real key what the fake did not
// sign.
func TestResignNeedsVerify(t *testing.T) {
	v := suite[0]
	r := v.request(t, v.auth())
	s, err := Parse(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Resign(r, Credentials{AccessKeyID: suiteID, SecretAccessKey: suiteSecret}, emptyHash); err == nil {
		t.Error("re-signed without a verify")
	}
}

func TestCanonicalQuery(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Param2=value2&Param1=value1", "Param1=value1&Param2=value2"},
		{"a=10&a=9", "a=10&a=9"},
		{"x=a.b&x=a%2Fb", "x=a%2Fb&x=a.b"},
		{"q=a+b", "q=a%2Bb"},
		{"q=a%20b", "q=a%20b"},
		{"b&a=1", "a=1&b="},
		{"a=1=2", "a=1%3D2"},
		{"uploads", "uploads="},
		{"a=%zz", "a=%25zz"},
	}
	for _, c := range cases {
		if got := canonicalQuery(c.in); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

func TestNormalizePath(t *testing.T) {
	cases := []struct{ in, want string }{
		{"/", "/"}, {"//example//", "/example/"}, {"/./", "/"}, {"/example/..", "/"},
		{"/example1/example2/../..", "/"}, {"/./example", "/example"}, {"/a/..b/.c", "/a/..b/.c"},
	}
	for _, c := range cases {
		if got := normalizePath(c.in); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

// BenchmarkVerifyResign is what the broker adds to a request: parse,
// verify with one secret, re-sign with another.
func BenchmarkVerifyResign(b *testing.B) {
	v := suite[3]
	real := Credentials{AccessKeyID: "AKIAREALREALREALREAL", SecretAccessKey: strings.Repeat("r", 40), SessionToken: strings.Repeat("t", 400)}
	for b.Loop() {
		r := v.request(b, v.auth())
		s, err := Parse(r)
		if err != nil {
			b.Fatal(err)
		}
		if err := s.Verify(r, suiteSecret, emptyHash); err != nil {
			b.Fatal(err)
		}
		if err := s.Resign(r, real, emptyHash); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSign: a request signed by Sign parses and verifies with the secret
// (and not another), its session token signed.
func TestSign(t *testing.T) {
	body := []byte("Action=AssumeRole&Version=2011-06-15")
	r, _ := http.NewRequest("POST", "https://sts.us-east-1.amazonaws.com/", bytes.NewReader(body))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	c := Credentials{AccessKeyID: "ASIAEXAMPLEEXAMPLE12", SecretAccessKey: "secret/secret/secret/secret/secret/secre", SessionToken: "tok"}
	if err := Sign(r, c, "us-east-1", "sts", body, time.Now()); err != nil {
		t.Fatal(err)
	}
	s, err := Parse(r)
	if err != nil || s.AccessKeyID != c.AccessKeyID || !slices.Contains(s.SignedHeaders, "x-amz-security-token") || !slices.Contains(s.SignedHeaders, "content-type") {
		t.Fatalf("%+v %v", s, err)
	}
	if err := s.Verify(r, c.SecretAccessKey, ""); err != nil {
		t.Errorf("verify: %v", err)
	}
	if err := s.Verify(r, "another", ""); err == nil {
		t.Error("verifies with another secret")
	}
	if err := Sign(r, Credentials{AccessKeyID: "x"}, "us-east-1", "sts", body, time.Now()); err == nil {
		t.Error("no secret: no error")
	}
}
