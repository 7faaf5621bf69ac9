package detect

import (
	"math"
	"math/bits"
	"strings"
	"unsafe"
)

// Finding is a credential-looking string in a text: its byte offsets and
// kind. The string is text[Start:End].
type Finding struct {
	Start, End int
	Kind       Kind
}

// ScanOptions tunes the detectors of unknown secrets, which judge randomness.
// The zero value means the defaults, the settings of [Value].
type ScanOptions struct {
	// NoEntropy turns off the detectors that judge randomness
	// ("high-entropy" and "named-secret"): Scan then finds known formats
	// only (token prefixes, JWTs, PEM private keys, secrets in URLs).
	NoEntropy bool

	// MinLen is the length of the shortest run that the detector judges;
	// 0 (or less) means 20. Shorter runs carry too little information to
	// tell a random string from an identifier. Values assigned to a
	// sensitive name are judged from 16 characters, or MinLen if it is
	// shorter.
	MinLen int

	// MinEntropy is the least Shannon entropy of a random run, as a share
	// of the most that its length and alphabet allow; 0 (or less) means
	// 0.75, which fewer than one random run of 20 to 200 base64 characters
	// in a thousand falls below. Higher values flag fewer, more random runs.
	MinEntropy float64
}

// Scan calls fn for each credential-looking string in text (build logs,
// JSON, YAML, shell output, source code), in order, and stops when fn
// returns false. The findings do not overlap and are never empty. Scan does
// not allocate, takes time linear in len(text), keeps no reference to text
// and must not run while text changes.
//
// It finds, in this order of preference when two start at the same byte:
//
//   - The known token formats of [Value] (see [Kind]) at the start of a
//     word, the finding spanning the whole token, and JWTs.
//   - PEM private keys ("pem-private-key"): the whole block, from
//     "-----BEGIN" to the end of its "-----END ...-----". A block whose end
//     is missing, or more than 64 KiB away, ends with the last whole line of
//     base64 after its header.
//   - Secrets in URLs: the password of the userinfo ("url-password",
//     scheme://user:password@host; only the password, so that the user and
//     host stay readable; not a placeholder such as *** or ${PASSWORD}); the
//     value of a query parameter named like a credential
//     ("url-query-secret": password=, access_token=, api_key=, sig=); the
//     secret part of the path of a Slack, Discord or Microsoft Teams
//     incoming webhook ("webhook-url").
//   - Unless [ScanOptions.NoEntropy], values assigned to a sensitive name
//     ("named-secret"): in NAME=value, "name": "value", name: value and the
//     like, where the last word of the name is one that [SensitiveName]
//     flags (TOKEN, KEY, SECRET, PASSWORD, ...; not KEY_ID, TOKEN_FILE or
//     PublicKey), a value of at least 16 characters that is random by the
//     test below but needs only two of upper case, lower case and digits, or
//     that is at least 32 hex digits (a UUID too): many vendors issue hex
//     keys (Twilio auth tokens, Datadog), which nothing but their name gives
//     away. A value random enough without its name is reported as
//     "high-entropy".
//   - Unless [ScanOptions.NoEntropy], unknown secrets ("high-entropy"):
//     each maximal run of the characters [A-Za-z0-9+/=_.-] is split, as
//     [Value] splits a value, at dots and equals signs, and in a path (a
//     part that starts with '/' or '.') at slashes too; each part of at
//     least [ScanOptions.MinLen] characters is judged as [Value] judges
//     one: it must mix upper case, lower case and digits, change between
//     them as often as random strings do, not read like English, and have
//     a Shannon entropy of at least [ScanOptions.MinEntropy] of the most its
//     length and alphabet allow. The finding spans the part and its '='
//     padding; the name before a '=' is judged on its own.
//
// So Scan leaves alone what [Value] leaves alone, and what an agent needs to
// read: hex strings (git SHAs, sha256 and sha512 digests, docker image
// digests sha256:..., the hex tail of Go pseudo-versions such as
// v0.0.0-20231108232855-2478ac86f678), UUIDs, names made of words, numbers
// and hashes (Linux-node-modules-e3910c83...), subresource-integrity
// strings (sha512-...), go.sum's h1: hashes, Go build ids, data: URLs,
// Content-Security-Policy nonces, runs without all of upper case, lower
// case and digits (long words, CSS colours, most paths and semantic
// versions), runs that read like English (GitHubActionsRunner2024), the
// base64 of English text, SSH public keys, URLs without a password, and PEM
// blocks that are not private keys: certificates and public keys are
// public, and the base64 in them is not judged at all.
//
// What it cannot tell from a secret: random identifiers (nanoids, Stripe
// object ids, request ids), which it flags; hex and lower-case secrets and
// passwords made of words, which it misses unless their name gives them
// away; credentials split across lines or escaped.
func Scan(text []byte, opt ScanOptions, fn func(Finding) bool) {
	if len(text) == 0 {
		return
	}
	// The string shares text's bytes, so that the detectors of Value serve
	// here too without a copy; it does not outlive this call.
	s := unsafe.String(&text[0], len(text))
	sc := scanner{
		s:        s,
		fn:       fn,
		pem:      newPEMScanner(s),
		url:      newURLScanner(s),
		entropy:  !opt.NoEntropy,
		minLen:   minRandomLen,
		minRatio: minEntropyRatio,
	}
	if opt.MinLen > 0 {
		sc.minLen = opt.MinLen
	}
	sc.minNamed = min(minNamedLen, sc.minLen)
	if opt.MinEntropy > 0 {
		sc.minRatio = opt.MinEntropy
	}
	sc.scan()
}

