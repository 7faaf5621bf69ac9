package login

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"math/rand"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// fakeOf stands in for broker.Fake: the same shape (a letter for a letter,
// a digit for a digit, anything else kept), derived from the name, and
// never the same character where it has an alphabet.
func fakeOf(name, real string) string {
	h := sha256.Sum256([]byte(name))
	b := []byte(real)
	for i, c := range b {
		k := h[i%len(h)]
		switch {
		case 'a' <= c && c <= 'z':
			b[i] = 'a' + (c-'a'+1+k%25)%26
		case 'A' <= c && c <= 'Z':
			b[i] = 'A' + (c-'A'+1+k%25)%26
		case '0' <= c && c <= '9':
			b[i] = '0' + (c-'0'+1+k%9)%10
		}
	}
	return string(b)
}

// wantCred is a credential a test expects.
type wantCred struct {
	name, real string
	hosts      []string
}

// fakerCase is one row of a format's table.
type fakerCase struct {
	name  string
	in    string
	creds []wantCred
	// out is the fake file; "" means in with each real value replaced by
	// its fake, in order.
	out     string
	wantErr bool
}

// runFakerCases runs a format's table through the registered (checked)
// Fake and holds each result to the package's promises.
func runFakerCases(t *testing.T, format string, cases []fakerCase) {
	t.Helper()
	f, ok := formats[format]
	if !ok {
		t.Fatalf("format %q not registered", format)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, creds, err := f.Fake([]byte(tc.in), fakeOf)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("no error; fake file:\n%s", out)
				}
				for _, w := range tc.creds {
					if strings.Contains(err.Error(), w.real) {
						t.Fatalf("the error holds a real value")
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []wantCred
			for _, c := range creds {
				got = append(got, wantCred{c.Name, c.Real, c.Hosts})
			}
			if !reflect.DeepEqual(got, tc.creds) && !(len(got) == 0 && len(tc.creds) == 0) {
				t.Fatalf("creds:\n got %q\nwant %q", got, tc.creds)
			}
			want := tc.out
			if want == "" {
				rest, done := tc.in, ""
				for _, w := range tc.creds {
					i := strings.Index(rest, w.real)
					if i < 0 {
						t.Fatalf("test: %q not in the input", w.name)
					}
					done += rest[:i] + fakeOf(w.name, w.real)
					rest = rest[i+len(w.real):]
				}
				want = done + rest
			}
			if string(out) != want {
				t.Fatalf("fake file:\n got %q\nwant %q", out, want)
			}
			checkInvariants(t, format, []byte(tc.in), out, creds)
		})
	}
}

// checkInvariants holds one result to the promises: no real value in the
// fake file in any form, every real value non-empty and from the input,
// and the fake file parses, with the same format, to the same credentials
// whose values are the fakes.
func checkInvariants(t *testing.T, format string, in, out []byte, creds []Cred) {
	t.Helper()
	for _, c := range creds {
		if c.Real == "" || c.Name == "" || len(c.Hosts) == 0 {
			t.Fatalf("credential %q: empty field", c.Name)
		}
		if !leaks(string(in), c.Real) && !leaks(unescape(string(in)), c.Real) && !leaks(unescapeJSON(string(in)), c.Real) &&
			!leaks(unpercent(string(in)), c.Real) && !strings.Contains(unbase64(string(in)), c.Real) {
			t.Fatalf("credential %q: its value is not in the input", c.Name)
		}
		if leaks(string(out), c.Real) {
			t.Fatalf("credential %q: the fake file holds its real value", c.Name)
		}
		if strings.Contains(c.Name, c.Real) {
			t.Fatalf("credential %q: the name holds the value", c.Name)
		}
	}
	again, creds2, err := unchecked[format](out, fakeOf)
	if err != nil {
		t.Fatalf("the fake file does not parse: %v", err)
	}
	if len(creds2) != len(creds) {
		t.Fatalf("the fake file holds %d credentials, the real one %d", len(creds2), len(creds))
	}
	for i, c := range creds {
		c2 := creds2[i]
		if c2.Name != c.Name || !reflect.DeepEqual(c2.Hosts, c.Hosts) || c2.Real != fakeOf(c.Name, c.Real) {
			t.Fatalf("credential %d: the fake file parses to %q %q, want %q %q and its fake", i, c2.Name, c2.Hosts, c.Name, c.Hosts)
		}
	}
	_ = again
}

