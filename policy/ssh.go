package policy

import (
	"path/filepath"
	"strings"
)

// DefaultSSHHosts are the hosts the ssh agent filter allows when the
// policy names none: the common forges.
var DefaultSSHHosts = []string{"github.com", "gitlab.com", "bitbucket.org"}

// SSHSettings are the policy's top-level ssh: settings, for the filtering
// ssh agent the tree gets in place of the user's (package sshfilter).
type SSHSettings struct {
	// Keys are the keys of the user's agent the tree may use: SHA256
	// fingerprints ("SHA256:..."), public key files (absolute or ~/...,
	// read by the launcher) or key comments. Empty: every key.
	Keys []string
	// Hosts are the hosts the keys may sign in to: names or globs (* and
	// ?), each with an optional :port. Empty in the policy: DefaultSSHHosts.
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
			if !validSSHHost(h.V) {
				b.d.errorAt(h.Pos, "ssh: hosts: want a host name or glob (* and ?), with an optional :port, got %q", h.V)
				continue
			}
			s.Hosts = append(s.Hosts, strings.ToLower(h.V))
		}
	}
	if len(s.Hosts) == 0 {
		s.Hosts = append([]string(nil), DefaultSSHHosts...)
	}
	return s
}

// validSSHHost reports whether h is a host name or glob with an optional
// :port.
func validSSHHost(h string) bool {
	name, port, hasPort := strings.Cut(h, ":")
	if name == "" || len(h) > 255 {
		return false
	}
	for _, c := range strings.ToLower(name) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune(".-_*?", c)) {
			return false
		}
	}
	if hasPort {
		if port == "" || len(port) > 5 {
			return false
		}
		for _, c := range port {
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return true
}
