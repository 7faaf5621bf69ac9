package sshfilter

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/crypto/ssh"
)

// keySpec is one allowed key: by fingerprint, by public key, or by
// comment.
type keySpec struct {
	fingerprint string
	blob        []byte
	comment     string
}

// parseKeySpec reads one entry of the policy's keys.
func parseKeySpec(s string) (keySpec, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "":
		return keySpec{}, fmt.Errorf("sshfilter: an empty key")
	case strings.HasPrefix(s, "SHA256:"):
		return keySpec{fingerprint: s}, nil
	}
	if k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(s)); err == nil {
		return keySpec{blob: k.Marshal()}, nil
	}
	return keySpec{comment: s}, nil
}

func (f *Filter) needComments() bool {
	for _, k := range f.keys {
		if k.comment != "" {
			return true
		}
	}
	return false
}

// keyAllowed reports whether the policy allows id (every key when the
// policy names none).
func (f *Filter) keyAllowed(id identity) bool {
	if len(f.keys) == 0 {
		return true
	}
	fp := ""
	if k, err := ssh.ParsePublicKey(id.Blob); err == nil {
		fp = ssh.FingerprintSHA256(k)
	}
	for _, k := range f.keys {
		switch {
		case k.fingerprint != "" && k.fingerprint == fp,
			k.blob != nil && bytes.Equal(k.blob, id.Blob),
			k.comment != "" && k.comment == id.Comment:
			return true
		}
	}
	return false
}

// knownLine is one line of a known_hosts file.
type knownLine struct {
	marker   string // "", "revoked" or "cert-authority"
	patterns []string
	key      []byte
}

// parseKnownHosts reads a known_hosts file; a line it cannot read is
// skipped (OpenSSH does the same).
func parseKnownHosts(b []byte) []knownLine {
	var out []knownLine
	for len(b) > 0 {
		line := b
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			line, b = b[:i], b[i+1:]
		} else {
			b = nil
		}
		marker, hosts, key, _, _, err := ssh.ParseKnownHosts(line)
		if err != nil || key == nil {
			continue
		}
		var pats []string
		for _, h := range hosts {
			if !strings.HasPrefix(h, "|") {
				h = strings.ToLower(h) // not a hash's base64
			}
			pats = append(pats, h)
		}
		out = append(out, knownLine{marker: marker, patterns: pats, key: key.Marshal()})
	}
	return out
}

// hostFor returns the first allowed host that the known hosts name the
// host key for, or "" and why none is.
func (f *Filter) hostFor(hostKey []byte) (string, string) {
	fp := "?"
	if k, err := ssh.ParsePublicKey(hostKey); err == nil {
		fp = ssh.FingerprintSHA256(k)
	}
	var lines []knownLine
	for _, l := range f.known {
		if !bytes.Equal(l.key, hostKey) {
			continue
		}
		if l.marker == "revoked" {
			return "", "host key " + fp + " is revoked in known_hosts"
		}
		if l.marker == "" {
			lines = append(lines, l)
		}
	}
	if len(lines) == 0 {
		return "", "host key " + fp + " is in no known_hosts file"
	}
	for _, h := range f.cfg.Hosts {
		for _, l := range lines {
			if lineMatches(l.patterns, h) {
				return h, ""
			}
		}
	}
	return "", "host key " + fp + " is not of an allowed host"
}

// splitHost splits a policy host into its name and port ("" for any):
// "name", "name:port", "[name]:port", "[name]" or a bare IPv6 address
// (more than one colon: all of it is the address). An IP address is in
// its canonical form (canonIP).
func splitHost(h string) (name, port string) {
	if strings.HasPrefix(h, "[") {
		if i := strings.Index(h, "]:"); i > 0 {
			return canonIP(h[1:i]), h[i+2:]
		}
		return canonIP(strings.Trim(h, "[]")), ""
	}
	if i := strings.LastIndexByte(h, ':'); i > 0 && strings.Count(h, ":") == 1 {
		return h[:i], h[i+1:]
	}
	return canonIP(h), ""
}

// splitPattern splits a known_hosts host pattern into its name and port:
// "[name]:port", else the name on port 22 (a bare IPv6 address included).
func splitPattern(p string) (name, port string) {
	if strings.HasPrefix(p, "[") {
		if i := strings.Index(p, "]:"); i > 0 {
			return canonIP(p[1:i]), p[i+2:]
		}
	}
	return canonIP(p), "22"
}

// canonIP returns an IP address in its canonical form, lower case and
// zeros compressed as OpenSSH writes it ("0:0::1" is "::1"), and any
// other name or glob as it is, lower-cased.
func canonIP(name string) string {
	if a, err := netip.ParseAddr(name); err == nil && a.Zone() == "" {
		return a.String()
	}
	return strings.ToLower(name)
}

const globChars = "*?"

// lineMatches reports whether a known_hosts line's patterns name the
// policy host h: a positive pattern matches it and no negated one does.
func lineMatches(patterns []string, h string) bool {
	name, port := splitHost(h)
	glob := strings.ContainsAny(name, globChars)
	matched := false
	for _, p := range patterns {
		neg := strings.HasPrefix(p, "!")
		p = strings.TrimPrefix(p, "!")
		var ok bool
		if strings.HasPrefix(p, "|1|") {
			ok = !glob && hashedMatches(p, name, port)
		} else {
			pname, pport := splitPattern(p)
			if port != "" && port != pport {
				continue
			}
			switch {
			case glob && strings.ContainsAny(pname, globChars):
				ok = pname == name
			case glob:
				ok = wildcard(name, pname)
			default:
				ok = wildcard(pname, name)
			}
		}
		if neg && (ok || glob) {
			return false
		}
		if ok && !neg {
			matched = true
		}
	}
	return matched
}

// hashedMatches reports whether a hashed known_hosts entry (|1|salt|hmac)
// names the host on the port (any port: 22 only, what it can check).
func hashedMatches(p, name, port string) bool {
	parts := strings.Split(p, "|")
	if len(parts) != 4 {
		return false
	}
	salt, err1 := base64.StdEncoding.DecodeString(parts[2])
	want, err2 := base64.StdEncoding.DecodeString(parts[3])
	if err1 != nil || err2 != nil {
		return false
	}
	host := name
	if port != "" && port != "22" {
		host = "[" + name + "]:" + port
	}
	m := hmac.New(sha1.New, salt)
	m.Write([]byte(host))
	return hmac.Equal(m.Sum(nil), want)
}

// wildcard matches s against pattern, where * is any run of characters
// and ? any one (OpenSSH's match_pattern), in time linear in their
// product: on a mismatch, the last * takes one more character.
func wildcard(pattern, s string) bool {
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && (pattern[p] == '?' || pattern[p] == s[i]) && pattern[p] != '*':
			p++
			i++
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case star >= 0:
			mark++
			p, i = star+1, mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}
