// Package sigv4 checks an AWS Signature Version 4 request's signature
// with one secret and signs the same request again with other
// credentials, changing nothing else the client signed. The broker uses
// it to give an agent's tree fake AWS keys (docs/broker.md, "AWS"): a
// request the tree signed with the fake secret is verified, then re-signed
// with the user's real keys on its way to AWS.
//
// # Guarantees
//
//   - [Parse] accepts only a header-signed request: an Authorization of
//     AWS4-HMAC-SHA256 with a well-formed credential scope, signed header
//     list and signature, and an X-Amz-Date of the scope's day. What cannot
//     be re-signed soundly is an [*Error] with its [Reason]: a presigned
//     URL ([ReasonPresigned]: the signature is in the query, and a URL
//     handed to someone else would carry the real signature), a signed
//     aws-chunked stream ([ReasonChunked]: every chunk carries a signature
//     chained from the fake's), SigV4A ([ReasonSigV4A]), anything else
//     malformed ([ReasonMalformed]).
//   - [Signed.Verify] recomputes the client's own canonical request: its
//     signed header list exactly as it sent it, the payload hash it
//     declared (a hex SHA-256, UNSIGNED-PAYLOAD,
//     STREAMING-UNSIGNED-PAYLOAD-TRAILER) or the body's hash where it
//     declared none, and its path canonicalized the way its service
//     expects (S3's as sent; every other's normalized and encoded again),
//     the other way tried second. A signature that matches neither is
//     [ReasonSignature]. The comparison takes constant time.
//   - [Signed.Resign] signs that same canonical request (the same date,
//     scope, headers, path and payload hash) with other credentials: the
//     access key id in the scope, X-Amz-Security-Token set to the new
//     session token (signed, added to the signed headers where the client
//     had none) or removed with the new credentials have none. Nothing
//     else of the request changes, so the service sees the request the
//     client made.
//
// # Why not the SDK's signer
//
// aws-sdk-go-v2's aws/signer/v4 (v1.48.0 on the module proxy) signs a
// request the way the SDK would have: it chooses the signed headers itself
// (every header but its own ignore list) and offers no way to pin the
// client's list. Verifying another client's signature needs exactly that
// list (botocore signs Content-Type and Content-Length, the CLI's S3
// transfers sign Content-MD5 and X-Amz-Checksum-*; any difference is a
// different signature), and re-signing must not add or drop a header the
// service then reads differently. The algorithm is short and fully
// specified; this package writes it out (about 300 lines, no dependency),
// and its tests check it against AWS's published test-suite vectors.
package sigv4

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The payload hashes a client may declare in X-Amz-Content-Sha256 besides
// a hex SHA-256.
const (
	UnsignedPayload          = "UNSIGNED-PAYLOAD"
	StreamingUnsignedTrailer = "STREAMING-UNSIGNED-PAYLOAD-TRAILER"
)

const algorithm = "AWS4-HMAC-SHA256"

// Credentials are one set of AWS keys.
type Credentials struct {
	AccessKeyID, SecretAccessKey string
	// SessionToken is the temporary credentials' token; "" for long-term
	// keys.
	SessionToken string
}

// Reason names why a request cannot be re-signed. The broker audits it as
// the event's place.
type Reason string

// The reasons of an [*Error].
const (
	ReasonPresigned Reason = "sigv4-presigned"
	ReasonChunked   Reason = "sigv4-chunked"
	ReasonSigV4A    Reason = "sigv4a"
	ReasonMalformed Reason = "sigv4-malformed"
	ReasonSignature Reason = "sigv4-signature"
)

// Error is a request this package refuses, with its reason.
type Error struct {
	Reason Reason
	// Detail says what was wrong, never a value of a key or signature.
	Detail string
}

func (e *Error) Error() string { return "sigv4: " + string(e.Reason) + ": " + e.Detail }

