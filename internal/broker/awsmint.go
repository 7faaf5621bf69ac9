package broker

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/envsieve/envsieve/internal/sigv4"
)

// Minted keys (docs/broker.md, "Keys AWS mints"): a tree that holds the
// fakes can ask AWS for new credentials (STS GetSessionToken, AssumeRole,
// GetFederationToken, IAM CreateAccessKey, the SSO portal's
// GetRoleCredentials, ...), and the broker signs that request with the
// real keys. So every response from a host AWS keys are re-signed for is
// read for credentials before the tree sees it: each set found (an
// element or object holding an access key id and a secret) is replaced
// by fresh fakes of its shape, the real set is kept by the broker (a
// request signed with the new fakes is re-signed with it, until it
// expires), and its values join the scrub. An answer holding a secret
// field the broker did not rewrite (a shape it does not know, a body past
// awsMintMax, a stream) is refused, never passed on.

// awsMintMax caps the response from an AWS host the broker reads whole to
// find credentials in (every answer that mints keys is a few KiB); a
// larger one is streamed, and cut where a secret field appears.
const awsMintMax = 1 << 20

// testOnlyAWSMintMax is awsMintMax (tests lower it).
var testOnlyAWSMintMax = awsMintMax

// maxMinted caps the minted sets one broker keeps; past it an answer that
// mints more is refused.
const maxMinted = 4096

// mintRefusal is a response from AWS the broker refuses: its place names
// the reason.
type mintRefusal struct{ place, msg string }

func (e *mintRefusal) Error() string { return e.msg }

// awsMint is the broker's minted keys, by fake access key id.
type awsMint struct {
	mu    sync.RWMutex
	creds map[string]*mintedCred
	// learned are the real keys a source gave (fetched ones included),
	// whose values the scrub already knows, by id and secret.
	learned map[[2]string]bool
}

type mintedCred struct {
	AWSCred
	exp time.Time // zero: long-term keys
}

// minted counts the broker's minted sets (their fakes' names).
var minted atomic.Int64

// mintedByKey returns the minted set whose fake access key id is id, if
// it has not expired.
func (b *Broker) mintedByKey(id string) *AWSCred {
	b.mint.mu.RLock()
	defer b.mint.mu.RUnlock()
	m := b.mint.creds[id]
	if m == nil || !m.exp.IsZero() && time.Now().After(m.exp) {
		return nil
	}
	return &m.AWSCred
}

// isAWSFake reports whether v is the fake secret (or session token) of
// one of the broker's AWS credentials, minted ones included.
func (b *Broker) isAWSFake(v string) bool {
	for _, c := range b.cfg.AWS {
		if v == c.Fake.SecretAccessKey || v == c.Fake.SessionToken && v != "" {
			return true
		}
	}
	b.mint.mu.RLock()
	defer b.mint.mu.RUnlock()
	for _, m := range b.mint.creds {
		if v == m.Fake.SecretAccessKey || v == m.Fake.SessionToken && v != "" {
			return true
		}
	}
	return false
}

// learnAWS adds the real keys a source of c gave (a file's, or fetched:
// credential_process, SSO, assume-role) to the scrub, once: a response
// that echoes one reaches the tree as c's fake (or, where lengths differ,
// a fake of its own shape).
func (b *Broker) learnAWS(c *AWSCred, real sigv4.Credentials) {
	k := [2]string{real.AccessKeyID, real.SecretAccessKey}
	b.mint.mu.RLock()
	done := b.mint.learned[k]
	b.mint.mu.RUnlock()
	if done {
		return
	}
	b.mint.mu.Lock()
	if b.mint.learned == nil {
		b.mint.learned = map[[2]string]bool{}
	}
	if len(b.mint.learned) >= maxMinted {
		// A source that changes its keys endlessly: the oldest are
		// forgotten rather than kept without bound.
		clear(b.mint.learned)
	}
	b.mint.learned[k] = true
	b.mint.mu.Unlock()
	b.addScrub(awsPairs(b.cfg.Key, c.Name, real, c.Fake))
}

