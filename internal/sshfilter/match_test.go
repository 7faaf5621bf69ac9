package sshfilter

import (
	"bytes"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh/knownhosts"
)

func TestLineMatches(t *testing.T) {
	for _, tc := range []struct {
		patterns []string
		host     string
		want     bool
	}{
		{[]string{"github.com"}, "github.com", true},
		{[]string{"github.com"}, "github.com:22", true},
		{[]string{"github.com"}, "github.com:2222", false},
		{[]string{"[github.com]:2222"}, "github.com", true},
		{[]string{"[github.com]:2222"}, "github.com:2222", true},
		{[]string{"[github.com]:2222"}, "github.com:22", false},
		{[]string{"gitlab.com"}, "github.com", false},
		{[]string{"git.corp"}, "*.corp", true},
		{[]string{"*.corp"}, "git.corp", true},
		{[]string{"*.corp", "!evil.corp"}, "evil.corp", false},
		{[]string{"*.corp", "!evil.corp"}, "git.corp", true},
		{[]string{"*.corp", "!evil.corp"}, "*.corp", false},
		{[]string{"*"}, "*.corp", false},
		{[]string{"github.com.evil.net"}, "github.com", false},
		{[]string{knownhosts.HashHostname("github.com")}, "github.com", true},
		{[]string{knownhosts.HashHostname("github.com")}, "gitlab.com", false},
		{[]string{knownhosts.HashHostname("github.com")}, "*.com", false},
		{[]string{knownhosts.HashHostname("[h]:2222")}, "h:2222", true},
		{[]string{knownhosts.HashHostname("[h]:2222")}, "h", false},
		{[]string{"!" + knownhosts.HashHostname("github.com"), "*"}, "github.com", false},
		// IPv6, bare (port 22) and [host]:port, in any spelling.
		{[]string{"::1"}, "::1", true},
		{[]string{"::1"}, "[::1]:22", true},
		{[]string{"::1"}, "[::1]:2222", false},
		{[]string{"[::1]:2222"}, "[::1]:2222", true},
		{[]string{"[::1]:2222"}, "::1", true},
		{[]string{"[::1]:2222"}, "[::1]:22", false},
		{[]string{"[0:0:0:0:0:0:0:1]:2222"}, "[::1]:2222", true},
		{[]string{"::1"}, "0:0::1", true},
		{[]string{"[2001:DB8::1]:2200"}, "[2001:db8::1]:2200", true},
		{[]string{"[2001:db8::1]:2200"}, "2001:db8::2", false},
		{[]string{"2001:db8::*"}, "2001:db8::5", true},
		{[]string{knownhosts.HashHostname("[::1]:2222")}, "[0::1]:2222", true},
		{[]string{knownhosts.HashHostname("::1")}, "::1", true},
		{[]string{"[git.corp]:2222", "10.0.0.2"}, "[git.corp]:2222", true},
		{[]string{"[git.corp]:2222"}, "[git.corp]", true},
	} {
		if got := lineMatches(tc.patterns, tc.host); got != tc.want {
			t.Errorf("lineMatches(%q, %q) = %v, want %v", tc.patterns, tc.host, got, tc.want)
		}
	}
}

func TestWildcard(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"a*c", "abbc", true}, {"a?c", "abc", true}, {"a?c", "ac", false},
		{"*.example.com", "example.com", false}, {"x", "xy", false},
		{"", "", true}, {"", "a", false}, {"**", "", true}, {"a*", "a", true}, {"*a", "ba", true}, {"*a", "ab", false},
		{"a*b*c", "aXbYc", true}, {"a*b*c", "aXcYb", false}, {"?", "", false}, {"*?", "", false}, {"*?", "x", true},
		{strings.Repeat("*a", 30) + "b", strings.Repeat("a", 60), false},
	} {
		if got := wildcard(tc.p, tc.s); got != tc.want {
			t.Errorf("wildcard(%q, %q) = %v", tc.p, tc.s, got)
		}
	}
}