func refuse(r Reason, format string, args ...any) *Error {
	return &Error{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// ReasonOf returns err's reason, or "" when err is not an [*Error].
func ReasonOf(err error) Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// Auth is a parsed SigV4 Authorization header.
type Auth struct {
	AccessKeyID string
	// Date (YYYYMMDD), Region and Service are the credential scope's.
	Date, Region, Service string
	// SignedHeaders are the header names the client signed, lower case,
	// in its order.
	SignedHeaders []string
	// Signature is the lower-case hex HMAC-SHA256.
	Signature string
}

// ParseAuthorization parses an AWS4-HMAC-SHA256 Authorization value:
// "AWS4-HMAC-SHA256 Credential=ID/DATE/REGION/SERVICE/aws4_request,
// SignedHeaders=a;b, Signature=HEX", the three parts once each, in any
// order, separated by commas and optional spaces.
func ParseAuthorization(v string) (Auth, error) {
	var a Auth
	alg, rest, ok := strings.Cut(v, " ")
	if !ok {
		return a, refuse(ReasonMalformed, "authorization has no parameters")
	}
	switch alg {
	case algorithm:
	case "AWS4-ECDSA-P256-SHA256":
		return a, refuse(ReasonSigV4A, "SigV4A (ECDSA) signatures are not re-signed")
	default:
		return a, refuse(ReasonMalformed, "authorization algorithm is not %s", algorithm)
	}
	var cred, signed, sig string
	seen := map[string]bool{}
	for _, part := range strings.Split(rest, ",") {
		part = strings.Trim(part, " ")
		k, val, ok := strings.Cut(part, "=")
		if !ok || val == "" || seen[k] {
			return a, refuse(ReasonMalformed, "authorization parameter is empty, repeated or not key=value")
		}
		seen[k] = true
		switch k {
		case "Credential":
			cred = val
		case "SignedHeaders":
			signed = val
		case "Signature":
			sig = val
		default:
			return a, refuse(ReasonMalformed, "authorization parameter %q is unknown", k)
		}
	}
	if cred == "" || signed == "" || sig == "" {
		return a, refuse(ReasonMalformed, "authorization lacks Credential, SignedHeaders or Signature")
	}
	f := strings.Split(cred, "/")
	if len(f) != 5 || f[4] != "aws4_request" || f[0] == "" || !isDate(f[1]) || !scopePart(f[2]) || !scopePart(f[3]) || !keyID(f[0]) {
		return a, refuse(ReasonMalformed, "credential scope is not ID/YYYYMMDD/region/service/aws4_request")
	}
	a.AccessKeyID, a.Date, a.Region, a.Service = f[0], f[1], f[2], f[3]
	a.SignedHeaders = strings.Split(signed, ";")
	for i, h := range a.SignedHeaders {
		if !headerName(h) || i > 0 && a.SignedHeaders[i-1] >= h {
			return a, refuse(ReasonMalformed, "signed headers are not lower-case names in strict order")
		}
	}
	if !slices.Contains(a.SignedHeaders, "host") {
		return a, refuse(ReasonMalformed, "host is not signed")
	}
	if len(sig) != 64 || !isLowerHex(sig) {
		return a, refuse(ReasonMalformed, "signature is not 64 lower-case hex digits")
	}
	a.Signature = sig
	return a, nil
}

// String formats a as an Authorization value.
func (a Auth) String() string {
	return algorithm + " Credential=" + a.AccessKeyID + "/" + a.scope() +
		", SignedHeaders=" + strings.Join(a.SignedHeaders, ";") + ", Signature=" + a.Signature
}

func (a Auth) scope() string { return a.Date + "/" + a.Region + "/" + a.Service + "/aws4_request" }

// Signed is a header-signed request, parsed.
type Signed struct {
	Auth
	// AmzDate is X-Amz-Date (YYYYMMDDTHHMMSSZ).
	AmzDate string
	// PayloadHash is X-Amz-Content-Sha256; "" when the client sent none
	// (the body's hash is then signed: see [Signed.NeedsBody]).
	PayloadHash string
	// pathMode is the canonical path the signature verified with.
	pathMode pathMode
}

// NeedsBody reports whether verifying needs the hash of the body: the
// client declared no payload hash.
func (s *Signed) NeedsBody() bool { return s.PayloadHash == "" }

// Presigned reports whether r carries a query signature (a presigned
// URL).
func Presigned(r *http.Request) bool {
	q := r.URL.RawQuery
	if q == "" {
		return false
	}
	for _, p := range strings.Split(q, "&") {
		name, _, _ := strings.Cut(p, "=")
		switch strings.ToLower(name) {
		case "x-amz-signature", "x-amz-credential", "x-amz-algorithm":
			return true
		}
	}
	return false
}

// Parse reads r's SigV4 signature. A request without an Authorization
// header and without a query signature returns nil, nil: it is not signed.
func Parse(r *http.Request) (*Signed, error) {
	if Presigned(r) {
		return nil, refuse(ReasonPresigned, "the signature is in the query (a presigned URL)")
	}
	vs := r.Header.Values("Authorization")
	if len(vs) == 0 {
		return nil, nil
	}
	if len(vs) > 1 {
		return nil, refuse(ReasonMalformed, "more than one Authorization header")
	}
	a, err := ParseAuthorization(vs[0])
	if err != nil {
		return nil, err
	}
	s := &Signed{Auth: a}
	dates := r.Header.Values("X-Amz-Date")
	if len(dates) != 1 || !isAmzDate(dates[0]) || dates[0][:8] != a.Date {
		return nil, refuse(ReasonMalformed, "X-Amz-Date is missing, repeated, malformed or not of the scope's day")
	}
	s.AmzDate = dates[0]
	if hs := r.Header.Values("X-Amz-Content-Sha256"); len(hs) > 0 {
		if len(hs) > 1 {
			return nil, refuse(ReasonMalformed, "more than one X-Amz-Content-Sha256")
		}
		h := hs[0]
		switch {
		case h == UnsignedPayload, h == StreamingUnsignedTrailer:
		case strings.HasPrefix(h, "STREAMING-"):
			return nil, refuse(ReasonChunked, "a signed aws-chunked stream (%s) is not re-signed", h)
		case len(h) == 64 && isLowerHex(h):
		default:
			return nil, refuse(ReasonMalformed, "X-Amz-Content-Sha256 is not a hash or a known payload kind")
		}
		s.PayloadHash = h
	}
	if len(r.Header.Values("X-Amz-Security-Token")) > 1 {
		return nil, refuse(ReasonMalformed, "more than one X-Amz-Security-Token")
	}
	return s, nil
}

// Verify checks s's signature on r with secret. bodyHash is the hex
// SHA-256 of r's body when [Signed.NeedsBody], else ignored.
func (s *Signed) Verify(r *http.Request, secret, bodyHash string) error {
	payload := s.PayloadHash
	if payload == "" {
		payload = bodyHash
	}
	want, err := hex.DecodeString(s.Signature)
	if err != nil {
		return refuse(ReasonMalformed, "signature is not hex")
	}
	key := SigningKey(secret, s.Date, s.Region, s.Service)
	first, second := pathGeneric, pathAsSent
	if isS3(s.Service) {
		first, second = pathAsSent, pathGeneric
	}
	for _, m := range []pathMode{first, second} {
		got := s.sign(key, r, s.SignedHeaders, m, payload)
		if hmac.Equal(got, want) {
			s.pathMode = m
			return nil
		}
	}
	return refuse(ReasonSignature, "the signature does not verify with this key")
}

// Resign signs r again with c, after a successful [Signed.Verify]: the
// access key id, the session token (X-Amz-Security-Token) and the
// signature change; the rest of the signed request stays as the client
// signed it.
func (s *Signed) Resign(r *http.Request, c Credentials, bodyHash string) error {
	if s.pathMode == 0 {
		return errors.New("sigv4: re-signing a request that was not verified")
	}
	if !keyID(c.AccessKeyID) || c.SecretAccessKey == "" {
		return errors.New("sigv4: the credentials have no access key id or secret")
	}
	payload := s.PayloadHash
	if payload == "" {
		payload = bodyHash
	}
	signed := slices.Clone(s.SignedHeaders)
	const tok = "x-amz-security-token"
	if c.SessionToken != "" {
		r.Header.Set("X-Amz-Security-Token", c.SessionToken)
		if i, found := slices.BinarySearch(signed, tok); !found {
			signed = slices.Insert(signed, i, tok)
		}
	} else {
		r.Header.Del("X-Amz-Security-Token")
		signed = slices.DeleteFunc(signed, func(h string) bool { return h == tok })
	}
	a := s.Auth
	a.AccessKeyID, a.SignedHeaders = c.AccessKeyID, signed
	a.Signature = hex.EncodeToString(s.sign(SigningKey(c.SecretAccessKey, a.Date, a.Region, a.Service), r, signed, s.pathMode, payload))
	r.Header.Set("Authorization", a.String())
	return nil
}

// sign returns the signature of r's canonical request under key.
func (s *Signed) sign(key []byte, r *http.Request, signed []string, m pathMode, payload string) []byte {
	creq := CanonicalRequest(r, signed, m == pathAsSent, payload)
	sum := sha256.Sum256([]byte(creq))
	sts := algorithm + "\n" + s.AmzDate + "\n" + s.scope() + "\n" + hex.EncodeToString(sum[:])
	return hmacSHA256(key, sts)
}

// pathMode is how the canonical URI is made from the path as sent.
type pathMode int

const (
	// pathGeneric normalizes the path and URI-encodes it again (every
	// service but S3).
	pathGeneric pathMode = iota + 1
	// pathAsSent takes the path as sent (S3).
	pathAsSent
)

func isS3(service string) bool {
	return service == "s3" || strings.HasPrefix(service, "s3-") || service == "s3express"
}

// SigningKey derives the SigV4 signing key of a secret for a day, region
// and service.
func SigningKey(secret, date, region, service string) []byte {
	k := hmacSHA256([]byte("AWS4"+secret), date)
	k = hmacSHA256(k, region)
	k = hmacSHA256(k, service)
	return hmacSHA256(k, "aws4_request")
}

func hmacSHA256(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

// CanonicalRequest returns r's canonical request over the signed headers,
// with the path as sent (asSent, S3) or normalized and encoded again, and
// the given payload hash.
func CanonicalRequest(r *http.Request, signed []string, asSent bool, payload string) string {
	var b strings.Builder
	b.WriteString(r.Method)
	b.WriteByte('\n')
	path := r.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	if asSent {
		b.WriteString(path)
	} else {
		b.WriteString(encode(normalizePath(path), false))
	}
	b.WriteByte('\n')
	b.WriteString(canonicalQuery(r.URL.RawQuery))
	b.WriteByte('\n')
	for _, h := range signed {
		b.WriteString(h)
		b.WriteByte(':')
		b.WriteString(headerValue(r, h))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(strings.Join(signed, ";"))
	b.WriteByte('\n')
	b.WriteString(payload)
	return b.String()
}

// headerValue is a signed header's canonical value: its values in order,
// each trimmed with inner runs of spaces collapsed, joined by commas.
// Host, Content-Length and Transfer-Encoding, which net/http keeps out of
// the header map, come from the request's fields.
func headerValue(r *http.Request, name string) string {
	var vs []string
	switch name {
	case "host":
		vs = []string{r.Host}
		if r.Host == "" {
			vs = []string{r.URL.Host}
		}
	case "content-length":
		if vs = r.Header.Values("Content-Length"); len(vs) == 0 && r.ContentLength >= 0 {
			vs = []string{strconv.FormatInt(r.ContentLength, 10)}
		}
	case "transfer-encoding":
		if vs = r.Header.Values("Transfer-Encoding"); len(vs) == 0 {
			vs = r.TransferEncoding
		}
	default:
		vs = r.Header.Values(name)
	}
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = strings.Join(strings.Fields(v), " ")
	}
	return strings.Join(out, ",")
}

// normalizePath removes empty, "." and ".." segments from an escaped path,
// keeping a final slash.
func normalizePath(p string) string {
	var segs []string
	for _, s := range strings.Split(p, "/") {
		switch s {
		case "", ".":
		case "..":
			if len(segs) > 0 {
				segs = segs[:len(segs)-1]
			}
		default:
			segs = append(segs, s)
		}
	}
	out := "/" + strings.Join(segs, "/")
	if strings.HasSuffix(p, "/") && len(segs) > 0 {
		out += "/"
	}
	return out
}

// canonicalQuery returns the canonical form of a raw query: each name and
// value percent-decoded, encoded again with AWS's rules, sorted by name
// then value. A '+' is a plus, not a space.
func canonicalQuery(raw string) string {
	if raw == "" {
		return ""
	}
	type kv struct{ k, v string }
	var ps []kv
	for _, p := range strings.Split(raw, "&") {
		if p == "" {
			continue
		}
		k, v, _ := strings.Cut(p, "=")
		ps = append(ps, kv{encode(unescape(k), true), encode(unescape(v), true)})
	}
	slices.SortFunc(ps, func(a, b kv) int {
		if c := strings.Compare(a.k, b.k); c != 0 {
			return c
		}
		return strings.Compare(a.v, b.v)
	})
	var b strings.Builder
	for i, p := range ps {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(p.k)
		b.WriteByte('=')
		b.WriteString(p.v)
	}
	return b.String()
}

// unescape decodes %XX escapes; a malformed escape stays as it is.
func unescape(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHexDigit(s[i+1]) && isHexDigit(s[i+2]) {
			b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
			i += 2
			continue
		}
		b = append(b, s[i])
	}
	return string(b)
}

// encode is AWS's URI encoding: unreserved bytes kept, '/' kept unless
// slash is true, every other byte %XX in upper-case hex.
func encode(s string, slash bool) string {
	const hexUp = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) || c == '/' && !slash {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexUp[c>>4])
		b.WriteByte(hexUp[c&15])
	}
	return b.String()
}

func unreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == '~'
}

func isHexDigit(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}

func isLowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

func isDate(s string) bool { return len(s) == 8 && isDigits(s) }

func isAmzDate(s string) bool {
	return len(s) == 16 && isDigits(s[:8]) && s[8] == 'T' && isDigits(s[9:15]) && s[15] == 'Z'
}

// scopePart is a region or service name: lower-case letters, digits and
// dashes.
func scopePart(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-') {
			return false
		}
	}
	return s != "" && len(s) <= 64
}

// keyID is an access key id: upper-case letters and digits (AWS's are 16
// to 128 characters; the test suite's AKIDEXAMPLE is shorter).
func keyID(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return len(s) >= 4 && len(s) <= 128
}

// headerName is a lower-case HTTP header name.
func headerName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return s != ""
}

// Sign signs a request of the caller's own (the broker's AssumeRole)
// with c, in the header form: X-Amz-Date (now), X-Amz-Content-Sha256 (the
// body's hash), X-Amz-Security-Token (c's token, if any) and the host,
// and Content-Type when set, are signed.
func Sign(r *http.Request, c Credentials, region, service string, body []byte, now time.Time) error {
	if !keyID(c.AccessKeyID) || c.SecretAccessKey == "" {
		return errors.New("sigv4: the credentials have no access key id or secret")
	}
	sum := sha256.Sum256(body)
	payload := hex.EncodeToString(sum[:])
	amz := now.UTC().Format("20060102T150405Z")
	r.Header.Set("X-Amz-Date", amz)
	r.Header.Set("X-Amz-Content-Sha256", payload)
	signed := []string{"host", "x-amz-content-sha256", "x-amz-date"}
	if c.SessionToken != "" {
		r.Header.Set("X-Amz-Security-Token", c.SessionToken)
		signed = append(signed, "x-amz-security-token")
	}
	if r.Header.Get("Content-Type") != "" {
		signed = append(signed, "content-type")
	}
	slices.Sort(signed)
	s := &Signed{Auth: Auth{AccessKeyID: c.AccessKeyID, Date: amz[:8], Region: region, Service: service, SignedHeaders: signed},
		AmzDate: amz, PayloadHash: payload, pathMode: pathGeneric}
	s.Signature = hex.EncodeToString(s.sign(SigningKey(c.SecretAccessKey, s.Date, region, service), r, signed, pathGeneric, payload))
	r.Header.Set("Authorization", s.Auth.String())
	return nil
}
