package policy

import (
	"net/netip"
	"path/filepath"
	"strings"
)

// defaultSSHHosts are the hosts the ssh agent filter allows when the
// policy names none: the common forges.
var defaultSSHHosts = []string{"github.com", "gitlab.com", "bitbucket.org"}

// SSHSettings are the policy's top-level ssh: settings, for the filtering
// ssh agent the tree gets in place of the user's (package sshfilter).
type SSHSettings struct {
	// Keys are the keys of the user's agent the tree may use: SHA256
	// fingerprints ("SHA256:..."), public key files (absolute or ~/...,
	// read by the launcher) or key comments. Empty: every key.
	Keys []string
	// Hosts are the hosts the keys may sign in to: names or globs (* and
	// ?), each with an optional :port ("[name]:port" too), or IPv6
	// addresses ("::1", "[::1]:2222"). Empty in the policy: defaultSSHHosts.
	Hosts []string
}

type rawSSH struct {
	Pos   Pos
	Keys  []str
	Hosts []str
}

// sshSettings checks the ssh: block and returns its settings, with the
// default hosts when it names none.
func (b *builder) sshSettings(r *rawSSH) SSHSettings {
	s := SSHSettings{}
	if r != nil {
		for _, k := range r.Keys {
			v := strings.TrimSpace(k.V)
			if v == "" || v != k.V || (strings.HasPrefix(v, "~") && !strings.HasPrefix(v, "~/")) ||
				(strings.HasPrefix(v, "/") && filepath.Clean(v) != v) {
				b.d.errorAt(k.Pos, "ssh: keys: want a SHA256:... fingerprint, a public key file (absolute or ~/...) or a key comment, got %q", k.V)
				continue
			}
			s.Keys = append(s.Keys, v)
		}
		for _, h := range r.Hosts {
			v, ok := sshHost(h.V)
			if !ok {
				b.d.errorAt(h.Pos, "ssh: hosts: want a host name or glob (* and ?), with an optional :port, got %q", h.V)
				continue
			}
			s.Hosts = append(s.Hosts, v)
		}
	}
	if len(s.Hosts) == 0 {
		s.Hosts = append([]string(nil), defaultSSHHosts...)
	}
	return s
}

// sshHost returns h in the form the filter reads (lower case, an IPv6
// address in its canonical form, "[name]" without a port as name) and
// whether h is a host name or glob with an optional :port, a bracketed
// one ("[git.corp]:2222", OpenSSH's known_hosts form), or an IPv6
// address, bare ("::1": any port) or bracketed ("[::1]:2222").
func sshHost(h string) (string, bool) {
	if len(h) > 255 || h == "" {
		return "", false
	}
	validPort := func(port string) bool {
		if port == "" || len(port) > 5 {
			return false
		}
		for _, c := range port {
			if c < '0' || c > '9' {
				return false
			}
		}
		return true
	}
	validName := func(name string) bool {
		if name == "" {
			return false
		}
		for _, c := range strings.ToLower(name) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune(".-_*?", c)) {
				return false
			}
		}
		return true
	}
	// ipv6 is an IPv6 address, or a glob of one ("2001:db8::*").
	ipv6 := func(name string) (string, bool) {
		if a, err := netip.ParseAddr(name); err == nil && a.Is6() && a.Zone() == "" {
			return a.String(), true
		}
		if strings.Count(name, ":") >= 2 && strings.ContainsAny(name, "*?") {
			for _, c := range strings.ToLower(name) {
				if !(c >= 'a' && c <= 'f' || c >= '0' && c <= '9' || strings.ContainsRune(":.*?", c)) {
					return "", false
				}
			}
			return strings.ToLower(name), true
		}
		return "", false
	}
	if rest, ok := strings.CutPrefix(h, "["); ok {
		name, port, ok := strings.Cut(rest, "]")
		if !ok || (port != "" && (!strings.HasPrefix(port, ":") || !validPort(port[1:]))) {
			return "", false
		}
		if a, ok := ipv6(name); ok {
			name = a
		} else if !validName(name) {
			return "", false
		}
		if port == "" {
			return strings.ToLower(name), true
		}
		return "[" + strings.ToLower(name) + "]" + port, true
	}
	if strings.Count(h, ":") >= 2 {
		return ipv6(h)
	}
	name, port, hasPort := strings.Cut(h, ":")
	if !validName(name) || hasPort && !validPort(port) {
		return "", false
	}
	return strings.ToLower(h), true
}
