package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"unicode/utf8"
)

// A form is one way a secret value can appear in a child's output.
type form struct {
	kind string // for tests and Compile's bookkeeping; never printed with the bytes
	b    []byte
}

// forms returns every encoded form of v, in a fixed order; duplicates and short forms
// are left to the caller. The list is the one documented in the package comment
// under "What is masked".
func forms(v []byte) []form {
	out := make([]form, 0, 48)
	add := func(kind string, b []byte) { out = append(out, form{kind, b}) }

	add("raw", bytes.Clone(v))
	if crlf := toCRLF(v); crlf != nil {
		add("raw-crlf", crlf)
	}

	for _, e := range []struct {
		name string
		enc  *base64.Encoding
	}{{"base64", base64.StdEncoding}, {"base64url", base64.URLEncoding}} {
		for align := 0; align < 3; align++ {
			inner, end, endRaw := base64Forms(e.enc, v, align)
			suffix := string(rune('0' + align))
			add(e.name+suffix, inner)
			add(e.name+suffix+"-end", end)
			add(e.name+suffix+"-end-nopad", endRaw)
		}
	}

	q := url.QueryEscape(string(v))
	add("query", []byte(q))
	add("query-lower", lowerPercent(q))
	pe := url.PathEscape(string(v))
	add("path", []byte(pe))
	add("path-lower", lowerPercent(pe))

	html := jsonString(v, true)
	plain := jsonString(v, false)
	add("json", html)
	add("json-nohtml", plain)
	add("json-ascii", asciiJSON(plain))
	add("json-slash", bytes.ReplaceAll(plain, []byte("/"), []byte(`\/`)))

	h := hex.EncodeToString(v)
	add("hex", []byte(h))
	add("hex-upper", bytes.ToUpper([]byte(h)))

	// Every byte escaped: C, shell (printf, echo -e), Python and
	// JavaScript string literals (\xNN), JSON and JavaScript (\u00NN), and
	// URL encoders that escape every byte (%NN).
	add("xescape", eachByte(v, `\x`, 2, false))
	add("xescape-upper", eachByte(v, `\x`, 2, true))
	add("uescape", eachByte(v, `\u`, 4, false))
	add("uescape-upper", eachByte(v, `\u`, 4, true))
	add("percent-all", eachByte(v, "%", 2, true))
	add("percent-all-lower", eachByte(v, "%", 2, false))
	return out
}

// eachByte writes every byte of v as prefix and its value in width hex
// digits (leading zeros), upper or lower case.
func eachByte(v []byte, prefix string, width int, upper bool) []byte {
	digits := "0123456789abcdef"
	if upper {
		digits = "0123456789ABCDEF"
	}
	out := make([]byte, 0, len(v)*(len(prefix)+width))
	for _, c := range v {
		out = append(out, prefix...)
		for range width - 2 {
			out = append(out, '0')
		}
		out = append(out, digits[c>>4], digits[c&0xf])
	}
	return out
}

// toCRLF returns v with every "\n" not already preceded by "\r" turned into "\r\n"
// (what a terminal's output processing does), or nil if that changes nothing.
func toCRLF(v []byte) []byte {
	var out []byte
	for i, c := range v {
		if c == '\n' && (i == 0 || v[i-1] != '\r') {
			if out == nil {
				out = append(make([]byte, 0, len(v)+8), v[:i]...)
			}
			out = append(out, '\r', '\n')
			continue
		}
		if out != nil {
			out = append(out, c)
		}
	}
	return out
}

// base64Forms returns the base64 characters of v when v starts at byte offset align
// (0, 1 or 2, modulo 3) of a larger stream:
//
//   - inner: only the characters whose 6 bits all come from v; the characters before and
//     after also hold bits of the neighbouring bytes, so they cannot be known;
//   - end: inner plus, when v ends the stream, its last partial character and the "="
//     padding, as the padded encoding writes them;
//   - endRaw: the same without the padding.
//
// For align 0 at the very start of a stream, inner is also a prefix of the plain
// encoding of v, so the three cover every position.
func base64Forms(enc *base64.Encoding, v []byte, align int) (inner, end, endRaw []byte) {
	buf := make([]byte, align+len(v))
	copy(buf[align:], v)
	padded := enc.EncodeToString(buf)
	raw := enc.WithPadding(base64.NoPadding).EncodeToString(buf)
	first := (8*align + 5) / 6 // ceil(8*align / 6): the first character free of the prefix
	last := 8 * (align + len(v)) / 6
	return []byte(raw[first:last]), []byte(padded[first:]), []byte(raw[first:])
}

// lowerPercent lower-cases the two hex digits after every '%' of s.
func lowerPercent(s string) []byte {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			b[i+1] = lowerHex(b[i+1])
			b[i+2] = lowerHex(b[i+2])
			i += 2
		}
	}
	return b
}

func lowerHex(c byte) byte {
	if 'A' <= c && c <= 'F' {
		return c + 'a' - 'A'
	}
	return c
}

// jsonString returns v as encoding/json writes it inside a string literal, without the
// quotes. escapeHTML selects json.Marshal's default (<, >, & as \u003c, \u003e, \u0026)
// or Encoder.SetEscapeHTML(false). Invalid UTF-8 becomes \ufffd, as encoding/json does.
func jsonString(v []byte, escapeHTML bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(string(v)); err != nil {
		panic("redact: encoding/json failed on a string: " + err.Error()) // cannot happen
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return bytes.Clone(b[1 : len(b)-1])
}

// asciiJSON rewrites every non-ASCII character of a JSON string body as \uXXXX
// (lower-case hex, UTF-16 surrogate pairs above U+FFFF), as Python's json.dumps and
// other ASCII-only encoders write it.
func asciiJSON(b []byte) []byte {
	const digits = "0123456789abcdef"
	out := make([]byte, 0, len(b))
	u := func(r rune) {
		out = append(out, '\\', 'u', digits[r>>12&0xf], digits[r>>8&0xf], digits[r>>4&0xf], digits[r&0xf])
	}
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		switch {
		case r < utf8.RuneSelf:
			out = append(out, b[0])
		case r > 0xffff:
			r -= 0x10000
			u(0xd800 + r>>10)
			u(0xdc00 + r&0x3ff)
		default:
			u(r)
		}
		b = b[size:]
	}
	return out
}
