package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/envsieve/envsieve/internal/sshfilter"
	"github.com/envsieve/envsieve/policy"
)

// sshJSON is what the tree's ssh agent allows when the child gets
// SSH_AUTH_SOCK: envsieve's filter of the user's agent (docs/ssh.md).
// Keys empty means every key of the user's agent.
type sshJSON struct {
	Keys  []string `json:"keys"`
	Hosts []string `json:"hosts"`
}

// sshDoc returns the ssh agent filter's settings when env carries
// SSH_AUTH_SOCK, else nil.
func sshDoc(p *policy.Policy, env []string) *sshJSON {
	for _, kv := range env {
		if strings.HasPrefix(kv, "SSH_AUTH_SOCK=") && kv != "SSH_AUTH_SOCK=" {
			keys := p.SSH.Keys
			if keys == nil {
				keys = []string{}
			}
			return &sshJSON{Keys: keys, Hosts: p.SSH.Hosts}
		}
	}
	return nil
}

func printSSH(w io.Writer, s *sshJSON) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "ssh:     the user's agent, filtered: %s\n", sshfilter.Describe(s.Keys, s.Hosts))
}
