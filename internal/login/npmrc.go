package login

import (
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"
)

func init() {
	register(Format{
		Name:  "npmrc",
		Paths: []string{".npmrc"},
		Fake:  fakeNpmrc,
	})
}

// npmEnvRef is a value npm takes from the environment: it holds no secret.
var npmEnvRef = regexp.MustCompile(`^\$\{[A-Za-z_][A-Za-z0-9_]*\??\}$`)

// npmDefaultRegistry is where a registry-less credential goes when the
// file names no registry.
const npmDefaultRegistry = "registry.npmjs.org"

// npmLine is one "key = value" line of an .npmrc.
type npmLine struct {
	key        string
	value      string // unquoted
	vstart     int    // the value's bytes in the file, quotes excluded
	vend       int
	section    bool // the line lies under a [section]
	lineNumber int
}

// parseNpmrc reads an .npmrc as npm's ini reader does: "key=value" lines,
// ';' and '#' comment lines, [sections], CRLF or LF. A value may be quoted
// with '"' or '\”. It returns the key lines; a line it cannot read is an
// error.
func parseNpmrc(src string) ([]npmLine, error) {
	var out []npmLine
	section := false
	at := 0
	for n, line := range strings.SplitAfter(src, "\n") {
		start := at
		at += len(line)
		body := strings.TrimRight(line, "\r\n")
		t := strings.TrimSpace(body)
		if t == "" || t[0] == ';' || t[0] == '#' {
			continue
		}
		if t[0] == '[' {
			if !strings.HasSuffix(t, "]") {
				return nil, fmt.Errorf("line %d: not a section", n+1)
			}
			section = true
			continue
		}
		eq := strings.IndexByte(body, '=')
		if eq < 0 {
			// A key alone means "true"; it holds no value.
			out = append(out, npmLine{key: t, section: section, lineNumber: n + 1})
			continue
		}
		key := strings.TrimSpace(body[:eq])
		raw := body[eq+1:]
		lead, v := trimValue(raw)
		vstart := start + eq + 1 + lead
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
			vstart++
		}
		out = append(out, npmLine{key: key, value: v, vstart: vstart, vend: vstart + len(v), section: section, lineNumber: n + 1})
	}
	return out, nil
}

// npmAuthKey splits an auth key: "//host/path/:_authToken" into the scope
// and "_authToken"; a bare "_authToken" into "" and "_authToken". ok is
// false for any other key.
func npmAuthKey(key string) (scope, field string, ok bool) {
	for _, f := range []string{"_authToken", "_auth", "_password"} {
		if key == f {
			return "", f, true
		}
		if strings.HasSuffix(key, ":"+f) {
			return strings.TrimSuffix(key, ":"+f), f, true
		}
	}
	return "", "", false
}

// fakeNpmrc fakes an .npmrc: "//host/path/:_authToken=TOKEN" (sent as a
// Bearer token), ":_auth=BASE64(user:password)" (sent as it is, in Basic
// auth) and ":_password=BASE64(password)" (sent in Basic auth with the
// line's username). The token, or the password, is the secret: the fake
// file keeps each value's form (base64 stays base64, of the fake), so the
// broker swaps it after decoding Basic. Each is bound to its scope's host;
// a registry-less one to the file's "registry=" host, else
// registry.npmjs.org. "${NAME}" values pass (npm reads them from the
// environment), as does every other line. An auth key under a [section], a
// key npm may read as an auth key though it does not look like one (a ';',
// '#', quote, backslash or "${" in it, or a final "[]"), a key twice, a value with an escape, a comment character or a partial
// "${...}", or a base64 value that is not one, is an error.
func fakeNpmrc(real []byte, fake Faker) ([]byte, []Cred, error) {
	src := string(real)
	lines, err := parseNpmrc(src)
	if err != nil {
		return nil, nil, fmt.Errorf("npmrc: %w", err)
	}
	defaultHost := npmDefaultRegistry
	for _, l := range lines {
		if l.key == "registry" && !l.section && !npmEnvRef.MatchString(l.value) {
			if defaultHost, err = hostOfURL(l.value); err != nil {
				return nil, nil, fmt.Errorf("npmrc: line %d: registry: %w", l.lineNumber, err)
			}
		}
	}
	var edits []edit
	var creds []Cred
	seen := map[string]bool{}
	for _, l := range lines {
		scope, field, ok := npmAuthKey(l.key)
		if !ok {
			if npmKeyUnclear(l.key) && l.value != "" && !npmEnvRef.MatchString(l.value) {
				// npm may read this key as an auth key: ini cuts a key at
				// ';' or '#', unquotes and unescapes it and drops a final
				// "[]", and npm expands "${...}" in it.
				return nil, nil, fmt.Errorf("npmrc: line %d: a key npm's readers may read otherwise", l.lineNumber)
			}
			continue
		}
		if l.section {
			return nil, nil, fmt.Errorf("npmrc: line %d: a credential under a section", l.lineNumber)
		}
		if seen[l.key] {
			return nil, nil, fmt.Errorf("npmrc: line %d: a credential key twice", l.lineNumber)
		}
		seen[l.key] = true
		if l.value == "" || npmEnvRef.MatchString(l.value) {
			continue
		}
		if strings.ContainsAny(l.value, "\\;#\"'") || strings.Contains(l.value, "${") {
			return nil, nil, fmt.Errorf("npmrc: line %d: a credential value npm's readers may read differently", l.lineNumber)
		}
		host := defaultHost
		if scope != "" {
			if !strings.HasPrefix(scope, "//") {
				return nil, nil, fmt.Errorf("npmrc: line %d: a credential scoped to no registry", l.lineNumber)
			}
			if host, err = hostOfURL(scope); err != nil {
				return nil, nil, fmt.Errorf("npmrc: line %d: %w", l.lineNumber, err)
			}
		}
		name := "npmrc:" + l.key
		var secret, text string
		switch field {
		case "_authToken":
			secret = l.value
			text = fake(name, secret)
		case "_auth":
			raw, err := base64.StdEncoding.DecodeString(l.value)
			user, pass, ok := strings.Cut(string(raw), ":")
			if err != nil || !ok || pass == "" {
				return nil, nil, fmt.Errorf("npmrc: line %d: _auth is not base64 of user:password", l.lineNumber)
			}
			secret = pass
			text = base64.StdEncoding.EncodeToString([]byte(user + ":" + fake(name, pass)))
		case "_password":
			raw, err := base64.StdEncoding.DecodeString(l.value)
			if err != nil || len(raw) == 0 {
				return nil, nil, fmt.Errorf("npmrc: line %d: _password is not base64", l.lineNumber)
			}
			secret = string(raw)
			text = base64.StdEncoding.EncodeToString([]byte(fake(name, secret)))
		}
		edits = append(edits, edit{l.vstart, l.vend, text})
		creds = append(creds, Cred{Name: name, Real: secret, Hosts: []string{host}})
	}
	return []byte(applyEdits(src, edits)), creds, nil
}

// npmKeyUnclear reports whether npm may read key as another key than it
// looks: it holds a comment character, a quote, an escape or a "${", or
// ends in "[]".
func npmKeyUnclear(key string) bool {
	return strings.ContainsAny(key, ";#\"'\\") || strings.Contains(key, "${") || strings.HasSuffix(key, "[]")
}