// minKnownLen is the length of the shortest token Scan recognises by its
// format: a JWT with a header of 10 characters and a one-character payload.
// Shorter runs of token characters are skipped at once.
const minKnownLen = 13

// A kindID is a [Kind]'s index in kinds. Regions name their kind by index,
// not by string, so that Scan's escape analysis sees no pointer go from
// its state to fn, and a closure passed to Scan can stay on the stack.
type kindID uint8

// kinds, the kinds that Scan reports by kindID (those named by the
// constants below, then those of tokenRules), is in tables_gen.go.

const (
	kindJWT kindID = iota + 1
	kindPEM
	kindURLPassword
	kindURLQuery
	kindWebhook
	kindRandom
	kindNamed
	// Reported by Value and ValueFor only, not by Scan; here so that a
	// decision can name them by Index.
	kindField
	kindHex
)

// Index returns a byte that stands for k when k is one of the kinds this
// package reports (its position in their list, from 1), 0 otherwise.
// KindAt turns it back.
func (k Kind) Index() uint8 {
	for i, known := range kinds {
		if i > 0 && known == k {
			return uint8(i)
		}
	}
	return 0
}

// KindAt returns the kind whose Index is i, or "" when there is none.
func KindAt(i uint8) Kind {
	if i > 0 && int(i) < len(kinds) {
		return kinds[i]
	}
	return ""
}

// A region is a span of the text that either is a finding or, when quiet,
// must not hold one (a certificate).
type region struct {
	start, end int
	kind       kindID
	quiet      bool
}

// A scanner merges three ordered streams of regions: the tokens it finds
// itself in one pass over the text (known formats and random runs), the
// PEM blocks and the URLs. The last two are pulled on demand, each
// searching the text once, so that the whole is linear.
type scanner struct {
	s        string
	fn       func(Finding) bool
	entropy  bool
	minLen   int
	minNamed int // the shortest value of a sensitive name judged
	minRatio float64

	pos     int  // the end of the last region taken; later regions are cut to start here
	stopped bool // fn returned false

	pem              pemScanner
	url              urlScanner
	pemNext, urlNext region
	pemOK, urlOK     bool // pemNext and urlNext hold the next region of each stream
	pemDone, urlDone bool // the stream has no more regions
}

