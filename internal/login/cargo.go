package login

import (
	"errors"
	"fmt"
	"strings"
)

func init() {
	register(Format{
		Name:  "cargo-credentials",
		Paths: []string{".cargo/credentials.toml", ".cargo/credentials"},
		Fake:  fakeCargoCredentials,
	})
}

// cratesIO is where cargo sends the token of [registry]: crates.io's API
// (https://crates.io/api/v1/...).
const cratesIO = "crates.io"

// tomlKey reads a TOML key (bare, "basic" or 'literal' parts joined by
// dots) at the start of s and returns its parts and what follows. A basic
// key with an escape is refused.
func tomlKey(s string) ([]string, string, error) {
	var parts []string
	for {
		s = strings.TrimLeft(s, " \t")
		if s == "" {
			return nil, "", errors.New("a key expected")
		}
		switch s[0] {
		case '"', '\'':
			end := strings.IndexByte(s[1:], s[0])
			if end < 0 || (s[0] == '"' && strings.ContainsRune(s[1:end+1], '\\')) {
				return nil, "", errors.New("a quoted key not understood")
			}
			parts = append(parts, s[1:end+1])
			s = s[end+2:]
		default:
			i := 0
			for i < len(s) && (s[i] == '_' || s[i] == '-' || 'a' <= s[i] && s[i] <= 'z' || 'A' <= s[i] && s[i] <= 'Z' || '0' <= s[i] && s[i] <= '9') {
				i++
			}
			if i == 0 {
				return nil, "", errors.New("a key expected")
			}
			parts = append(parts, s[:i])
			s = s[i:]
		}
		s = strings.TrimLeft(s, " \t")
		if !strings.HasPrefix(s, ".") {
			return parts, s, nil
		}
		s = s[1:]
	}
}

// tomlRestOK reports whether s, after a value, holds only blanks and a
// comment.
func tomlRestOK(s string) bool {
	s = strings.TrimLeft(s, " \t")
	return s == "" || s[0] == '#'
}

// fakeCargoCredentials fakes cargo's credentials.toml (and its older name,
// credentials): [registry]'s token (crates.io's) becomes a fake bound to
// crates.io; cargo sends it as the Authorization header. A named
// registry's token ([registries.NAME] token) is an error, and so the file
// is masked: its host lies in ~/.cargo/config.toml (the registry's index
// URL), which this format does not see, and a token bound to no host
// cannot be brokered. An asymmetric "secret-key" signs on the client and
// cannot be brokered either: an error. Other keys pass. The file is read
// as the subset of TOML cargo writes: [tables], key = value on one line,
// comments; a string spread over lines, an array or inline table left
// open at the end of its line, a secret in an inline table, or a
// "basic string" secret with an escape is an error.
func fakeCargoCredentials(real []byte, fake Faker) ([]byte, []Cred, error) {
	src := string(real)
	var edits []edit
	var creds []Cred
	var table []string
	seen := map[string]bool{}
	at := 0
	for n, line := range strings.SplitAfter(src, "\n") {
		start := at
		at += len(line)
		body := strings.TrimRight(line, "\r\n")
		t := strings.TrimLeft(body, " \t")
		if t == "" || t[0] == '#' {
			continue
		}
		if t[0] == '[' {
			if strings.HasPrefix(t, "[[") {
				return nil, nil, fmt.Errorf("cargo-credentials: line %d: an array of tables", n+1)
			}
			parts, rest, err := tomlKey(t[1:])
			if err != nil || !strings.HasPrefix(rest, "]") || !tomlRestOK(rest[1:]) {
				return nil, nil, fmt.Errorf("cargo-credentials: line %d: not a table header", n+1)
			}
			table = parts
			continue
		}
		parts, rest, err := tomlKey(t)
		if err != nil || !strings.HasPrefix(rest, "=") {
			return nil, nil, fmt.Errorf("cargo-credentials: line %d: not a key = value line", n+1)
		}
		path := append(append([]string{}, table...), parts...)
		value := strings.TrimLeft(rest[1:], " \t")
		vstart := start + len(body) - len(value)
		if strings.HasPrefix(value, `"""`) || strings.HasPrefix(value, "'''") {
			return nil, nil, fmt.Errorf("cargo-credentials: line %d: a string over several lines", n+1)
		}
		kind := cargoSecret(path)
		if kind == "" {
			if len(path) > 0 && (path[0] == "registry" || path[0] == "registries") && strings.HasPrefix(value, "{") {
				return nil, nil, fmt.Errorf("cargo-credentials: line %d: a registry in an inline table", n+1)
			}
			if (strings.HasPrefix(value, "[") || strings.HasPrefix(value, "{")) && !balanced(value) {
				return nil, nil, fmt.Errorf("cargo-credentials: line %d: a value over several lines", n+1)
			}
			continue
		}
		if kind != "token" {
			return nil, nil, fmt.Errorf("cargo-credentials: line %d: %s: %w", n+1, kind, errNoHost)
		}
		if seen[strings.Join(path, ".")] {
			return nil, nil, fmt.Errorf("cargo-credentials: line %d: a token twice", n+1)
		}
		seen[strings.Join(path, ".")] = true
		if value == "" || (value[0] != '"' && value[0] != '\'') {
			return nil, nil, fmt.Errorf("cargo-credentials: line %d: a token that is not a string", n+1)
		}
		end := strings.IndexByte(value[1:], value[0])
		if end < 0 || (value[0] == '"' && strings.ContainsRune(value[1:end+1], '\\')) || !tomlRestOK(value[end+2:]) {
			return nil, nil, fmt.Errorf("cargo-credentials: line %d: a token string not understood", n+1)
		}
		secret := value[1 : end+1]
		if secret == "" {
			continue
		}
		name := "cargo:crates.io"
		f := fake(name, secret)
		if strings.ContainsRune(f, rune(value[0])) {
			return nil, nil, fmt.Errorf("cargo-credentials: line %d: a token string not understood", n+1)
		}
		edits = append(edits, edit{vstart + 1, vstart + 1 + len(secret), f})
		creds = append(creds, Cred{Name: name, Real: secret, Hosts: []string{cratesIO}})
	}
	return []byte(applyEdits(src, edits)), creds, nil
}

// cargoSecret names the secret at path: "token" for crates.io's,
// "a named registry's token" or "secret-key" for those that cannot be
// brokered, "" for what is no secret.
func cargoSecret(path []string) string {
	switch {
	case len(path) == 2 && path[0] == "registry" && path[1] == "token":
		return "token"
	case len(path) == 3 && path[0] == "registries" && path[2] == "token":
		return "a named registry's token"
	case len(path) >= 2 && (path[0] == "registry" || path[0] == "registries") && path[len(path)-1] == "secret-key":
		return "secret-key"
	}
	return ""
}

// balanced reports whether the brackets of a one-line array or inline
// table close on the line (strings skipped).
func balanced(s string) bool {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\'':
			j := i + 1
			for j < len(s) && s[j] != c {
				if c == '"' && s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return false
			}
			i = j
		case '[', '{':
			depth++
		case ']', '}':
			depth--
			if depth == 0 {
				return true
			}
		case '#':
			return false
		}
	}
	return false
}