// awsPairs returns the scrub pairs of a set of real keys: each value to
// fake's, or where the lengths differ to a fake of its own shape.
func awsPairs(key []byte, name string, real, fake sigv4.Credentials) []pair {
	var out []pair
	for _, v := range [][3]string{{":id", real.AccessKeyID, fake.AccessKeyID}, {"", real.SecretAccessKey, fake.SecretAccessKey},
		{":token", real.SessionToken, fake.SessionToken}} {
		if v[1] == "" {
			continue
		}
		to := v[2]
		if len(to) != len(v[1]) || to == v[1] {
			to = Fake(key, name+v[0], v[1])
		}
		out = append(out, scrubPairs(name, v[1], to)...)
	}
	return out
}

// addScrub adds pairs to the response scrub.
func (b *Broker) addScrub(pairs []pair) {
	if len(pairs) == 0 {
		return
	}
	b.smu.Lock()
	defer b.smu.Unlock()
	b.scrubPairs = append(b.scrubPairs, pairs...)
	b.scrub = newPatterns(b.scrubPairs)
}

// awsResponse reads the (decoded) body of a response from an AWS host for
// credentials (see the package's "Minted keys"): it returns the body the
// tree gets, or a *mintRefusal (audited).
func (b *Broker) awsResponse(resp *http.Response, body io.ReadCloser, target string, signer *AWSCred) (io.ReadCloser, error) {
	refuse := func(place, msg string) error {
		b.audit(Event{Kind: "denied", Host: target, Place: place})
		return &mintRefusal{place: place, msg: msg}
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	stream := mt == "text/event-stream" || mt == "application/vnd.amazon.eventstream" || resp.ContentLength > int64(testOnlyAWSMintMax)
	if !stream {
		data, err := io.ReadAll(io.LimitReader(body, int64(testOnlyAWSMintMax)+1))
		if err != nil {
			body.Close()
			return nil, refuse("aws-credentials-decode", "an answer from AWS the broker cannot read to look for credentials")
		}
		if len(data) <= testOnlyAWSMintMax {
			body.Close()
			out, place, err := b.rewriteMinted(data, mt, target, signer)
			if err != nil {
				return nil, refuse(place, err.Error())
			}
			resp.ContentLength = int64(len(out))
			resp.Header.Set("Content-Length", strconv.Itoa(len(out)))
			return io.NopCloser(bytes.NewReader(out)), nil
		}
		if hasSecretName(data) {
			body.Close()
			return nil, refuse("aws-credentials-size", "an answer from AWS larger than the broker reads whole holds a secret key field")
		}
		body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(data), body), body}
	}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return &secretCutter{r: body, fail: func() {
		b.audit(Event{Kind: "denied", Host: target, Place: "aws-credentials-size"})
	}}, nil
}