func (sc *scanner) scan() {
	s := sc.s
	minRun := minKnownLen
	if sc.entropy {
		minRun = min(minRun, sc.minLen, sc.minNamed)
	}
	prevStart, prevEnd := 0, 0 // the run before
	for i := 0; i < len(s) && !sc.stopped; {
		for i < len(s) && classes[s[i]]&token == 0 {
			i++
		}
		a := i
		for i < len(s) && classes[s[i]]&token != 0 {
			i++
		}
		if i-a >= minRun && i > sc.pos {
			a := max(a, sc.pos)
			named := -1
			if sc.entropy {
				named = namedValue(s, prevStart, prevEnd, a, i, sc.minNamed)
			}
			sc.scanRun(a, i, named)
		}
		prevStart, prevEnd = a, i
	}
	sc.flush(len(s)+1, false)
}

// minNamedLen is the length of the shortest value that Scan judges when a
// sensitive name is assigned it, unless [ScanOptions.MinLen] is shorter.
const minNamedLen = 16

// namedValue returns where, in the run s[a:b], a value starts that is
// assigned to a sensitive name, or -1. The name is the last word of either
// the part of the run before its first '=' (TWILIO_AUTH_TOKEN=...,
// --api-key=...), or of the run before, s[prevStart:prevEnd], when no more
// than a few quotes, spaces, colons and equals signs stand between them
// ("token": "...", api_key = '...', password: ...). The word must be one
// that [SensitiveName] flags, such as TOKEN, KEY, SECRET or PASSWORD, and
// the last of the name: KEY_ID, TOKEN_FILE and secretKeyRef do not count,
// nor does a name with the word PUBLIC (PublicKey).
func namedValue(s string, prevStart, prevEnd, a, b, minLen int) int {
	if eq := strings.IndexByte(s[a:b], '='); eq > 0 && b-(a+eq+1) >= minLen && sensitiveLast(s[a:a+eq]) {
		return a + eq + 1
	}
	gap := s[prevEnd:a]
	if prevEnd == prevStart || len(gap) == 0 || len(gap) > 5 || b-a < minLen {
		return -1
	}
	assigns := false
	for i := 0; i < len(gap); i++ {
		switch gap[i] {
		case ':', '=':
			assigns = true
		case ' ', '\t', '"', '\'', '`':
		default:
			return -1
		}
	}
	if !assigns {
		return -1
	}
	name := s[prevStart:prevEnd]
	if eq := strings.LastIndexByte(name, '='); eq >= 0 {
		name = name[eq+1:]
	}
	if sensitiveLast(name) {
		return a
	}
	return -1
}

// sensitiveLast reports whether the last word of name (as [SensitiveName]
// splits names) is a sensitive word, and no word is PUBLIC (PublicKey,
// PEER_PUBLIC_KEY).
func sensitiveLast(name string) bool {
	last := ""
	for start, end := nextWord(name, 0); start < end; start, end = nextWord(name, end) {
		last = name[start:end]
		if equalFold(last, "PUBLIC") {
			return false
		}
	}
	return last != "" && sensitiveWord(last)
}

// scanRun finds the tokens in s[a:b], a run of token characters; the value
// of a sensitive name starts at named, unless it is -1.
func (sc *scanner) scanRun(a, b, named int) {
	if named >= 0 {
		if end, kind := sc.namedSecret(named, b); end > named {
			sc.scanPart(a, named)
			sc.take(region{start: named, end: end, kind: kind})
			a = end
		}
	}
	sc.scanPart(a, b)
}