func TestParseUserauthRequest(t *testing.T) {
	_, _, pub := ed25519Signer(t)
	sid := []byte("0123456789abcdef0123456789abcdef")
	good := userauth(sid, pub, methodPublickey, nil)
	if u, err := parseUserauthRequest(good); err != nil || !bytes.Equal(u.SessionID, sid) || !bytes.Equal(u.Key, pub.Marshal()) {
		t.Fatalf("good request: %+v, %v", u, err)
	}
	hb := userauth(sid, pub, methodHostbound, []byte("hostkey"))
	if u, err := parseUserauthRequest(hb); err != nil || string(u.HostKey) != "hostkey" {
		t.Fatalf("hostbound request: %+v, %v", u, err)
	}
	bad := map[string][]byte{
		"trailing":       append(append([]byte{}, good...), 0),
		"truncated":      good[:len(good)-1],
		"empty":          nil,
		"sshsig":         []byte("SSHSIG\x00\x00\x00\x03git"),
		"no signature":   bytes.Replace(good, []byte("publickey\x01"), []byte("publickey\x00"), 1),
		"bool 2":         bytes.Replace(good, []byte("publickey\x01"), []byte("publickey\x02"), 1),
		"password":       bytes.Replace(good, []byte("\x00\x00\x00\x09publickey"), []byte("\x00\x00\x00\x09passwordx"), 1),
		"other service":  bytes.Replace(good, []byte("ssh-connection"), []byte("ssh-userauthxx"), 1),
		"hostbound hole": hb[:len(hb)-len("hostkey")-4],
	}
	for name, data := range bad {
		if _, err := parseUserauthRequest(data); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func FuzzUserauthRequest(f *testing.F) {
	_, _, pub := ed25519Signer(f)
	sid := []byte("0123456789abcdef0123456789abcdef")
	f.Add(userauth(sid, pub, methodPublickey, nil))
	f.Add(userauth(sid, pub, methodHostbound, []byte("hk")))
	f.Fuzz(func(t *testing.T, data []byte) {
		u, err := parseUserauthRequest(data)
		if err != nil {
			return
		}
		// What parses is rebuilt byte for byte: nothing was skipped.
		b := putString(nil, u.SessionID)
		b = append(b, msgUserauthRequest)
		b = putString(b, []byte(u.User))
		b = putString(b, []byte(u.Service))
		b = putString(b, []byte(u.Method))
		b = append(b, 1)
		b = putString(b, []byte(u.Algorithm))
		b = putString(b, u.Key)
		if u.Method == methodHostbound {
			b = putString(b, u.HostKey)
		}
		if !bytes.Equal(b, data) {
			t.Fatalf("parsed %x as %+v", data, u)
		}
	})
}

// FuzzAgentProtocol: every agent message the filter parses, framed or
// not, is either refused or parsed into what rebuilds it.
func FuzzAgentProtocol(f *testing.F) {
	f.Add([]byte{msgRequestIdentities})
	f.Add(append([]byte{msgSignRequest}, putString(putString(nil, []byte("k")), []byte("d"))...))
	f.Add(marshalIdentities([]identity{{Blob: []byte("b"), Comment: "c"}}))
	f.Add(append([]byte{msgExtension}, putString(nil, []byte("session-bind@openssh.com"))...))
	f.Add(append([]byte{msgExtension}, putString(nil, bytes.Repeat([]byte("x"), 1000))...))
	f.Fuzz(func(t *testing.T, msg []byte) {
		if _, err := readMessage(bytes.NewReader(frame(msg))); err != nil && len(msg) > 0 && len(msg) <= maxMessage {
			t.Fatalf("frame not read back: %v", err)
		}
		if ids, err := parseIdentities(msg); err == nil && !bytes.Equal(marshalIdentities(ids), msg) {
			t.Fatalf("identities %x parsed as %+v", msg, ids)
		}
		if s, err := parseSignRequest(msg); err == nil {
			b := putString(putString([]byte{msgSignRequest}, s.Key), s.Data)
			b = append(b, byte(s.Flags>>24), byte(s.Flags>>16), byte(s.Flags>>8), byte(s.Flags))
			if !bytes.Equal(b, msg) {
				t.Fatalf("sign request %x parsed as %+v", msg, s)
			}
		}
		if e, err := parseExtension(msg); err == nil {
			if b := append(putString([]byte{msgExtension}, []byte(e.Name)), e.Contents...); !bytes.Equal(b, msg) {
				t.Fatalf("extension %x parsed as %+v", msg, e)
			}
			if sb, err := parseSessionBind(e.Contents); err == nil {
				b := putString(putString(putString(nil, sb.HostKey), sb.SessionID), sb.Signature)
				if sb.Forwarding {
					b = append(b, 1)
				} else {
					b = append(b, 0)
				}
				if !bytes.Equal(b, e.Contents) {
					t.Fatalf("session-bind %x parsed as %+v", e.Contents, sb)
				}
			}
		}
		// A connection state given the message answers without panicking,
		// and reports no more than a bounded reason.
		if len(msg) > 0 {
			var reason string
			s := &conn{f: &Filter{cfg: Config{Upstream: "/nonexistent/agent.sock", Event: func(e Event) { reason = e.Reason }}}}
			if r := s.handle(msg); len(r) == 0 {
				t.Fatal("no answer")
			}
			if len(reason) > 300 {
				t.Fatalf("a reason of %d bytes", len(reason))
			}
		}
	})
}

// FuzzKnownHosts: any known_hosts file is read without a panic, and any
// policy host is matched against its lines without one; what a line
// names is matched the same in any case of its letters.
func FuzzKnownHosts(f *testing.F) {
	f.Add([]byte("[::1]:2222,10.0.0.1 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPT6XIaS5JgXpgENe0XymNGUrvWkBM9qWKHcVtOcr/wQ\n"), "[::1]:2222")
	f.Add([]byte("@revoked * ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPT6XIaS5JgXpgENe0XymNGUrvWkBM9qWKHcVtOcr/wQ\n"), "github.com")
	f.Add([]byte(knownhosts.HashHostname("[h]:22")+" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPT6XIaS5JgXpgENe0XymNGUrvWkBM9qWKHcVtOcr/wQ\n"), "h")
	f.Fuzz(func(t *testing.T, file []byte, host string) {
		for _, l := range parseKnownHosts(file) {
			if len(l.key) == 0 {
				t.Fatal("a line without a key")
			}
			for _, p := range l.patterns {
				if !strings.HasPrefix(strings.TrimPrefix(p, "!"), "|") && p != strings.ToLower(p) {
					t.Fatalf("pattern %q is not lower case", p)
				}
			}
			// A policy host matches in any case of its letters (New
			// lowers it; the patterns are lowered as read).
			if !strings.Contains(host, "|") && lineMatches(l.patterns, host) != lineMatches(l.patterns, strings.ToLower(host)) &&
				!strings.ContainsAny(host, "*?") {
				t.Fatalf("%q and its lower case match %q differently", host, l.patterns)
			}
		}
		name, port := splitHost(host)
		if strings.HasPrefix(host, "[") && strings.Contains(host, "]:") && port == "" && !strings.HasSuffix(host, "]:") {
			t.Fatalf("%q: name %q and no port", host, name)
		}
	})
}

// FuzzWildcard: the linear matcher agrees with the plain recursive one
// (OpenSSH's) on short inputs.
func FuzzWildcard(f *testing.F) {
	f.Add("a*b?c", "axxbyc")
	f.Fuzz(func(t *testing.T, p, s string) {
		if len(p) > 12 || len(s) > 12 {
			return
		}
		if got, want := wildcard(p, s), recursiveWildcard(p, s); got != want {
			t.Fatalf("wildcard(%q, %q) = %v, want %v", p, s, got, want)
		}
	})
}

func recursiveWildcard(pattern, s string) bool {
	for len(pattern) > 0 {
		switch pattern[0] {
		case '*':
			for i := 0; i <= len(s); i++ {
				if recursiveWildcard(pattern[1:], s[i:]) {
					return true
				}
			}
			return false
		case '?':
			if len(s) == 0 {
				return false
			}
		default:
			if len(s) == 0 || s[0] != pattern[0] {
				return false
			}
		}
		pattern, s = pattern[1:], s[1:]
	}
	return len(s) == 0
}
