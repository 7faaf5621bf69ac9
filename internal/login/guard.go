package login

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"unicode"
)

// check is the last word on every fake file: each credential has a name
// that does not hold its value, a non-empty real value and a host, and the
// file holds no real value,
// raw, percent-encoded or within base64 at any alignment. A real value
// that is also elsewhere in the file (a login equal to the password) or
// too short to hide therefore masks the file: fail closed.
func check(out []byte, creds []Cred) error {
	for _, c := range creds {
		if c.Name == "" || c.Real == "" || len(c.Hosts) == 0 {
			return fmt.Errorf("a credential without a name, a value or a host")
		}
		if leaks(c.Name, c.Real) {
			return fmt.Errorf("a credential's name would hold its value")
		}
		if leaks(string(out), c.Real) {
			return fmt.Errorf("credential %q: the fake file would still hold its real value", c.Name)
		}
	}
	return nil
}

// readBack parses the fake file out again with the format's parse: it
// must hold the same credentials, by name and hosts, whose values are the
// fakes. A format that edited the wrong bytes (and so left part of a real
// value, or broke the file) fails here.
func readBack(parse func([]byte, Faker) ([]byte, []Cred, error), out []byte, creds []Cred, fake Faker) error {
	_, again, err := parse(out, func(_, v string) string { return v })
	if err != nil {
		return fmt.Errorf("the fake file does not parse: %w", err)
	}
	if len(again) != len(creds) {
		return errors.New("the fake file does not read back as the fakes")
	}
	for i, c := range creds {
		a := again[i]
		if a.Name != c.Name || a.Real != fake(c.Name, c.Real) || strings.Join(a.Hosts, " ") != strings.Join(c.Hosts, " ") {
			return errors.New("the fake file does not read back as the fakes")
		}
	}
	return nil
}

// leaks reports whether s holds real in a form a client may decode: as it
// is, percent-encoded (path, query or userinfo rules), or base64-encoded
// (standard or URL alphabet, padded or not, at any of the three byte
// alignments, so a real value inside "user:password" is found too).
func leaks(s, real string) bool {
	if strings.Contains(s, real) {
		return true
	}
	for _, e := range []string{url.QueryEscape(real), url.PathEscape(real), strings.TrimPrefix(url.UserPassword("", real).String(), ":")} {
		if strings.Contains(s, e) {
			return true
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for k := 0; k < 3; k++ {
			b := make([]byte, k, k+len(real))
			b = append(b, real...)
			full := enc.EncodeToString(b)
			// The characters whose six bits all come from real.
			start, end := (k*8+5)/6, len(b)*8/6
			if end-start >= 4 && strings.Contains(s, full[start:end]) {
				return true
			}
		}
	}
	return false
}

// errNoHost is a credential the file binds to no host: it cannot be
// brokered, so the file is masked.
var errNoHost = errors.New("a credential bound to no host")

// normHost normalizes a host as the broker compares it: lower case, a
// default port (80, 443) dropped, IPv6 brackets kept. It refuses what is
// not a host name or address.
func normHost(h string) (string, error) {
	h = strings.ToLower(strings.TrimSpace(h))
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		host, port = h, ""
		if strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]") {
			host = h[1 : len(h)-1]
		}
	}
	if port == "80" || port == "443" {
		port = ""
	}
	if !validHost(host) {
		return "", fmt.Errorf("not a host name")
	}
	if port != "" {
		for _, c := range port {
			if c < '0' || c > '9' {
				return "", fmt.Errorf("not a port")
			}
		}
		return net.JoinHostPort(host, port), nil
	}
	if strings.Contains(host, ":") {
		return "[" + host + "]", nil
	}
	return host, nil
}

// validHost accepts DNS names (letters, digits, '-', '_', '.') and IP
// addresses.
func validHost(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	if net.ParseIP(h) != nil {
		return true
	}
	for _, c := range h {
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '.', c == '_':
		default:
			return false
		}
	}
	return !strings.HasPrefix(h, ".") && !strings.HasSuffix(h, ".") && !strings.Contains(h, "..")
}

// hostOfURL returns the normalized host of a URL ("https://h:443/p") or of
// a scheme-less one ("//h/p", "h/p", "h:5000").
func hostOfURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "://") {
		s = "//" + strings.TrimPrefix(s, "//")
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil {
		return "", fmt.Errorf("not a URL with a host")
	}
	return normHost(u.Host)
}

// trimValue trims white space from both ends of raw, as the INI readers
// do, and returns how many bytes the start lost and the value.
func trimValue(raw string) (int, string) {
	left := strings.TrimLeftFunc(raw, unicode.IsSpace)
	return len(raw) - len(left), strings.TrimRightFunc(left, unicode.IsSpace)
}

// loneCR reports whether b holds a '\r' not followed by '\n': npm's ini
// reader and Python's text files break lines there, Go's readers here do
// not, so a line could hide from the parse.
func loneCR(b []byte) bool {
	for i, c := range b {
		if c == '\r' && (i+1 == len(b) || b[i+1] != '\n') {
			return true
		}
	}
	return false
}