// namedSecret returns the end and the kind of the secret value of a
// sensitive name that starts at s[i:] and ends by b, or i when the value
// does not look like a secret. A value of at least sc.minNamed characters
// is a secret when it is at least 32 hex digits (dashes allowed, so a UUID
// too) that are not a repetition: many vendors issue hex keys (Twilio auth
// tokens, Datadog, Algolia), Heroku issues UUIDs; or when it is random by
// [namedRandom]. Its kind is "high-entropy" when [looksRandom] would flag
// it without its name, else "named-secret". Known formats are left to
// their own detectors, and paths to [randomRuns].
func (sc *scanner) namedSecret(i, b int) (int, kindID) {
	s := sc.s
	if end, _ := knownAt(s, i, i, b); end > i {
		return i, 0
	}
	n, seen := span(s[i:b], base64any)
	v := s[i : i+n]
	if n < sc.minNamed || v[0] == '/' || publicData(s[:i]) {
		return i, 0 // a path's parts are judged as randomRuns judges them
	}
	kind := kindNamed
	switch h, _ := span(v, hexDash); {
	case h == n:
		if n-strings.Count(v, "-") < 32 || entropy(v) < 3 {
			return i, 0
		}
	case n >= sc.minLen && looksRandom(v, seen, sc.minRatio):
		kind = kindRandom
	case !namedRandom(v, seen, sc.minRatio):
		return i, 0
	}
	end := i + n
	for end < b && s[end] == '=' {
		end++ // padding
	}
	return end, kind
}

// namedRandom is [looksRandom] for a value a sensitive name is assigned: two
// of upper case, lower case and digits are enough.
func namedRandom(run string, seen class, ratio float64) bool {
	letters := 0
	alphabet := bits.OnesCount16(uint16(seen & (dash | under | plus | slash)))
	for _, c := range []struct {
		class class
		size  int
	}{{upper, 26}, {lower, 26}, {digit, 10}} {
		if seen&c.class != 0 {
			letters++
			alphabet += c.size
		}
	}
	if letters < 2 || structured(run) || wordy(run) || !switchy(run) {
		return false
	}
	for _, p := range notSecrets {
		if strings.HasPrefix(run, p) {
			return false
		}
	}
	return entropy(run) >= ratio*math.Log2(float64(min(len(run), alphabet)))
}

// scanPart finds the known tokens and random runs in s[a:b], a run of token
// characters or the end of one.
func (sc *scanner) scanPart(a, b int) {
	s := sc.s
	rest := a // the start of the part not yet judged for randomness
	for j := a; j < b && !sc.stopped; {
		if classes[s[j]]&alnum == 0 {
			j++
			continue
		}
		// A word starts at j.
		if j+1 < b && mayStart[s[j]][s[j+1]>>6]&(1<<(s[j+1]&63)) != 0 {
			if end, kind := knownAt(s, j, a, b); end > j {
				sc.randoms(rest, j)
				sc.take(region{start: j, end: end, kind: kind})
				rest, j = end, end
				continue
			}
		}
		for j++; j < b && classes[s[j]]&alnum != 0; j++ {
		}
	}
	sc.randoms(rest, b)
}

// mayStart, the first two bytes of every known token and of a JWT, is in
// tables_gen.go.

// knownAt returns the end of the known token or JWT that starts at s[j], in
// the run s[a:b], and its kind; end is j when there is none.
func knownAt(s string, j, a, b int) (end int, kind kindID) {
	t := s[j:b]
	// Only at the start of a base64url run, as in knownToken.
	if t[0] == 'e' && (j == a || classes[s[j-1]]&base64url == 0) && isJWT(t) {
		n, _ := span(t, base64url) // header
		m, _ := span(t[n+1:], base64url)
		k, _ := span(t[n+1+m+1:], base64url) // signature
		return j + n + 1 + m + 1 + k, kindJWT
	}
	for i := range rulesFor[t[0]] {
		r := &rulesFor[t[0]][i]
		if strings.HasPrefix(t, r.prefix) && r.matchTail(t[len(r.prefix):]) {
			n, _ := span(t[len(r.prefix):], r.tail)
			if r.max > 0 {
				n = min(n, r.max)
			}
			return j + len(r.prefix) + n, r.id
		}
	}
	return j, 0
}