// rewriteMinted replaces, in an answer from AWS read whole, each set of
// credentials by fresh fakes, keeping the real ones (see awsResponse);
// then checks that every secret field left holds a fake. It returns the
// new body, or the place and error of a refusal. mt is the answer's media
// type.
func (b *Broker) rewriteMinted(data []byte, mt, target string, signer *AWSCred) ([]byte, string, error) {
	if !hasSecretName(data) {
		return data, "", nil // the common case: nothing to look at
	}
	if strings.Contains(mt, "cbor") {
		return nil, "aws-credentials-shape", errors.New("a CBOR answer from AWS names a secret key: the broker does not rewrite CBOR")
	}
	sets := findCredsJSON(data)
	if sets == nil {
		sets = findCredsXML(data)
	}
	var reps []replacement
	var regs []*mintedCred
	var pairs []pair
	fakes := map[string]sigv4.Credentials{} // by real secret
	for _, s := range sets {
		real := sigv4.Credentials{AccessKeyID: s.id.value, SecretAccessKey: s.secret.value, SessionToken: s.token.value}
		if b.isAWSFake(real.SecretAccessKey) {
			continue // an echo of a fake (an object the tree stored)
		}
		if len(real.AccessKeyID) < 16 || len(real.SecretAccessKey) < 16 {
			return nil, "aws-credentials-shape", errors.New("an answer from AWS holds keys too short to fake")
		}
		f, ok := fakes[real.SecretAccessKey]
		if !ok {
			name := "aws:minted"
			var hosts []string
			if signer != nil {
				name, hosts = signer.Name, slices.Clone(signer.Hosts)
			}
			if !matchAny(AWSHosts, target) && !slices.Contains(hosts, target) {
				hosts = append(hosts, target)
			}
			name += "#minted-" + b.nonce + "-" + strconv.FormatInt(minted.Add(1), 10)
			f = sigv4.Credentials{AccessKeyID: Fake(b.cfg.Key, name+":id", real.AccessKeyID), SecretAccessKey: Fake(b.cfg.Key, name, real.SecretAccessKey)}
			if real.SessionToken != "" {
				f.SessionToken = Fake(b.cfg.Key, name+":token", real.SessionToken)
			}
			fakes[real.SecretAccessKey] = f
			regs = append(regs, &mintedCred{AWSCred: AWSCred{Name: name, Fake: f, Hosts: hosts, Real: AWSStatic(real)}, exp: s.exp})
			pairs = append(pairs, awsPairs(b.cfg.Key, name, real, f)...)
		}
		for _, v := range []struct {
			at   valueAt
			fake string
		}{{s.id, f.AccessKeyID}, {s.secret, f.SecretAccessKey}, {s.token, f.SessionToken}} {
			if v.at.end > v.at.start || v.at.value != "" {
				reps = append(reps, replacement{v.at.start, v.at.end, v.at.encode(v.fake)})
			}
		}
	}
	out, err := applyReplacements(data, reps)
	if err != nil {
		return nil, "aws-credentials-shape", err
	}
	// The new fakes count from here: the check below knows them.
	if err := b.registerMinted(regs, target); err != nil {
		return nil, "aws-credentials-limit", err
	}
	b.addScrub(pairs)
	if err := b.checkSecretFields(out); err != nil {
		return nil, "aws-credentials-shape", err
	}
	return out, "", nil
}

func matchAny(patterns []string, target string) bool {
	for _, p := range patterns {
		if matchHost(p, target) {
			return true
		}
	}
	return false
}

// registerMinted keeps minted sets (expired ones dropped first).
func (b *Broker) registerMinted(regs []*mintedCred, target string) error {
	if len(regs) == 0 {
		return nil
	}
	b.mint.mu.Lock()
	defer b.mint.mu.Unlock()
	if b.mint.creds == nil {
		b.mint.creds = map[string]*mintedCred{}
	}
	now := time.Now()
	for id, m := range b.mint.creds {
		if !m.exp.IsZero() && now.After(m.exp) {
			delete(b.mint.creds, id)
		}
	}
	if len(b.mint.creds)+len(regs) > maxMinted {
		return errors.New("the broker keeps too many minted AWS keys")
	}
	for _, r := range regs {
		if b.mint.creds[r.Fake.AccessKeyID] != nil || slices.ContainsFunc(b.cfg.AWS, func(c AWSCred) bool { return c.Fake.AccessKeyID == r.Fake.AccessKeyID }) {
			return errors.New("a minted key's fake is another's")
		}
	}
	for _, r := range regs {
		b.mint.creds[r.Fake.AccessKeyID] = r
		b.audit(Event{Kind: "minted", Secret: r.Name, Host: target, Place: "body"})
	}
	return nil
}

// secretNames are the names of secret key fields AWS's answers use
// (compared without case): STS's and IAM's SecretAccessKey, the SSO
// portal's secretAccessKey, a credentials file's aws_secret_access_key;
// Cognito's SecretKey only as a whole JSON key or XML element.
var secretNames = []string{"secretaccesskey", "secret_access_key"}

// hasSecretName reports whether data names a secret key field anywhere.
func hasSecretName(data []byte) bool {
	low := asciiLower(data)
	for _, n := range secretNames {
		if bytes.Contains(low, []byte(n)) {
			return true
		}
	}
	for _, n := range secretKeyForms {
		if bytes.Contains(low, []byte(n)) {
			return true
		}
	}
	return false
}

