package broker

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
)

// A token endpoint's body (docs/broker.md, "Token refresh"): a binding
// whose In names a body field ("form:refresh_token", "json:refresh_token")
// on its Paths has that field of a request's body swapped, the body read
// whole (maxBody at most), and the endpoint's JSON token response renews
// the tokens its Renews names: the broker keeps the new real values, the
// tree gets new fakes in their place, and Config.OnRefresh is told.

// maxBody is the largest request body the broker reads to swap a body
// field; a larger one to a token endpoint is refused (413).
const maxBody = 64 << 10

// maxTokenResponse caps a token endpoint's response the broker reads to
// renew tokens; past it the response is refused (502).
const maxTokenResponse = 1 << 20

// isBodyPlace reports whether place is a body field ("form:NAME",
// "json:NAME").
func isBodyPlace(place string) bool {
	kind, name, ok := strings.Cut(place, ":")
	return ok && name != "" && (kind == "form" || kind == "json")
}

// inBody reports whether s's binding names a body field.
func (s *brokered) inBody() bool {
	for _, in := range s.in {
		if isBodyPlace(in) {
			return true
		}
	}
	return false
}

// onPath reports whether r's path is one of s's Paths.
func (s *brokered) onPath(r *http.Request) bool {
	for _, p := range s.Paths {
		if strings.HasPrefix(r.URL.Path, p) {
			return true
		}
	}
	return false
}

// refresh is a request to a token endpoint whose body field was swapped:
// its response renews the tokens of secret.
type refresh struct{ secret *brokered }

