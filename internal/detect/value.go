package detect

import "strings"

// Kind names what a value detector found. Kinds are stable lower-case
// strings, safe to print and to record:
//
//   - "github-token": ghp_, gho_, ghu_, ghs_, ghr_ or github_pat_ and a tail
//   - "gitlab-token": glpat-
//   - "openai-api-key": sk- and a long tail mixing upper case, lower case and digits
//   - "anthropic-api-key": sk-ant-
//   - "slack-token": xoxa-, xoxb-, xoxp-, xoxr-, xoxs-, xoxe-, xoxe.,
//     xapp-
//   - "aws-access-key-id": AKIA or ASIA and 16 upper-case letters or digits
//   - "google-api-key": AIza and 35 characters
//   - "npm-token": npm_
//   - "huggingface-token": hf_
//   - "stripe-key": sk_live_, sk_test_, rk_live_, rk_test_, whsec_
//     (not pk_live_: publishable keys are public)
//   - "sendgrid-key": SG.
//   - "twilio-key": SK and 32 hex digits
//   - "pypi-token": pypi-AgEIcHlwaS5vcmc (a macaroon for pypi.org)
//   - "digitalocean-token": dop_v1_
//   - "age-secret-key": AGE-SECRET-KEY-1
//   - "google-oauth-client-secret": GOCSPX-
//   - "shopify-token": shpat_, shpss_, shpca_, shppa_
//   - "jwt": three base64url parts joined by dots, the first starting eyJ
//   - "pem-private-key": a PEM block whose label holds PRIVATE KEY
//   - "url-password": scheme://user:password@host, the user possibly empty,
//     the password not a placeholder such as *** or ${DB_PASSWORD}
//   - "url-query-secret": a URL with a query parameter such as password=,
//     access_token=, api_key= or X-Amz-Credential=
//   - "webhook-url": a Slack, Discord or Microsoft Teams incoming webhook,
//     whose path is the secret
//   - "field-secret": a credential in a structured value, found by its
//     key's word: key=value, --flag=value, JSON and YAML fields,
//     connection strings, an Authorization header, a netrc line, or
//     user:password; see [Value]
//   - "hex-secret": a whole value of 32 or more hex digits (dashes between
//     them allowed: UUIDs), under a name that does not say it is an
//     identifier; see [ValueFor] (ValueFor only)
//   - "high-entropy": a long random-looking string, see [Value]
//   - "named-secret": a value that only its sensitive name gives away, see
//     [Scan] (Scan only)
type Kind string

// A tokenRule recognises a vendor's token format: a fixed prefix, then a tail
// of at least min bytes, all in the class set tail. When max is not zero the
// tail is at most max bytes and must not run into another letter or digit.
// When mixed is set the tail must hold an upper-case letter, a lower-case
// letter and a digit, for prefixes such as "sk-" that ordinary text may start
// with.
type tokenRule struct {
	prefix   string
	kind     Kind
	tail     class
	min, max int
	mixed    bool
	id       kindID // kind's index in kinds, for Scan; set in rulesFor
}