// secretKeyForms are the forms of Cognito's SecretKey hasSecretName
// looks for: a whole JSON key, an XML element (with a namespace prefix
// or not).
var secretKeyForms = []string{`"secretkey"`, `<secretkey`, `:secretkey`}

// secretNameHold returns how many bytes at the end of b could still be
// the start of a name hasSecretName looks for: a stream holds only those
// back, so that an event is not delayed.
func secretNameHold(b []byte) int {
	low := asciiLower(b[max(0, len(b)-maxSecretName):])
	hold := 0
	for _, n := range append(slices.Clone(secretNames), secretKeyForms...) {
		for k := min(len(n)-1, len(low)); k > hold; k-- {
			if strings.HasPrefix(n, string(low[len(low)-k:])) {
				hold = k
				break
			}
		}
	}
	return hold
}

// asciiLower lowers A-Z only, byte for byte: offsets in it are offsets
// in b (bytes.ToLower turns an invalid byte into three).
func asciiLower(b []byte) []byte {
	out := make([]byte, len(b))
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return out
}

// maxSecretName is the longest pattern hasSecretName looks for.
const maxSecretName = len("secret_access_key")

// checkSecretFields checks every secret key field of data (see
// secretNames) as a client would read it: an XML element's text, a JSON
// member's string value, or "name = value" / "name: value" in any other
// text. Each must be empty or one of the broker's fakes; a field whose
// value cannot be read is an error.
func (b *Broker) checkSecretFields(data []byte) error {
	low := asciiLower(data)
	names := append(slices.Clone(secretNames), "secretkey")
	for _, n := range names {
		for i := 0; ; {
			j := bytes.Index(low[i:], []byte(n))
			if j < 0 {
				break
			}
			at := i + j
			i = at + len(n)
			end := at + len(n)
			var before, after byte
			if at > 0 {
				before = data[at-1]
			}
			if end < len(data) {
				after = data[end]
			}
			if n == "secretkey" && !(before == '"' && after == '"' || (before == '<' || before == ':' || before == '/') && (after == '>' || after == ' ' || after == '/')) {
				continue // part of another word
			}
			v, ok, err := fieldValue(data, at, end, before, after)
			if err != nil {
				return err
			}
			if ok && v != "" && !b.isAWSFake(v) {
				return errors.New("an answer from AWS holds a secret key the broker cannot rewrite")
			}
		}
	}
	return nil
}

// fieldValue reads the value of the field whose name is data[at:end]:
// ok false when the name is no field (an XML closing tag, a JSON string
// that is no key, a word in text).
func fieldValue(data []byte, at, end int, before, after byte) (string, bool, error) {
	unreadable := errors.New("an answer from AWS names a secret key field the broker cannot read")
	switch {
	case before == '/' && at >= 2 && (data[at-2] == '<' || data[at-2] == ':'):
		return "", false, nil // </SecretAccessKey>
	case before == '<' || before == ':' && bytes.LastIndexByte(data[:at], '<') > bytes.LastIndexByte(data[:at], '>'):
		gt := bytes.IndexByte(data[end:], '>')
		if gt < 0 {
			return "", false, unreadable
		}
		if data[end+gt-1] == '/' {
			return "", true, nil // <SecretAccessKey/>
		}
		text := data[end+gt+1:]
		lt := bytes.IndexByte(text, '<')
		if lt < 0 {
			return "", false, unreadable
		}
		if bytes.HasPrefix(text[lt:], []byte("<!")) || bytes.HasPrefix(text[lt:], []byte("<?")) {
			return "", false, unreadable // CDATA or a comment inside the value
		}
		var v string
		if err := xml.Unmarshal(append(append([]byte("<v>"), text[:lt]...), "</v>"...), &v); err != nil {
			return "", false, unreadable
		}
		return strings.TrimSpace(v), true, nil
	case before == '"' && after == '"':
		rest := bytes.TrimLeft(data[end+1:], " \t\r\n")
		if len(rest) == 0 || rest[0] != ':' {
			return "", false, nil // a string, not a key
		}
		rest = bytes.TrimLeft(rest[1:], " \t\r\n")
		if bytes.HasPrefix(rest, []byte("null")) {
			return "", true, nil
		}
		var v string
		if err := json.NewDecoder(bytes.NewReader(rest)).Decode(&v); err != nil {
			return "", false, unreadable
		}
		return v, true, nil
	}
	rest := bytes.TrimLeft(data[end:], " \t\"'")
	if len(rest) > 0 && (rest[0] == '=' || rest[0] == ':') {
		// "aws_secret_access_key = ..." or YAML: a shape the broker
		// does not rewrite.
		v := strings.Trim(strings.TrimSpace(string(firstLine(rest[1:]))), `"',`)
		return v, true, nil
	}
	return "", false, nil
}

