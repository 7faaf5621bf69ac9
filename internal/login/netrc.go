package login

import (
	"bytes"
	"fmt"
	"strings"
)

func init() {
	register(Format{
		Name:  "netrc",
		Paths: []string{".netrc"},
		Fake:  fakeNetrc,
	})
}

// netrcToken is one word of a .netrc, where it lies and what it means.
type netrcToken struct {
	start, end int // the raw bytes, quotes included
	value      string
	quoted     bool
}

// lexNetrc splits a .netrc into words as curl and Python's netrc module
// read it: words are separated by blanks and newlines; a word starting
// with '"' runs to the next unescaped '"', a backslash escaping the next
// byte; a word starting with '#' where a keyword is expected is a comment
// to the end of the line (the parser decides; see fakeNetrc). A macdef's
// body (the lines after it, up to an empty line) is one token.
func lexNetrc(src string, pos int) (netrcToken, int, error) {
	for pos < len(src) && isNetrcBlank(src[pos]) {
		pos++
	}
	if pos >= len(src) {
		return netrcToken{}, pos, nil
	}
	start := pos
	if src[pos] == '"' {
		var b strings.Builder
		for pos++; ; pos++ {
			if pos >= len(src) || src[pos] == '\n' {
				return netrcToken{}, pos, fmt.Errorf("offset %d: unterminated quoted word", start)
			}
			c := src[pos]
			if c == '"' {
				pos++
				break
			}
			if c == '\\' {
				pos++
				if pos >= len(src) {
					return netrcToken{}, pos, fmt.Errorf("offset %d: unterminated quoted word", start)
				}
				c = src[pos]
			}
			b.WriteByte(c)
		}
		if pos < len(src) && !isNetrcBlank(src[pos]) {
			return netrcToken{}, pos, fmt.Errorf("offset %d: text after a quoted word", start)
		}
		return netrcToken{start: start, end: pos, value: b.String(), quoted: true}, pos, nil
	}
	for pos < len(src) && !isNetrcBlank(src[pos]) {
		if src[pos] == '"' || src[pos] == '\\' {
			// curl and Python disagree on these inside a bare word.
			return netrcToken{}, pos, fmt.Errorf("offset %d: a quote or backslash inside a word", start)
		}
		pos++
	}
	return netrcToken{start: start, end: pos, value: src[start:pos]}, pos, nil
}

func isNetrcBlank(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// fakeNetrc fakes a .netrc (netrc(5), curl's and Python's readers):
// "machine HOST login USER password SECRET account SECRET", "default ...",
// "macdef NAME" followed by its body up to an empty line. Each machine's
// password (and account, a second secret) becomes a fake bound to that
// machine; the login, macros and comments pass as they are. A password in
// a "default" entry binds no host and masks the file: it would go to any
// host a client asks for. A password before any machine, a keyword without
// its value, or a word the readers disagree on (a quote or backslash inside
// a bare word, a '#' that does not begin its line) is an error.
func fakeNetrc(real []byte, fake Faker) ([]byte, []Cred, error) {
	src := string(real)
	var out bytes.Buffer
	var creds []Cred
	copied := 0
	entry, host := 0, "" // host "" before any machine; "*" in a default entry
	seen := map[string]int{}
	for pos := 0; ; {
		tok, next, err := lexNetrc(src, pos)
		if err != nil {
			return nil, nil, fmt.Errorf("netrc: %w", err)
		}
		if tok.end == 0 {
			break
		}
		pos = next
		if !tok.quoted && strings.HasPrefix(tok.value, "#") {
			// A comment, to the end of the line, for Python; curl takes
			// only a line that begins with '#' for one, and reads on
			// after a '#' elsewhere ("login u # password p" is a
			// password to curl). Only a comment both agree on passes.
			if tok.start > 0 && src[tok.start-1] != '\n' {
				return nil, nil, fmt.Errorf("netrc: offset %d: a '#' the readers disagree on", tok.start)
			}
			if i := strings.IndexByte(src[pos:], '\n'); i >= 0 {
				pos += i
			} else {
				pos = len(src)
			}
			continue
		}
		keyword := tok.value
		if tok.quoted {
			return nil, nil, fmt.Errorf("netrc: offset %d: a quoted word where a keyword belongs", tok.start)
		}
		switch keyword {
		case "machine", "default", "login", "password", "account", "macdef":
		default:
			return nil, nil, fmt.Errorf("netrc: offset %d: unknown keyword", tok.start)
		}
		if keyword == "default" {
			entry++
			host = "*"
			continue
		}
		val, next, err := lexNetrc(src, pos)
		if err != nil {
			return nil, nil, fmt.Errorf("netrc: %w", err)
		}
		if val.end == 0 {
			return nil, nil, fmt.Errorf("netrc: offset %d: %s without a value", tok.start, keyword)
		}
		pos = next
		switch keyword {
		case "machine":
			h, err := normHost(val.value)
			if err != nil {
				return nil, nil, fmt.Errorf("netrc: offset %d: machine: %w", val.start, err)
			}
			entry++
			host = h
		case "macdef":
			// The body runs to the first blank line (or the end). Readers
			// differ on a line of blanks or a CRLF; the earliest end is
			// taken, so what a reader may still count as body is parsed
			// as entries here (and a body line is no keyword: an error).
			if i := strings.IndexByte(src[pos:], '\n'); i >= 0 {
				pos += i + 1
				for pos < len(src) {
					line, _, _ := strings.Cut(src[pos:], "\n")
					if strings.TrimSpace(line) == "" {
						break
					}
					pos += len(line) + 1
				}
			} else {
				pos = len(src)
			}
			if pos > len(src) {
				pos = len(src)
			}
		case "password", "account":
			if host == "" {
				return nil, nil, fmt.Errorf("netrc: offset %d: %s before any machine", tok.start, keyword)
			}
			if host == "*" {
				return nil, nil, fmt.Errorf("netrc: offset %d: %s in the default entry: %w", tok.start, keyword, errNoHost)
			}
			if val.value == "" {
				continue
			}
			if !val.quoted && val.value[0] == '#' {
				return nil, nil, fmt.Errorf("netrc: offset %d: a %s the readers may take for a comment", val.start, keyword)
			}
			name := "netrc:" + host
			if keyword == "account" {
				name += ":account"
			}
			seen[name]++
			if seen[name] > 1 {
				// Clients use the first entry of a host (or the one of
				// the login they ask for); each gets a name of its own.
				name += fmt.Sprintf("#%d", entry)
			}
			f := fake(name, val.value)
			out.WriteString(src[copied:val.start])
			out.WriteString(netrcWord(f, val.quoted))
			copied = val.end
			creds = append(creds, Cred{Name: name, Real: val.value, Hosts: []string{host}})
		}
	}
	out.WriteString(src[copied:])
	return out.Bytes(), creds, nil
}

// netrcWord writes a fake as a word: bare if it was bare and needs no
// quoting, else quoted with '"' and '\' escaped.
func netrcWord(s string, quoted bool) string {
	if !quoted && s != "" && !strings.ContainsAny(s, " \t\r\n\f\v\"\\") && s[0] != '#' {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}
