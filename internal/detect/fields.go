package detect

import "strings"

// minFieldLen is the length of the shortest value fieldSecret flags: a
// one-letter key word is not one, so "pw=abcd" (7 bytes) is about the least.
const minFieldLen = 7

// fieldSecret reports whether v carries a credential in a structured form,
// found by its key rather than by the look of the value:
//
//   - key=value pairs, as in --password=..., libpq's "password=...", SQL
//     Server's "Pwd=...;" and Azure's "AccountKey=...;";
//   - "key": value and key: value fields, as in JSON and YAML;
//   - an Authorization header, or a value that is a Bearer, Token or Basic
//     credential on its own;
//   - a netrc line ("machine ... login ... password ...");
//   - user:password as the whole value (a password of eight or more
//     characters mixing upper case, lower case and digits).
//
// A key counts when its last word is a sensitive one (see
// [SensitiveName]: password, client_secret, api-key, AccountKey, Pwd,
// token, auth), so that --password-file=... and StrictHostKeyChecking=...
// do not. A value counts when it is not empty, not a placeholder
// (${VAR}, $VAR, <...>, {{...}}, ***, %(x)s), not a path (/, ~/ or ./), not
// only digits and not a word such as true, none or null.
func fieldSecret(v string) bool {
	eq, colon := strings.IndexByte(v, '='), strings.IndexByte(v, ':')
	if bearerValue(v) || colon >= 0 && userPassword(v) || netrcLine(v) {
		return true
	}
	// Visit each '=' and ':' in order; IndexByte finds the next of each,
	// and is asked again only once the scan has passed it.
	for eq >= 0 || colon >= 0 {
		i := eq
		if i < 0 || colon >= 0 && colon < i {
			i = colon
		}
		if i == eq {
			if eq = strings.IndexByte(v[i+1:], '='); eq >= 0 {
				eq += i + 1
			}
		} else if colon = strings.IndexByte(v[i+1:], ':'); colon >= 0 {
			colon += i + 1
		}
		c := v[i]
		key, quoted, ok := keyBefore(v, i)
		if !ok || !fieldKey(key) {
			continue
		}
		j := i + 1
		if c == ':' && !quoted && (j >= len(v) || (v[j] != ' ' && v[j] != '\t')) {
			continue // "https:", "host:8080", PATH lists: not a field
		}
		for j < len(v) && (v[j] == ' ' || v[j] == '\t') {
			j++
		}
		val := valueAt(v, j)
		if lastWordFold(key, "AUTHORIZATION") || lastWordFold(key, "AUTH") {
			if bearerValue(v[j:]) {
				return true
			}
		}
		if secretLike(val) {
			return true
		}
	}
	return false
}

// keyBefore returns the key that ends just before v[i] (a '=' or ':'),
// skipping a closing quote; quoted says it was quoted. The key must start
// the value or follow a delimiter, and loses its leading dashes (--flag).
func keyBefore(v string, i int) (key string, quoted, ok bool) {
	end := i
	if end > 0 && (v[end-1] == '"' || v[end-1] == '\'') {
		quoted = true
		end--
	}
	start := end
	for start > 0 && keyByte(v[start-1]) {
		start--
	}
	if start == end {
		return "", false, false
	}
	if quoted {
		if start == 0 || v[start-1] != v[end] {
			return "", false, false
		}
		start--
	}
	if start > 0 && !delimiter(v[start-1]) {
		return "", false, false
	}
	key = strings.TrimLeft(v[start:end], "-\"'")
	return key, quoted, key != ""
}

func keyByte(c byte) bool { return isAlnum(c) || c == '_' || c == '-' || c == '.' }