// tokenRules are tried in order, so a longer prefix comes before a shorter
// one that it starts with. The minimum tail lengths sit below each vendor's
// documented length, so that a slightly shorter token is still caught, and
// far above the length of any word that could follow the prefix by chance.
// After a change, go test -run TestTables -update-tables rewrites the
// tables made from it (tables_gen.go); so does a change of sensitiveWords
// or stores.
var tokenRules = []tokenRule{
	{prefix: "github_pat_", kind: "github-token", tail: alnum | under, min: 40},
	{prefix: "ghp_", kind: "github-token", tail: alnum, min: 30},
	{prefix: "gho_", kind: "github-token", tail: alnum, min: 30},
	{prefix: "ghu_", kind: "github-token", tail: alnum, min: 30},
	{prefix: "ghs_", kind: "github-token", tail: alnum, min: 30},
	{prefix: "ghr_", kind: "github-token", tail: alnum, min: 30},
	{prefix: "glpat-", kind: "gitlab-token", tail: base64url, min: 20},
	{prefix: "sk-ant-", kind: "anthropic-api-key", tail: base64url, min: 32},
	{prefix: "sk-", kind: "openai-api-key", tail: base64url, min: 32, mixed: true},
	{prefix: "xoxa-", kind: "slack-token", tail: alnum | dash, min: 20},
	{prefix: "xoxb-", kind: "slack-token", tail: alnum | dash, min: 20},
	{prefix: "xoxp-", kind: "slack-token", tail: alnum | dash, min: 20},
	{prefix: "xoxr-", kind: "slack-token", tail: alnum | dash, min: 20},
	{prefix: "xoxs-", kind: "slack-token", tail: alnum | dash, min: 20},
	{prefix: "xoxe-", kind: "slack-token", tail: alnum | dash, min: 20},
	{prefix: "xoxe.", kind: "slack-token", tail: alnum | dash, min: 20},
	{prefix: "xapp-", kind: "slack-token", tail: alnum | dash, min: 20},
	{prefix: "AKIA", kind: "aws-access-key-id", tail: upper | digit, min: 16, max: 16},
	{prefix: "ASIA", kind: "aws-access-key-id", tail: upper | digit, min: 16, max: 16},
	{prefix: "AIza", kind: "google-api-key", tail: base64url, min: 35, max: 35},
	{prefix: "npm_", kind: "npm-token", tail: alnum, min: 36},
	{prefix: "hf_", kind: "huggingface-token", tail: alnum, min: 30},
	{prefix: "sk_live_", kind: "stripe-key", tail: alnum, min: 24},
	{prefix: "sk_test_", kind: "stripe-key", tail: alnum, min: 24},
	{prefix: "rk_live_", kind: "stripe-key", tail: alnum, min: 24},
	{prefix: "rk_test_", kind: "stripe-key", tail: alnum, min: 24},
	{prefix: "whsec_", kind: "stripe-key", tail: alnum, min: 24},
	{prefix: "SG.", kind: "sendgrid-key", tail: base64url | dot, min: 60, mixed: true},
	{prefix: "SK", kind: "twilio-key", tail: digit | hexLower, min: 32, max: 32},
	{prefix: "pypi-AgEIcHlwaS5vcmc", kind: "pypi-token", tail: base64url, min: 50},
	{prefix: "dop_v1_", kind: "digitalocean-token", tail: digit | hexLower, min: 64, max: 64},
	{prefix: "AGE-SECRET-KEY-1", kind: "age-secret-key", tail: upper | digit, min: 50},
	{prefix: "GOCSPX-", kind: "google-oauth-client-secret", tail: base64url, min: 24},
	{prefix: "shpat_", kind: "shopify-token", tail: alnum, min: 32},
	{prefix: "shpss_", kind: "shopify-token", tail: alnum, min: 32},
	{prefix: "shpca_", kind: "shopify-token", tail: alnum, min: 32},
	{prefix: "shppa_", kind: "shopify-token", tail: alnum, min: 32},
}

// rulesFor, the rules by their prefix's first byte, is in tables_gen.go.

// Value reports whether a variable's value looks like a credential and, if
// so, what kind. The detectors run in this order and the first that matches
// decides:
//
//  1. A known token format (see [Kind]) or a JWT, anywhere in the value at
//     the start of a word, so that "Bearer eyJ...", "--token=ghp_..." and
//     "https://oauth2:glpat-...@host" are caught.
//  2. A PEM private key: "-----BEGIN ", a label holding PRIVATE KEY, "-----".
//  3. A URL with a password in its userinfo, with a secret query parameter,
//     or an incoming webhook URL.
//  4. A credential in a structured value, found by its key: see
//     fieldSecret.
//  5. A long random-looking string: a run of at least 20 characters from the
//     base64 alphabets (letters, digits, '+', '/', '-', '_') that mixes
//     upper case, lower case and digits, changes between them in at least
//     one in three adjacent pairs (a random string does in three in five),
//     has a Shannon entropy of at least 3/4 of the most its length and
//     alphabet allow, does not read like words (most of its letter pairs
//     common in English), and is not the base64 of English text. In a path
//     (a run of those characters and dots that starts with '/' or '.') each
//     component is judged on its own, unless the run has fewer slashes than
//     one in ten characters and looks random as a whole (base64 that starts
//     with a slash). Not judged: values holding any PEM block (certificates
//     and public keys are public; private keys are caught above); runs of
//     hex digits and dashes, which are identifiers, not secrets (git and
//     content hashes, UUIDs, trace ids), and names made of words, numbers
//     and such hex strings (Linux-go-e3910c83...); subresource-integrity
//     hashes (sha512-...); Content-Security-Policy nonces (nonce-...); SSH
//     public keys; runs after h1:, sha256: and the like (hashes), after
//     -buildid (Go build ids) and after ;base64, (data: URLs).
//
// The last detector misses about 5% of random 20-character strings (they
// lack a digit or a case, or happen to read like words), about 1% of 32- to
// 40-character ones and almost none from 64 on. It misses hex secrets (some
// vendors issue 32 hex digits) and lower-case-only secrets altogether: to a
// detector they look like the identifiers that fill every environment. Their
// names usually give them away.
func Value(value string) (Kind, bool) {
	// Most values are short: each detector is skipped when the value is
	// shorter than the least it can find.
	if len(value) >= minTokenLen {
		if k, ok := knownToken(value); ok {
			return k, true
		}
	}
	pem := -1
	if len(value) >= len(pemBegin) {
		pem = strings.Index(value, pemBegin)
	}
	if pem >= 0 && pemPrivateKey(value[pem:]) {
		return "pem-private-key", true
	}
	if len(value) >= minURLSecretLen {
		if k, ok := urlSecret(value); ok {
			return k, true
		}
	}
	if len(value) >= minFieldLen && fieldSecret(value) {
		return "field-secret", true
	}
	if pem < 0 && len(value) >= minRandomLen && highEntropy(value) {
		return "high-entropy", true
	}
	return "", false
}

