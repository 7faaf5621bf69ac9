package sigv4

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// FuzzAuthorization: the parser never panics, and what it accepts formats
// back to a value it parses to the same thing.
func FuzzAuthorization(f *testing.F) {
	for _, v := range suite {
		f.Add(v.auth())
	}
	f.Add("AWS4-ECDSA-P256-SHA256 Credential=A/B")
	f.Add("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/s3/aws4_request,SignedHeaders=host,Signature=" + strings.Repeat("0", 64))
	f.Fuzz(func(t *testing.T, v string) {
		a, err := ParseAuthorization(v)
		if err != nil {
			if ReasonOf(err) == "" {
				t.Fatalf("an error without a reason: %v", err)
			}
			return
		}
		b, err := ParseAuthorization(a.String())
		if err != nil || b.String() != a.String() {
			t.Fatalf("%q formats to %q, which parses to %v, %v", v, a.String(), b, err)
		}
	})
}

// FuzzCanonical: canonicalizing any path and query never panics, gives
// one line each (no newline can be smuggled into the canonical request),
// and a signature over it verifies and re-signs.
func FuzzCanonical(f *testing.F) {
	f.Add("/", "Param2=value2&Param1=value1", "value")
	f.Add("//example//..", "a=%zz&&b", " a  b ")
	f.Add("/a%2Fb/%E1%88%B4", "x=a%2Fb&x=a.b", "\t")
	f.Fuzz(func(t *testing.T, path, query, hv string) {
		u, err := url.Parse("https://example.amazonaws.com" + path)
		if err != nil || strings.ContainsAny(path, "?#") {
			return
		}
		u.RawQuery = query
		for _, m := range []bool{false, true} {
			creq := CanonicalRequest(&http.Request{Method: "GET", URL: u, Host: u.Host, Header: http.Header{}}, []string{"host"}, m, emptyHash)
			if n := strings.Count(creq, "\n"); n != 6 {
				t.Fatalf("canonical request of %q?%q has %d lines", path, query, n+1)
			}
		}
		if q := canonicalQuery(query); canonicalQuery(q) != q {
			t.Fatalf("canonical query of %q is not stable: %q", query, q)
		}
		if strings.ContainsAny(hv, "\r\n\x00") {
			return
		}
		r := &http.Request{Method: "PUT", URL: u, Host: u.Host, Header: http.Header{"X-Amz-Date": {suiteDate}, "X-Other": {hv}}}
		for _, svc := range []string{"s3", "sts"} {
			signClient(t, r, Credentials{AccessKeyID: suiteID, SecretAccessKey: suiteSecret}, svc)
			s, err := Parse(r)
			if err != nil {
				if ReasonOf(err) == ReasonPresigned {
					return
				}
				t.Fatal(err)
			}
			if err := s.Verify(r, suiteSecret, hashOf("body")); err != nil {
				t.Fatalf("%s: %q?%q: %v", svc, path, query, err)
			}
			if err := s.Resign(r, Credentials{AccessKeyID: "AKIAREAL", SecretAccessKey: "x", SessionToken: "t"}, hashOf("body")); err != nil {
				t.Fatal(err)
			}
			r.Header.Del("X-Amz-Security-Token")
		}
	})
}