func delimiter(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\r', ';', '&', ',', '{', '(', '[', '?':
		return true
	}
	return false
}

// fieldKey reports whether key names a credential by its last word.
func fieldKey(key string) bool {
	last := ""
	for start, end := nextWord(key, 0); start < end; start, end = nextWord(key, end) {
		last = key[start:end]
	}
	return last != "" && sensitiveWord(last)
}

// lastWordFold reports whether key's last word is w.
func lastWordFold(key, w string) bool {
	last := ""
	for start, end := nextWord(key, 0); start < end; start, end = nextWord(key, end) {
		last = key[start:end]
	}
	return equalFold(last, w)
}

// valueAt returns the value that starts at v[j]: up to the matching quote
// when it is quoted, else up to white space or a separator.
func valueAt(v string, j int) string {
	if j >= len(v) {
		return ""
	}
	if q := v[j]; q == '"' || q == '\'' {
		if k := strings.IndexByte(v[j+1:], q); k >= 0 {
			return v[j+1 : j+1+k]
		}
		return v[j+1:]
	}
	k := j
	for k < len(v) {
		switch v[k] {
		case ' ', '\t', '\n', '\r', ';', '&', ',', '}', ')', ']', '"', '\'':
			return v[j:k]
		}
		k++
	}
	return v[j:]
}

// secretLike reports whether a field's value is one worth withholding.
func secretLike(val string) bool {
	if len(val) < 4 || placeholder(val) || val[0] == '%' {
		return false
	}
	if val[0] == '/' || strings.HasPrefix(val, "~/") || strings.HasPrefix(val, "./") {
		return false
	}
	digits := true
	for i := 0; i < len(val); i++ {
		digits = digits && isDigit(val[i])
	}
	if digits {
		return false
	}
	return !equalsAny(val, notValues)
}

// notValues are words a field holds in place of a value.
var notValues = []string{"true", "false", "yes", "none", "null", "nil", "empty", "unset", "required", "optional"}

// bearerValue reports whether v, after white space, is an HTTP credential:
// Bearer, Token or Basic and a token of eight or more characters.
func bearerValue(v string) bool {
	v = strings.TrimLeft(v, " \t")
	for _, scheme := range []string{"Bearer ", "Token ", "Basic "} {
		if len(v) > len(scheme) && equalFold(v[:len(scheme)], scheme) {
			tok := strings.TrimLeft(v[len(scheme):], " ")
			n := 0
			for n < len(tok) && (isAlnum(tok[n]) || strings.IndexByte("-._~+/=", tok[n]) >= 0) {
				n++
			}
			return n >= 8 && !placeholder(tok[:n])
		}
	}
	return false
}

// netrcLine reports whether v holds a netrc entry with a password: the word
// password (or passwd) followed by a value, in a text that also has the
// word machine, default or login.
func netrcLine(v string) bool {
	if !strings.Contains(v, "passw") {
		return false
	}
	netrc, password := false, false
	for i := 0; i < len(v); {
		for i < len(v) && isSpace(v[i]) {
			i++
		}
		j := i
		for j < len(v) && !isSpace(v[j]) {
			j++
		}
		if i == j {
			break
		}
		switch w := v[i:j]; {
		case password:
			if !placeholder(w) && netrc {
				return true
			}
			password = false
		case w == "machine" || w == "default" || w == "login":
			netrc = true
		case w == "password" || w == "passwd":
			password = true
		}
		i = j
	}
	return false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// userPassword reports whether the whole of v is user:password with a
// password of eight or more characters mixing upper case, lower case and
// digits, which an image tag (node:22-alpine), a port (host:8080) or a time
// does not.
func userPassword(v string) bool {
	i := strings.IndexByte(v, ':')
	if i < 1 || i > 64 || strings.ContainsAny(v, "/ \t\n") || strings.Count(v, ":") != 1 {
		return false
	}
	user, pw := v[:i], v[i+1:]
	if len(pw) < 8 || placeholder(pw) {
		return false
	}
	for j := 0; j < len(user); j++ {
		if c := user[j]; !isAlnum(c) && strings.IndexByte("._@+-", c) < 0 {
			return false
		}
	}
	var up, lo, dg bool
	for j := 0; j < len(pw); j++ {
		c := pw[j]
		up, lo, dg = up || isUpper(c), lo || isLower(c), dg || isDigit(c)
	}
	return up && lo && dg
}