// minURLSecretLen is the length of the shortest URL that urlSecret flags:
// a://:p@ (a password needs a scheme, a ':' and an '@').
const minURLSecretLen = len("a://:p@")

// knownToken finds a token of a known format or a JWT at the start of a word
// of v.
func knownToken(v string) (Kind, bool) {
	start := true // v[i] starts a word
	run := true   // v[i] starts a run of base64url characters
	for i := 0; i < len(v); i++ {
		c := v[i]
		if start {
			s := v[i:]
			// A JWT is a base64url run of its own; checking only at the
			// start of runs keeps eyJ-eyJ-eyJ-... linear.
			if run && c == 'e' && isJWT(s) {
				return "jwt", true
			}
			for j := range rulesFor[c] {
				r := &rulesFor[c][j]
				if strings.HasPrefix(s, r.prefix) && r.matchTail(s[len(r.prefix):]) {
					return r.kind, true
				}
			}
		}
		start = classes[c]&alnum == 0
		run = classes[c]&base64url == 0
	}
	return "", false
}

func (r *tokenRule) matchTail(s string) bool {
	// Look no further than the rule needs, so that a value made of
	// prefixes (sk-sk-sk-...) costs linear time, not quadratic.
	limit := max(r.min, r.max+1)
	n, seen := span(s[:min(len(s), limit)], r.tail)
	if n < r.min {
		return false
	}
	if r.max > 0 && (n > r.max || n < len(s) && isAlnum(s[n])) {
		return false
	}
	return !r.mixed || seen&alnum == alnum
}

// minTokenLen, the length of the shortest text knownToken can find (a
// JWT's 13 bytes, or a rule's prefix and shortest tail), is in
// tables_gen.go.

// isJWT reports whether s starts with a JSON Web Token: a header that
// starts with eyJ (base64url of `{"`), a payload and a signature, joined by
// dots. The signature may be empty: an unsigned token still authenticates
// to a server that wrongly accepts "alg":"none".
func isJWT(s string) bool {
	if !strings.HasPrefix(s, "eyJ") {
		return false
	}
	n, _ := span(s, base64url)
	if n < 10 || n == len(s) || s[n] != '.' {
		return false
	}
	s = s[n+1:]
	n, _ = span(s, base64url)
	return n > 0 && n < len(s) && s[n] == '.'
}

// pemPrivateKey reports whether v holds the header of a PEM block whose
// label holds PRIVATE KEY: RSA, EC, OPENSSH, ENCRYPTED, PGP ... BLOCK.
func pemPrivateKey(v string) bool {
	const begin = "-----BEGIN "
	for {
		i := strings.Index(v, begin)
		if i < 0 {
			return false
		}
		v = v[i+len(begin):]
		end := strings.Index(v, "-----")
		if end < 0 {
			return false
		}
		if strings.Contains(v[:end], "PRIVATE KEY") {
			return true
		}
		v = v[end:]
	}
}

// urlSecret finds a URL in v that carries a secret: a password in its
// userinfo (scheme://user:password@host, the user possibly empty), a query
// parameter named like a credential, or a webhook's secret path.
func urlSecret(v string) (Kind, bool) {
	for i := strings.Index(v, "://"); i >= 0; {
		u, next := parseURL(v, i)
		switch {
		case !u.ok:
		case u.password < u.at:
			return "url-password", true
		case firstSecretParam(v, u.query, u.queryEnd) < u.queryEnd:
			return "url-query-secret", true
		case webhookSecret(v, u) < u.pathEnd:
			return "webhook-url", true
		}
		i = next
	}
	return "", false
}