// randoms finds the random runs in s[from:to].
func (sc *scanner) randoms(from, to int) {
	if !sc.entropy || to-from < sc.minLen {
		return
	}
	randomRuns(sc.s, from, to, sc.minLen, sc.minRatio, func(start, end int) bool {
		for end < to && sc.s[end] == '=' {
			end++ // padding
		}
		sc.take(region{start: start, end: end, kind: kindRandom})
		return !sc.stopped
	})
}

// take hands r on, after the PEM blocks and URLs that start before it (or at
// the same byte, when r was judged by its entropy: the other detectors know
// better).
func (sc *scanner) take(r region) {
	sc.flush(r.start, r.kind != kindRandom && r.kind != kindNamed)
	sc.emit(r)
}

// flush hands on the PEM blocks and URLs that start before limit, and
// those that start at limit too unless keepTies is set.
func (sc *scanner) flush(limit int, keepTies bool) {
	for !sc.stopped {
		if !sc.pemOK && !sc.pemDone {
			sc.pemNext, sc.pemOK = sc.pem.next()
			sc.pemDone = !sc.pemOK
		}
		if !sc.urlOK && !sc.urlDone {
			sc.urlNext, sc.urlOK = sc.url.next()
			sc.urlDone = !sc.urlOK
		}
		var r *region
		switch {
		case sc.pemOK && (!sc.urlOK || sc.pemNext.start <= sc.urlNext.start):
			r = &sc.pemNext
		case sc.urlOK:
			r = &sc.urlNext
		default:
			return
		}
		if r.start > limit || r.start == limit && keepTies {
			return
		}
		if r == &sc.pemNext {
			sc.pemOK = false
		} else {
			sc.urlOK = false
		}
		sc.emit(*r)
	}
}

// emit cuts r to start after the last region taken, and hands it to fn
// unless it is quiet or empty.
func (sc *scanner) emit(r region) {
	if sc.stopped || r.end <= sc.pos {
		return
	}
	r.start = max(r.start, sc.pos)
	sc.pos = r.end
	if !r.quiet && !sc.fn(Finding{Start: r.start, End: r.end, Kind: kinds[r.kind]}) {
		sc.stopped = true
	}
}

const (
	pemBegin = "-----BEGIN "
	pemEnd   = "-----END "
	pemDash  = "-----"

	// maxPEMLabel is the longest label of a PEM block looked for; the
	// longest in use ("ENCRYPTED PRIVATE KEY", "PGP PRIVATE KEY BLOCK") are
	// much shorter.
	maxPEMLabel = 64

	// maxPEMBody is the farthest a PEM block's end line is looked for from
	// its header. An RSA private key of 16384 bits takes about 13 KiB.
	maxPEMBody = 64 << 10
)

// A pemScanner finds the PEM blocks of a text, in order.
type pemScanner struct {
	s     string
	begin int // the next "-----BEGIN " to look at, or -1
	end   int // the first "-----END " at or after endFrom, or -1
	endAt int // where the search that found end started
}

func newPEMScanner(s string) pemScanner {
	return pemScanner{s: s, begin: strings.Index(s, pemBegin), end: -1, endAt: -1}
}

