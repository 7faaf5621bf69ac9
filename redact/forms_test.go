package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode/utf16"
)

// Secrets of the encoding tests: a typical token, and a value with every character
// class that an encoding treats specially.
var (
	plainSecret = []byte("ghp_R4nd0mT0kenV4lue9xYz")
	richSecret  = []byte("s3cr/t+v=l <&>\"q\\\x01\x7f é😀 end")
	lineSecret  = []byte("-----BEGIN KEY-----\nMIIBlinetwo\nMIIClinethree\n-----END KEY-----")
)

func jsonOf(v []byte, html bool) string {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(html)
	if err := e.Encode(map[string]string{"token": string(v)}); err != nil {
		panic(err)
	}
	return b.String()
}

// asciiJSONOf writes v as an ASCII-only JSON string, independently of asciiJSON.
func asciiJSONOf(v []byte) string {
	var b strings.Builder
	b.WriteString(`{"token":"`)
	for _, r := range string(v) {
		if r < 0x80 {
			one := jsonOf([]byte(string(r)), false)
			b.WriteString(strings.TrimSuffix(strings.TrimPrefix(one, `{"token":"`), "\"}\n"))
			continue
		}
		for _, u := range utf16.Encode([]rune{r}) {
			fmt.Fprintf(&b, `\u%04x`, u)
		}
	}
	b.WriteString(`"}`)
	return b.String()
}

func lowerEscapes(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(s[i])
		if s[i] == '%' && i+2 < len(s) {
			b.WriteString(strings.ToLower(s[i+1 : i+3]))
			i += 2
		}
	}
	return b.String()
}

// b64 encodes prefix+v+suffix, as a program would that encodes a larger buffer.
func b64(enc *base64.Encoding, prefix string, v []byte, suffix string) string {
	return enc.EncodeToString(slices.Concat([]byte(prefix), v, []byte(suffix)))
}

// formCase is a child's output that holds secret v in one form.
type formCase struct {
	name   string
	v      []byte
	output string
}

func formCases() []formCase {
	var cases []formCase
	for _, sec := range []struct {
		name string
		v    []byte
	}{{"plain", plainSecret}, {"rich", richSecret}} {
		v := sec.v
		add := func(name, output string) {
			cases = append(cases, formCase{sec.name + "/" + name, v, output})
		}
		add("raw", "log: token="+string(v)+" done\r\n")
		add("raw-start", string(v)+" was the start\n")
		add("raw-end", "and the end is "+string(v))
		for _, e := range []struct {
			name string
			enc  *base64.Encoding
		}{
			{"base64", base64.StdEncoding}, {"base64url", base64.URLEncoding},
			{"base64-nopad", base64.RawStdEncoding}, {"base64url-nopad", base64.RawURLEncoding},
		} {
			for align, prefix := range []string{"", "a", "ab", "abc", "abcd"} {
				add(fmt.Sprintf("%s/offset%d/middle", e.name, align),
					"data: "+b64(e.enc, prefix, v, "~tail!")+"\n")
				add(fmt.Sprintf("%s/offset%d/end", e.name, align),
					"data: "+b64(e.enc, prefix, v, "")+"\n")
			}
		}
		add("basic-auth", "Authorization: Basic "+b64(base64.StdEncoding, "user:", v, "")+"\r\n")
		q := url.QueryEscape(string(v))
		add("query", "GET /api?a=1&token="+q+"&b=2 HTTP/1.1")
		add("query-lower", "GET /api?a=1&token="+lowerEscapes(q)+"&b=2 HTTP/1.1")
		p := url.PathEscape(string(v))
		add("path", "GET /keys/"+p+"/show")
		add("path-lower", "GET /keys/"+lowerEscapes(p)+"/show")
		add("json", jsonOf(v, true))
		add("json-nohtml", jsonOf(v, false))
		add("json-ascii", asciiJSONOf(v))
		add("json-slash", strings.ReplaceAll(jsonOf(v, false), "/", `\/`))
		add("hex", "dump "+hex.EncodeToString(v)+" .")
		add("hex-upper", "DUMP "+strings.ToUpper(hex.EncodeToString(v))+" .")
		// Every byte escaped, as printf '\\x..', JavaScript and Python
		// string literals, JSON and URL encoders that escape everything
		// write it.
		add("xescape", "echo -e '"+fmtEachByte(v, `\x%02x`)+"'")
		add("xescape-upper", `b"`+fmtEachByte(v, `\x%02X`)+`"`)
		add("uescape", `{"k":"`+fmtEachByte(v, `\u%04x`)+`"}`)
		add("uescape-upper", `"`+fmtEachByte(v, `\u%04X`)+`"`)
		add("percent-all", "GET /?t="+fmtEachByte(v, "%%%02X")+" HTTP/1.1")
		add("percent-all-lower", "t="+fmtEachByte(v, "%%%02x"))
	}
	lines := []byte(lineSecret)
	cases = append(cases,
		formCase{"lines/raw", lines, "key:\n" + string(lines) + "\nok\n"},
		formCase{"lines/pty-crlf", lines, "key:\r\n" + strings.ReplaceAll(string(lines), "\n", "\r\n") + "\r\nok\r\n"},
		formCase{"trimmed", []byte("  spaced-out-value-42 \n"), "value is spaced-out-value-42."},
	)
	return cases
}