// unescape resolves the escapes of the formats' quoted strings, for the
// test that a real value came from the input: '\uXXXX' (JSON), '\x'
// (a backslash escaping the next byte) and two single quotes (YAML's quote within single quotes).
func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && i+5 < len(s) && s[i+1] == 'u':
			if r, err := strconv.ParseUint(s[i+2:i+6], 16, 16); err == nil {
				b.WriteRune(rune(r))
				i += 5
				continue
			}
			b.WriteByte(s[i+1])
			i++
		case c == '\\' && i+1 < len(s):
			b.WriteByte(s[i+1])
			i++
		case c == '\'' && i+1 < len(s) && s[i+1] == '\'':
			b.WriteByte(c)
			i++
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// unescapeJSON resolves the escapes of every JSON string in s.
func unescapeJSON(s string) string {
	var b strings.Builder
	for _, q := range regexp.MustCompile(`"(?:[^"\\]|\\.)*"`).FindAllString(s, -1) {
		var v string
		if json.Unmarshal([]byte(q), &v) == nil {
			b.WriteString(v)
			b.WriteByte(0)
		}
	}
	return b.String()
}

// unpercent decodes every %XX of s, whatever the case of its digits.
func unpercent(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(v))
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unbase64 decodes every run of base64 characters of s that decodes.
func unbase64(s string) string {
	var b strings.Builder
	for _, run := range regexp.MustCompile(`[A-Za-z0-9+/]+=*`).FindAllString(s, -1) {
		if raw, err := base64.StdEncoding.DecodeString(run); err == nil {
			b.Write(raw)
			b.WriteByte(0)
		}
	}
	return b.String()
}

// FuzzFakers feeds every format anything: a result without an error keeps
// every promise (checkInvariants), and for the YAML formats yaml.v3 finds
// no real credential in the fake file either.
func FuzzFakers(f *testing.F) {
	all := Formats()
	for i, fm := range all {
		for _, s := range fuzzSeeds[fm.Name] {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, in []byte) {
		fm := all[int(which)%len(all)]
		out, creds, err := fm.Fake(in, fakeOf)
		if err != nil {
			if out != nil || creds != nil {
				t.Fatalf("an error with a result")
			}
			return
		}
		checkInvariants(t, fm.Name, in, out, creds)
		if keys, ok := yamlKeys[fm.Name]; ok && yamlv3Leak(in, out, keys...) {
			t.Fatalf("yaml.v3 (gh's reader) reads a real credential from the fake file")
		}
		if fm.Name == "docker-config" && dockerLeak(in, out) {
			t.Fatalf("encoding/json (docker's reader) reads a real credential from the fake file")
		}
	})
}

// fuzzSeeds are each format's table inputs, filled by its test file.
var fuzzSeeds = map[string][]string{}

func seedsOf(cases []fakerCase) []string {
	var s []string
	for _, c := range cases {
		s = append(s, c.in)
	}
	return s
}