func firstLine(b []byte) []byte {
	if i := bytes.IndexAny(b, "\r\n"); i >= 0 {
		return b[:i]
	}
	return b
}

// valueAt is where a value lies in a body, and how a replacement is
// written there.
type valueAt struct {
	start, end int
	value      string
	json       bool
}

func (v valueAt) encode(s string) []byte {
	if v.json {
		out, _ := json.Marshal(s)
		return out
	}
	var buf bytes.Buffer
	xml.EscapeText(&buf, []byte(s))
	return buf.Bytes()
}

// credSet is one set of credentials found in a body.
type credSet struct {
	id, secret, token valueAt
	exp               time.Time
}

type replacement struct {
	start, end int
	with       []byte
}

// applyReplacements returns data with each replacement made; overlapping
// ones are an error.
func applyReplacements(data []byte, reps []replacement) ([]byte, error) {
	sort.Slice(reps, func(i, j int) bool { return reps[i].start < reps[j].start })
	var out []byte
	last := 0
	for _, r := range reps {
		if r.start < last || r.end < r.start || r.end > len(data) {
			return nil, errors.New("an answer from AWS holds credentials the broker cannot rewrite")
		}
		out = append(append(out, data[last:r.start]...), r.with...)
		last = r.end
	}
	return append(out, data[last:]...), nil
}

// credKey names the member of a set of credentials a field name is (case
// and underscores ignored), or "".
func credKey(name string) string {
	switch strings.ReplaceAll(strings.ToLower(name), "_", "") {
	case "accesskeyid", "awsaccesskeyid":
		return "id"
	case "secretaccesskey", "secretkey", "awssecretaccesskey":
		return "secret"
	case "sessiontoken", "awssessiontoken":
		return "token"
	case "expiration":
		return "exp"
	}
	return ""
}

// parseExpiry reads an expiration: RFC 3339, or epoch seconds or
// milliseconds; zero when there is none or it cannot be read.
func parseExpiry(s string) time.Time {
	if t, err := time.Parse(time.RFC3339, strings.TrimSpace(s)); err == nil {
		return t
	}
	if f, err := strconv.ParseFloat(strings.TrimSpace(s), 64); err == nil && f > 0 {
		if f > 1e11 {
			return time.UnixMilli(int64(f))
		}
		return time.Unix(int64(f), 0)
	}
	return time.Time{}
}

// findCredsXML returns the sets of credentials of an XML body: each
// element whose children include an access key id and a secret. Nil when
// data is not XML.
func findCredsXML(data []byte) []credSet {
	dec := xml.NewDecoder(bytes.NewReader(data))
	type frame struct {
		fields             map[string]valueAt
		exp                string
		textStart, textEnd int
		text               strings.Builder
		leaf               bool
		name               string
	}
	var stack []*frame
	var out []credSet
	for {
		before := int(dec.InputOffset())
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			return out
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) > 0 {
				stack[len(stack)-1].leaf = false
			}
			off := int(dec.InputOffset())
			stack = append(stack, &frame{name: t.Name.Local, leaf: true, textStart: off, textEnd: off})
		case xml.CharData:
			if len(stack) > 0 {
				f := stack[len(stack)-1]
				f.text.Write(t)
				f.textEnd = int(dec.InputOffset())
			}
		case xml.EndElement:
			if len(stack) == 0 {
				return out
			}
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if f.fields != nil && f.fields["id"].end > 0 && f.fields["secret"].end > 0 {
				out = append(out, credSet{id: f.fields["id"], secret: f.fields["secret"], token: f.fields["token"], exp: parseExpiry(f.exp)})
			}
			if len(stack) > 0 && f.leaf {
				p := stack[len(stack)-1]
				k := credKey(f.name)
				end := before // the end tag starts here
				if k == "exp" {
					p.exp = f.text.String()
				} else if k != "" {
					if p.fields == nil {
						p.fields = map[string]valueAt{}
					}
					if _, dup := p.fields[k]; dup {
						return nil // ambiguous: left to the check, which refuses
					}
					p.fields[k] = valueAt{start: f.textStart, end: end, value: strings.TrimSpace(f.text.String())}
				}
			}
		}
	}
}