// next returns the next PEM block: quiet unless its label holds PRIVATE
// KEY.
func (p *pemScanner) next() (region, bool) {
	s := p.s
	for p.begin >= 0 {
		start := p.begin
		h := start + len(pemBegin)
		p.begin = index(s, h, pemBegin)
		k := strings.Index(s[h:min(len(s), h+maxPEMLabel+len(pemDash))], pemDash)
		if k < 0 || strings.ContainsAny(s[h:h+k], "\r\n") {
			continue
		}
		label := s[h : h+k]
		header := h + k + len(pemDash)
		end := p.endAfter(header)
		var stop int
		if end >= 0 && (p.begin < 0 || end < p.begin) && end-header <= maxPEMBody {
			e := end + len(pemEnd)
			stop = e
			if k := strings.Index(s[e:min(len(s), e+maxPEMLabel+len(pemDash))], pemDash); k >= 0 && !strings.ContainsAny(s[e:e+k], "\r\n") {
				stop = e + k + len(pemDash)
			}
		} else {
			limit := len(s)
			if p.begin >= 0 {
				limit = p.begin
			}
			stop = pemBody(s, header, min(limit, header+maxPEMBody))
		}
		return region{start: start, end: stop, kind: kindPEM, quiet: !strings.Contains(label, "PRIVATE KEY")}, true
	}
	return region{}, false
}

// endAfter returns the index of the first "-----END " at or after i, or
// -1. Successive calls have increasing i, and each byte is searched once.
func (p *pemScanner) endAfter(i int) int {
	if p.endAt >= 0 && (p.end < 0 || p.end >= i) {
		return p.end
	}
	p.end, p.endAt = index(p.s, i, pemEnd), i
	return p.end
}

// pemBody returns the end of the body of a PEM block whose end line is
// missing, which starts at s[i:]: whole lines of base64, perhaps indented,
// the line breaks possibly escaped (\n, as in JSON); the last line may end
// at a quote instead. It stops at "-----" and before limit.
func pemBody(s string, i, limit int) int {
	end := i   // the end of the last line of the body
	line := -1 // the end of the base64 on the current line, if any
	for ; i < limit; i++ {
		c := s[i]
		switch {
		case c == '\n' || c == '\r':
		case c == '\\' && i+1 < limit && (s[i+1] == 'n' || s[i+1] == 'r'):
			i++
		case (c == ' ' || c == '\t') && line < 0:
			continue
		case classes[c]&(base64any|equals) != 0 && !strings.HasPrefix(s[i:], pemDash):
			line = i + 1
			continue
		case c == '"' || c == '\'' || c == '`':
			return max(end, line)
		default:
			return end
		}
		// A line break.
		end, line = max(end, line), -1
	}
	return end
}

// index returns the index of the first sub in s at or after i, or -1.
func index(s string, i int, sub string) int {
	j := strings.Index(s[i:], sub)
	if j < 0 {
		return -1
	}
	return i + j
}

// A urlScanner finds the secrets in the URLs of a text, in order.
type urlScanner struct {
	s     string
	sep   int // the next "://" to look at, or -1
	u     urlParts
	step  int // what to look for in u: 0 the password, 1 a webhook, 2 the query, 3 nothing
	query int // where the query parameters not yet looked at start
}

func newURLScanner(s string) urlScanner {
	return urlScanner{s: s, sep: strings.Index(s, "://"), step: 3}
}

func (p *urlScanner) next() (region, bool) {
	for {
		u := &p.u
		switch p.step {
		case 0:
			p.step++
			if u.password < u.at {
				return region{start: u.password, end: u.at, kind: kindURLPassword}, true
			}
		case 1:
			p.step++
			if start := webhookSecret(p.s, *u); start < u.pathEnd {
				return region{start: start, end: u.pathEnd, kind: kindWebhook}, true
			}
		case 2:
			start := firstSecretParam(p.s, p.query, u.queryEnd)
			if start == u.queryEnd {
				p.step++
				continue
			}
			end := u.queryEnd
			if j := strings.IndexByte(p.s[start:end], '&'); j >= 0 {
				end = start + j
			}
			p.query = end + 1
			return region{start: start, end: end, kind: kindURLQuery}, true
		default:
			if p.sep < 0 {
				return region{}, false
			}
			p.u, p.sep = parseURL(p.s, p.sep)
			if p.u.ok {
				p.step, p.query = 0, p.u.query
			}
		}
	}
}