// TestRegistry: every format is found by each of its paths, no path has
// two formats, and the list is the one docs/broker.md documents.
func TestRegistry(t *testing.T) {
	var names []string
	seen := map[string]string{}
	for _, f := range Formats() {
		names = append(names, f.Name)
		for _, p := range f.Paths {
			if other, dup := seen[p]; dup {
				t.Errorf("%s: both %s and %s", p, other, f.Name)
			}
			seen[p] = f.Name
			if g, ok := ByPath(p); !ok || g.Name != f.Name {
				t.Errorf("ByPath(%q) = %q, want %q", p, g.Name, f.Name)
			}
		}
		if len(fuzzSeeds[f.Name]) == 0 {
			t.Errorf("%s: no fuzz seeds", f.Name)
		}
	}
	want := []string{"aws-credentials", "cargo-credentials", "claude-credentials", "codex-auth", "codex-mcp-oauth", "docker-config", "gemini-mcp-oauth", "gemini-oauth", "gh-hosts", "git-credentials", "netrc", "npmrc", "pypirc", "yarnrc"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("formats %q, want %q", names, want)
	}
	if _, ok := ByPath(".ssh/id_ed25519"); ok {
		t.Error("a format for a file no format reads")
	}
}

// BenchmarkFakers fakes one typical file of each format (the first seed
// of its table that fakes), checks included: a fake file's cost at launch.
func BenchmarkFakers(b *testing.B) {
	for _, f := range Formats() {
		var in []byte
		for _, s := range fuzzSeeds[f.Name] {
			if _, creds, err := f.Fake([]byte(s), fakeOf); err == nil && len(creds) > 0 {
				in = []byte(s)
				break
			}
		}
		b.Run(f.Name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			for i := 0; i < b.N; i++ {
				if _, _, err := f.Fake(in, fakeOf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// mutations returns n variants of seeds, each with a few bytes of alphabet
// inserted, replaced or deleted, from a fixed seed.
func mutations(seeds []string, n int, alphabet string) []string {
	r := rand.New(rand.NewSource(26))
	out := append([]string{}, seeds...)
	for len(out) < n {
		s := []byte(seeds[r.Intn(len(seeds))])
		for k := 1 + r.Intn(3); k > 0; k-- {
			i := 0
			if len(s) > 0 {
				i = r.Intn(len(s) + 1)
			}
			c := alphabet[r.Intn(len(alphabet))]
			switch op := r.Intn(3); {
			case op == 0 || len(s) == 0 || i == len(s):
				s = append(s[:i], append([]byte{c}, s[i:]...)...)
			case op == 1:
				s[i] = c
			default:
				s = append(s[:i], s[i+1:]...)
			}
		}
		out = append(out, string(s))
	}
	return out
}

// dockerConfig is config.json as docker reads it: encoding/json, field
// names matched without regard to case.
type dockerConfig struct {
	Auths map[string]struct {
		Auth, Password, RegistryToken, IdentityToken string
	}
}

// dockerLeak reports whether a secret docker reads from real (a password
// within auth's base64 included) is in what it reads from fake.
func dockerLeak(real, fake []byte) bool {
	var r, f dockerConfig
	if json.Unmarshal(real, &r) != nil || json.Unmarshal(fake, &f) != nil {
		return false
	}
	var got []string
	for _, a := range f.Auths {
		raw, _ := base64.StdEncoding.DecodeString(a.Auth)
		got = append(got, a.Auth, string(raw), a.Password, a.RegistryToken, a.IdentityToken)
	}
	joined := strings.Join(got, "\x00")
	for _, a := range r.Auths {
		secrets := []string{a.Password, a.RegistryToken, a.IdentityToken}
		if raw, err := base64.StdEncoding.DecodeString(a.Auth); err == nil {
			if _, pass, ok := strings.Cut(string(raw), ":"); ok {
				secrets = append(secrets, pass)
			}
		}
		for _, s := range secrets {
			if len(s) > 1 && strings.Contains(joined, s) {
				return true
			}
		}
	}
	return false
}

func TestDockerDifferential(t *testing.T) {
	n := 0
	for _, in := range mutations(fuzzSeeds["docker-config"], 800, "{}[]\":,\\ \r\nAaUuTtHh") {
		out, _, err := formats["docker-config"].Fake([]byte(in), fakeOf)
		if err != nil {
			continue
		}
		n++
		if dockerLeak([]byte(in), out) {
			t.Errorf("encoding/json reads a real credential from the fake of %q", in)
		}
	}
	t.Logf("%d inputs faked and compared", n)
}