// findCredsJSON returns the sets of credentials of a JSON body: each
// object with an access key id and a secret among its string members.
// Nil when data is not one JSON value.
func findCredsJSON(data []byte) []credSet {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || trimmed[0] != '{' && trimmed[0] != '[' {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		object bool
		key    string
		keyed  bool // the next token is the value of key
		fields map[string]valueAt
		exp    string
		dup    bool
	}
	var stack []*frame
	var out []credSet
	value := func(v valueAt, isString bool, raw string) {
		if len(stack) == 0 {
			return
		}
		f := stack[len(stack)-1]
		if !f.object {
			return
		}
		f.keyed = false
		k := credKey(f.key)
		switch {
		case k == "exp":
			f.exp = raw
		case k != "" && isString:
			if f.fields == nil {
				f.fields = map[string]valueAt{}
			}
			if _, d := f.fields[k]; d {
				f.dup = true
			}
			f.fields[k] = v
		}
	}
	for {
		before := int(dec.InputOffset())
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			return nil
		}
		after := int(dec.InputOffset())
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{', '[':
				if top != nil && top.object {
					top.keyed = false
				}
				stack = append(stack, &frame{object: t == '{'})
			case '}', ']':
				stack = stack[:len(stack)-1]
				if top.object && top.fields["id"].end > 0 && top.fields["secret"].end > 0 {
					if top.dup {
						return nil // ambiguous: left to the check
					}
					out = append(out, credSet{id: top.fields["id"], secret: top.fields["secret"], token: top.fields["token"], exp: parseExpiry(top.exp)})
				}
			}
		case string:
			if top != nil && top.object && !top.keyed {
				top.key, top.keyed = t, true
				continue
			}
			q := bytes.IndexByte(data[before:after], '"')
			if q < 0 {
				return nil
			}
			value(valueAt{start: before + q, end: after, value: t, json: true}, true, t)
		case json.Number:
			value(valueAt{}, false, t.String())
		default:
			value(valueAt{}, false, "")
		}
	}
}

// secretCutter streams a body that was not read whole, and ends it with
// an error before any secret key field name (hasSecretName) reaches the
// tree: it holds back only the bytes at the end of a read that could
// start one (usually none, so an event stream is not delayed).
type secretCutter struct {
	r    io.ReadCloser
	buf  []byte
	err  error
	cut  bool
	fail func()
}

func (s *secretCutter) Read(p []byte) (int, error) {
	for {
		if s.cut {
			return 0, errSecretCut
		}
		ready := len(s.buf) - secretNameHold(s.buf)
		if s.err != nil {
			ready = len(s.buf)
		}
		if ready > 0 {
			n := copy(p, s.buf[:ready])
			s.buf = s.buf[:copy(s.buf, s.buf[n:])]
			return n, nil
		}
		if s.err != nil {
			return 0, s.err
		}
		chunk := make([]byte, 32<<10)
		n, err := s.r.Read(chunk)
		s.err = err
		from := max(0, len(s.buf)-maxSecretName)
		s.buf = append(s.buf, chunk[:n]...)
		if hasSecretName(s.buf[from:]) {
			s.cut, s.buf = true, nil
			if s.fail != nil {
				s.fail()
			}
		}
	}
}

func (s *secretCutter) Close() error { return s.r.Close() }

// errSecretCut ends a streamed answer from AWS that names a secret key.
var errSecretCut = errors.New("an answer from AWS streamed past the broker's cap names a secret key: cut")