// swapBody swaps, in a request to a token endpoint (a host and path a
// binding with a body place names), the fake in that body field for the
// real value. Any other request's body is left to stream. It returns a
// status to refuse with, or the refresh whose response renews tokens.
func (b *Broker) swapBody(r *http.Request, secrets []*brokered, target string, base *brokered, secure bool) (int, string, *refresh) {
	var cands []*brokered
	for _, s := range secrets {
		if s.inBody() && (base != nil && s.Name == base.Name || s.boundTo(target)) && s.onPath(r) {
			cands = append(cands, s)
		}
	}
	if len(cands) == 0 {
		return 0, "", nil
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return 0, "", nil // left to the body scrubber: a fake in it is refused
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	r.Body.Close()
	if err != nil {
		return http.StatusBadRequest, "reading the request body: " + err.Error(), nil
	}
	if len(body) > maxBody {
		b.audit(Event{Kind: "denied", Secret: cands[0].Name, Host: target, Place: "body-size"})
		return http.StatusRequestEntityTooLarge, "a token endpoint's request body is larger than " + strconv.Itoa(maxBody) + " bytes", nil
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	kind := ""
	switch {
	case mt == "application/x-www-form-urlencoded":
		kind = "form"
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		kind = "json"
	}
	var ref *refresh
	if kind != "" {
		for _, s := range cands {
			for _, in := range s.in {
				k, field, _ := strings.Cut(in, ":")
				if k != kind {
					continue
				}
				var nb []byte
				var code int
				var msg string
				nb, code, msg, ref = b.swapField(r, body, kind, field, secrets, s, target, secure, ref)
				if code != 0 {
					return code, msg, nil
				}
				body = nb
			}
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	r.Header.Del("Content-Length")
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return 0, "", ref
}

// swapField swaps the fake of any generation of s's secret found as the
// whole value of field in body for its real value.
func (b *Broker) swapField(r *http.Request, body []byte, kind, field string, secrets []*brokered, s *brokered, target string, secure bool, ref *refresh) ([]byte, int, string, *refresh) {
	gen := func(v string) *brokered {
		for _, g := range secrets {
			if g.Name == s.Name && g.fake == v {
				return g
			}
		}
		return nil
	}
	place := kind + ":" + field
	if kind == "form" {
		parts := strings.Split(string(body), "&")
		for i, p := range parts {
			k, v, _ := strings.Cut(p, "=")
			if uk, err := url.QueryUnescape(k); err != nil || uk != field {
				continue
			}
			uv, err := url.QueryUnescape(v)
			if err != nil {
				continue
			}
			g := gen(uv)
			if g == nil {
				continue
			}
			swap, code, msg := b.decide(g, r, target, place, true, secure)
			if code != 0 {
				return nil, code, msg, nil
			}
			if swap {
				parts[i] = k + "=" + url.QueryEscape(b.current(g))
				ref = &refresh{secret: g}
			}
		}
		return []byte(strings.Join(parts, "&")), 0, "", ref
	}
	fields, ok := jsonFields(body)
	if !ok {
		return body, 0, "", ref
	}
	var out []byte
	last := 0
	for _, f := range fields {
		if f.key != field || !f.isString {
			continue
		}
		g := gen(f.value)
		if g == nil {
			continue
		}
		swap, code, msg := b.decide(g, r, target, place, true, secure)
		if code != 0 {
			return nil, code, msg, nil
		}
		if swap {
			enc, _ := json.Marshal(b.current(g))
			out = append(append(out, body[last:f.start]...), enc...)
			last = f.end
			ref = &refresh{secret: g}
		}
	}
	if out == nil {
		return body, 0, "", ref
	}
	return append(out, body[last:]...), 0, "", ref
}

// jsonField is one member of a JSON object: its key, and where its value
// lies in the text.
type jsonField struct {
	key        string
	start, end int
	isString   bool
	value      string
}

// jsonFields returns the members of the JSON object text holds, in order
// (duplicates included); false when text is not one object.
func jsonFields(text []byte) ([]jsonField, bool) {
	dec := json.NewDecoder(bytes.NewReader(text))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var out []jsonField
	for dec.More() {
		t, err := dec.Token()
		key, ok := t.(string)
		if err != nil || !ok {
			return nil, false
		}
		from := int(dec.InputOffset())
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		to := int(dec.InputOffset())
		i := bytes.LastIndex(text[from:to], raw)
		if i < 0 {
			return nil, false
		}
		f := jsonField{key: key, start: from + i, end: from + i + len(raw)}
		var s string
		if json.Unmarshal(raw, &s) == nil {
			f.isString, f.value = true, s
		}
		out = append(out, f)
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return out, true
}

// newNonce makes the names of a broker's renewed fakes its own: a
// renewed token's fake is derived from the secret's name, this nonce and
// a count, so it is new at every refresh and never equal to a real value.
func newNonce() string {
	var n [8]byte
	_, _ = rand.Read(n[:])
	return hex.EncodeToString(n[:])
}

// renewed counts the broker's renewals (see newNonce).
var renewed atomic.Int64

// renew reads a token endpoint's JSON response, keeps the new real tokens
// its binding's Renews names, and returns the response with each in its
// fake's place; it tells Config.OnRefresh the new real values by field.
// A response that is not a JSON object passes (the scrubber still sees
// it).
func (b *Broker) renew(ref *refresh, data []byte, target string) []byte {
	fields, ok := jsonFields(data)
	if !ok {
		return data
	}
	secrets, _, _ := b.table()
	tokens := map[string]string{}
	var gens []*brokered
	var out []byte
	last := 0
	for _, f := range fields {
		name, ok := ref.secret.Renews[f.key]
		if !ok || !f.isString || len(f.value) < 16 {
			if f.key == "expires_in" {
				tokens["expires_in"] = strings.Trim(string(data[f.start:f.end]), `"`)
			}
			continue
		}
		if slices.ContainsFunc(secrets, func(s *brokered) bool { return s.fake == f.value }) {
			// A fake is never kept as a real value, nor written back to
			// the user's file (a host that echoes what it was sent).
			b.audit(Event{Kind: "denied", Secret: name, Host: target, Place: "token-response-fake"})
			continue
		}
		fakeName := name + "#" + b.nonce + "-" + strconv.FormatInt(renewed.Add(1), 10)
		var fake string
		if f.key == "id_token" {
			fake = fakeJWT(b.cfg.Key, fakeName, f.value)
		} else {
			fake = Fake(b.cfg.Key, fakeName, f.value)
		}
		for _, s := range secrets {
			if s.Name == name {
				gens = append(gens, &brokered{Binding: s.Binding, real: f.value, fake: fake, in: s.in})
				break
			}
		}
		tokens[f.key] = f.value
		enc, _ := json.Marshal(fake)
		out = append(append(out, data[last:f.start]...), enc...)
		last = f.end
		b.audit(Event{Kind: "renewed", Secret: name, Host: target, Place: "body:" + f.key})
	}
	if out == nil {
		return data
	}
	out = append(out, data[last:]...)
	b.addGenerations(gens)
	if b.cfg.OnRefresh != nil {
		b.cfg.OnRefresh(ref.secret.Name, tokens)
	}
	return out
}

// fakeJWT fakes a JWT's signature only, so that its header and claims
// stay decodable; any other value is faked whole.
func fakeJWT(key []byte, name, real string) string {
	h, rest, ok1 := strings.Cut(real, ".")
	p, sig, ok2 := strings.Cut(rest, ".")
	if ok1 && ok2 && !strings.Contains(sig, ".") && len(sig) >= 16 {
		if hdr, err := base64.RawURLEncoding.DecodeString(h); err == nil && json.Valid(hdr) {
			return h + "." + p + "." + Fake(key, name+"#signature", sig)
		}
	}
	return Fake(key, name, real)
}

// errRefusedBody ends a request body that carried a refresh token's fake
// where it is not swapped.
var errRefusedBody = errors.New("a refresh token's fake in a body it is not swapped in")

// guardedBody is a request body that fails, before the bytes that hold
// it go out, once a refresh token's fake was found in it.
type guardedBody struct {
	io.ReadCloser
	refused *atomic.Bool
}

func (g guardedBody) Read(p []byte) (int, error) {
	n, err := g.ReadCloser.Read(p)
	if g.refused.Load() {
		return 0, errRefusedBody
	}
	return n, err
}
