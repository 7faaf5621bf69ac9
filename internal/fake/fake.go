// Package fake derives the fakes of envsieve's credential broker
// (docs/design.md section 9.4, "The credential broker"): format-preserving stand-ins for real
// values, stable across launches for one install key, never equal to the
// real value. It links nothing but hashing, so the launcher, which does
// not link net/http, makes the same fakes as the broker.
package fake

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"strings"
)

// knownPrefixes are the fixed starts of credentials that clients (and
// scanners) recognise by shape. A fake keeps the longest one its real value
// starts with, so that a client that checks the shape accepts it.
var knownPrefixes = []string{
	"sk-ant-api03-", "sk-ant-oat01-", "sk-ant-admin01-", "sk-ant-",
	"sk-proj-", "sk-svcacct-", "sk-admin-", "sk-",
	"github_pat_", "ghp_", "gho_", "ghu_", "ghs_", "ghr_",
	"glpat-", "gldt-", "glrt-",
	"xoxb-", "xoxp-", "xoxa-", "xoxe-", "xapp-",
	"npm_", "hf_", "AIza", "GOCSPX-",
	"sk_live_", "sk_test_", "rk_live_", "rk_test_", "pk_live_", "pk_test_",
	"shpat_", "shpca_", "shppa_", "shpss_",
	"AKIA", "ASIA",
}

// prefixOf returns the known prefix real starts with, or "".
func prefixOf(real string) string {
	best := ""
	for _, p := range knownPrefixes {
		if strings.HasPrefix(real, p) && len(p) > len(best) {
			best = p
		}
	}
	return best
}

const (
	lower   = "abcdefghijklmnopqrstuvwxyz"
	upper   = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	digits  = "0123456789"
	hexLow  = "0123456789abcdef"
	hexHigh = "0123456789ABCDEF"
)

// Of returns the stand-in for the real value of the secret name: the same
// known prefix, the same length, and the same alphabet character by
// character (a lowercase letter for a lowercase letter, a digit for a
// digit, a hex digit throughout a hex value; any other byte kept), derived
// from the install key and the name alone. It is stable across launches,
// so a client that caches a token keeps working, and it is never equal to
// the real value.
func Of(key []byte, name, real string) string {
	prefix := prefixOf(real)
	body := real[len(prefix):]
	hex := isHex(body, hexLow)
	hexUp := !hex && isHex(body, hexHigh)
	stream := keystream(key, name, len(body))
	out := []byte(prefix)
	for i := 0; i < len(body); i++ {
		c, r := body[i], stream[i]
		switch {
		case hex:
			c = hexLow[int(r)%len(hexLow)]
		case hexUp:
			c = hexHigh[int(r)%len(hexHigh)]
		case 'a' <= c && c <= 'z':
			c = lower[int(r)%len(lower)]
		case 'A' <= c && c <= 'Z':
			c = upper[int(r)%len(upper)]
		case '0' <= c && c <= '9':
			c = digits[int(r)%len(digits)]
		}
		out = append(out, c)
	}
	if string(out) == real {
		// Astronomically unlikely; still never the real value. Change the
		// last byte that has an alphabet, within it.
		for i := len(out) - 1; i >= len(prefix); i-- {
			if next, ok := successor(out[i]); ok {
				out[i] = next
				break
			}
		}
	}
	return string(out)
}

// isHex reports whether s is long enough to be a hex credential and made of
// the digits of alphabet only.
func isHex(s, alphabet string) bool {
	if len(s) < 16 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(alphabet, s[i]) < 0 {
			return false
		}
	}
	return true
}

// successor returns the next character of c's alphabet, cyclically.
func successor(c byte) (byte, bool) {
	for _, a := range []string{lower, upper, digits} {
		if i := strings.IndexByte(a, c); i >= 0 {
			return a[(i+1)%len(a)], true
		}
	}
	return c, false
}

// keystream is HMAC-SHA256(key, "envsieve broker fake" || name || counter)
// blocks, n bytes of them.
func keystream(key []byte, name string, n int) []byte {
	out := make([]byte, 0, n+sha256.Size)
	var ctr [4]byte
	for i := uint32(0); len(out) < n; i++ {
		m := hmac.New(sha256.New, key)
		m.Write([]byte("envsieve broker fake\x00"))
		m.Write([]byte(name))
		m.Write([]byte{0})
		binary.BigEndian.PutUint32(ctr[:], i)
		m.Write(ctr[:])
		out = m.Sum(out)
	}
	return out[:n]
}