// fmtEachByte writes every byte of v with the format f.
func fmtEachByte(v []byte, f string) string {
	var b strings.Builder
	for _, c := range v {
		fmt.Fprintf(&b, f, c)
	}
	return b.String()
}

// TestForms checks every encoding form, written whole, cut in two at every byte, byte
// by byte, and cut in three at random points.
func TestForms(t *testing.T) {
	for _, tc := range formCases() {
		t.Run(tc.name, func(t *testing.T) {
			s := mustCompile(t, []Secret{{Name: "S", Value: tc.v}}, Options{})
			in := []byte(tc.output)
			want := refRedact(s, in)
			token := Token(testKey, tc.v)
			if !bytes.Contains(want, []byte(token)) {
				t.Fatalf("no form of the secret found in the %d-byte output", len(in))
			}
			checkOutput(t, s, "one write", writeChunks(t, s, in, nil), want)
			for k := 0; k <= len(in); k++ {
				checkOutput(t, s, fmt.Sprintf("cut at %d", k), writeChunks(t, s, in, []int{k}), want)
			}
			var every []int
			for k := 1; k < len(in); k++ {
				every = append(every, k)
			}
			checkOutput(t, s, "byte by byte", writeChunks(t, s, in, every), want)
			rng := rand.New(rand.NewPCG(1, uint64(len(in))))
			for range 200 {
				a, b := rng.IntN(len(in)+1), rng.IntN(len(in)+1)
				cuts := []int{min(a, b), max(a, b)}
				checkOutput(t, s, fmt.Sprintf("cuts at %v", cuts), writeChunks(t, s, in, cuts), want)
			}
		})
	}
}

// TestBase64Alignment checks the inner runs against encodings of the secret between
// random neighbours, independently of the writer.
func TestBase64Alignment(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 3))
	for _, e := range []struct {
		name string
		enc  *base64.Encoding
	}{{"std", base64.StdEncoding}, {"url", base64.URLEncoding}} {
		for n := 1; n <= 12; n++ {
			for align := range 3 {
				t.Run(fmt.Sprintf("%s/len%d/offset%d", e.name, n, align), func(t *testing.T) {
					v := make([]byte, n)
					for i := range v {
						v[i] = byte(rng.Uint32())
					}
					inner, end, endRaw := base64Forms(e.enc, v, align)
					for range 50 {
						pre := make([]byte, align+3*rng.IntN(3))
						post := make([]byte, rng.IntN(5))
						for _, b := range [][]byte{pre, post} {
							for i := range b {
								b[i] = byte(rng.Uint32())
							}
						}
						got := e.enc.EncodeToString(slices.Concat(pre, v, post))
						if !strings.Contains(got, string(inner)) {
							t.Fatalf("inner run missing for prefix %d bytes, suffix %d bytes", len(pre), len(post))
						}
						if len(post) == 0 && !strings.HasSuffix(got, string(end)) {
							t.Fatalf("padded end form is not the end of the encoding")
						}
						raw := e.enc.WithPadding(base64.NoPadding).EncodeToString(slices.Concat(pre, v))
						if !strings.HasSuffix(raw, string(endRaw)) {
							t.Fatalf("unpadded end form is not the end of the encoding")
						}
					}
					// The inner run is as long as it can be: one more character on either
					// side would depend on the neighbours.
					if want := 8*(align+n)/6 - (8*align+5)/6; len(inner) != want {
						t.Fatalf("inner run has %d characters, want %d", len(inner), want)
					}
				})
			}
		}
	}
}

// TestJSONForms checks that the JSON forms are what encoding/json writes.
func TestJSONForms(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    []byte
	}{
		{"plain", plainSecret},
		{"rich", richSecret},
		{"controls", []byte("\x00\x01\b\f\n\r\t\x1f\x7f")},
		{"invalid-utf8", []byte("ab\xffcd\xc3(ef")},
		{"separators", []byte("a\u2028b\u2029c")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, html := range []bool{true, false} {
				full := jsonOf(tc.v, html)
				body := strings.TrimSuffix(strings.TrimPrefix(full, `{"token":"`), "\"}\n")
				if got := jsonString(tc.v, html); string(got) != body {
					t.Errorf("jsonString(html=%v) differs from encoding/json (%d bytes vs %d)", html, len(got), len(body))
				}
			}
		})
	}
}

// TestFormsListed checks that every form kind exists and that the documented minimum
// length drops short forms and short secrets.
func TestFormsListed(t *testing.T) {
	var kinds []string
	for _, f := range forms(lineSecret) {
		kinds = append(kinds, f.kind)
	}
	want := []string{
		"raw", "raw-crlf",
		"base640", "base640-end", "base640-end-nopad", "base641", "base641-end", "base641-end-nopad",
		"base642", "base642-end", "base642-end-nopad",
		"base64url0", "base64url0-end", "base64url0-end-nopad", "base64url1", "base64url1-end",
		"base64url1-end-nopad", "base64url2", "base64url2-end", "base64url2-end-nopad",
		"query", "query-lower", "path", "path-lower",
		"json", "json-nohtml", "json-ascii", "json-slash", "hex", "hex-upper",
		"xescape", "xescape-upper", "uescape", "uescape-upper", "percent-all", "percent-all-lower",
	}
	if !slices.Equal(kinds, want) {
		t.Fatalf("forms: got kinds %q, want %q", kinds, want)
	}
}
