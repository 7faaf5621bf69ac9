package policy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/policy"
)

func TestSSHSettings(t *testing.T) {
	for _, tc := range []struct {
		name, src   string
		keys, hosts []string
		err         string
	}{
		{"default", "version: 1\n", nil, policy.DefaultSSHHosts, ""},
		{"empty block", "version: 1\nssh: {}\n", nil, policy.DefaultSSHHosts, ""},
		{"both", "version: 1\nssh: {keys: [\"SHA256:abc\", ~/.ssh/id_ed25519.pub, work laptop], hosts: [Git.Corp, \"*.example.com\", \"10.0.0.2:2222\"]}\n",
			[]string{"SHA256:abc", "~/.ssh/id_ed25519.pub", "work laptop"}, []string{"git.corp", "*.example.com", "10.0.0.2:2222"}, ""},
		{"ipv6 and bracketed", "version: 1\nssh: {hosts: [\"::1\", \"[0:0::1]:2222\", \"[Git.Corp]:2222\", \"FE80::1\", \"[2001:db8::*]\", \"[git.corp]\"]}\n",
			nil, []string{"::1", "[::1]:2222", "[git.corp]:2222", "fe80::1", "2001:db8::*", "git.corp"}, ""},
		{"bad bracket", "version: 1\nssh: {hosts: [\"[::1\"]}\n", nil, nil, "ssh: hosts: want a host name"},
		{"bad bracket port", "version: 1\nssh: {hosts: [\"[::1]:\"]}\n", nil, nil, "ssh: hosts: want a host name"},
		{"empty bracket", "version: 1\nssh: {hosts: [\"[]:22\"]}\n", nil, nil, "ssh: hosts: want a host name"},
		{"bare ipv6 with port", "version: 1\nssh: {hosts: [\"::1:2222:x\"]}\n", nil, nil, "ssh: hosts: want a host name"},
		{"bad host", "version: 1\nssh: {hosts: [\"git corp\"]}\n", nil, nil, "ssh: hosts: want a host name"},
		{"bad port", "version: 1\nssh: {hosts: [\"git:22x\"]}\n", nil, nil, "ssh: hosts: want a host name"},
		{"bad key", "version: 1\nssh: {keys: [\"~root/.ssh/k.pub\"]}\n", nil, nil, "ssh: keys: want"},
		{"unknown field", "version: 1\nssh: {agent: off}\n", nil, nil, "known: hosts, keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := policy.Parse("p.yaml", []byte(tc.src))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(p.SSH.Keys, tc.keys) || !slices.Equal(p.SSH.Hosts, tc.hosts) {
				t.Errorf("ssh = %+v, want keys %q hosts %q", p.SSH, tc.keys, tc.hosts)
			}
		})
	}
}

// TestSSHNotLocal: a project-local policy, which the agent's tree can
// write, cannot name ssh keys or hosts.
func TestSSHNotLocal(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("version: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Narrow(".envsieve.yaml", []byte("version: 1\nssh: {hosts: [evil.example]}\n")); err == nil || !strings.Contains(err.Error(), "escalation: ssh belongs in the user's policy") {
		t.Fatalf("err = %v", err)
	}
}
