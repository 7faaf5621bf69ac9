package login

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
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
// every promise (checkInvariants).
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