// A urlParts holds the bounds of the parts of a URL in a text.
type urlParts struct {
	ok              bool // the "://" follows a scheme
	password, at    int  // the password is [password, at), empty when there is none
	host, hostEnd   int  // host and port
	pathEnd         int  // the path is [hostEnd, pathEnd)
	query, queryEnd int  // the query, after '?' and before '#'; empty when there is none
}

// parseURL parses the URL whose "://" is at s[i:]. It returns its parts and
// where the next "://" is, or -1. A URL ends at white space, a quote, '<',
// '>' or '`', or at the next "://" (whose query then is its own), so that no
// byte is looked at twice.
func parseURL(s string, i int) (u urlParts, next int) {
	start := i + len("://")
	end := len(s)
	next = strings.Index(s[start:], "://")
	if next >= 0 {
		next += start
		end = next
	}
	if i == 0 || !isAlnum(s[i-1]) {
		return u, next
	}
	u.ok = true
	for j := start; j < end; j++ {
		if urlStop[s[j]] {
			end = j
			break
		}
	}
	u.host, u.hostEnd = start, end
	for j := start; j < end; j++ {
		if c := s[j]; c == '/' || c == '?' || c == '#' {
			u.hostEnd = j
			break
		}
	}
	u.password, u.at = u.hostEnd, u.hostEnd
	if at := strings.LastIndexByte(s[start:u.hostEnd], '@'); at >= 0 {
		at += start
		if colon := strings.IndexByte(s[start:at], ':'); colon >= 0 && !placeholder(s[start+colon+1:at]) {
			u.password, u.at = start+colon+1, at
		}
		u.host = at + 1
	}
	u.pathEnd, u.query, u.queryEnd = end, end, end
	if j := strings.IndexAny(s[u.hostEnd:end], "?#"); j >= 0 {
		u.pathEnd = u.hostEnd + j
		if s[u.pathEnd] == '?' {
			u.query = u.pathEnd + 1
			if k := strings.IndexByte(s[u.query:end], '#'); k >= 0 {
				u.queryEnd = u.query + k
			}
		}
	}
	return u, next
}

// placeholder reports whether a URL's password stands for one rather than
// being one: masked (***), a variable (${DB_PASSWORD}, $PASS), a template
// ({{ .Password }}, <password>), or already masked ([MASKED:...], or [HIDDEN:...] as envsieve wrote it before).
func placeholder(pw string) bool {
	if pw == "" {
		return false
	}
	switch pw[0] {
	case '$', '<', '{', '[':
		return true
	}
	return strings.Trim(pw, "*") == ""
}

// urlStop holds the bytes that end a URL in a text.
var urlStop = func() (t [256]bool) {
	for _, c := range []byte(" \t\r\n\"'<>`") {
		t[c] = true
	}
	return t
}()

// firstSecretParam returns where the value of the first query parameter in
// s[from:to] that carries a secret starts, or to when none does. Such a
// parameter has a value and a name that is sensitive by [SensitiveName]
// (password, access_token, api_key, X-Amz-Credential) or is pwd or sig (an
// Azure shared access signature).
func firstSecretParam(s string, from, to int) int {
	for from < to {
		end := to
		if j := strings.IndexByte(s[from:to], '&'); j >= 0 {
			end = from + j
		}
		if eq := strings.IndexByte(s[from:end], '='); eq >= 0 && from+eq+1 < end {
			name := s[from : from+eq]
			if _, ok := SensitiveName(name); ok || equalFold(name, "pwd") || equalFold(name, "sig") {
				return from + eq + 1
			}
		}
		from = end + 1
	}
	return to
}

// webhookSecret returns where the secret part of the path of u starts when
// u is an incoming webhook, whose path is the secret (Slack, Discord,
// Microsoft Teams), or u.pathEnd when it is not one.
func webhookSecret(s string, u urlParts) int {
	host, path := s[u.host:u.hostEnd], s[u.hostEnd:u.pathEnd]
	var public string // the part of the path that is the same for everyone
	switch {
	case equalFold(host, "hooks.slack.com"):
		if len(path) <= len("/services/") {
			return u.pathEnd
		}
		public = "/"
		if hasPrefixFold(path, "/services/") {
			public = "/services/"
		}
	case equalFold(host, "discord.com"), equalFold(host, "discordapp.com"):
		public = "/api/webhooks/"
		if !hasPrefixFold(path, public) {
			return u.pathEnd
		}
	case hasSuffixFold(host, ".webhook.office.com"):
		public = "/"
	default:
		return u.pathEnd
	}
	return u.hostEnd + min(len(public), len(path))
}
