//go:build linux

package daemon

import (
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh/agent"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestDaemonSSHAgentFiltered: a session's command whose client has an ssh
// agent gets envsieve's filter of it (docs/ssh.md), not the agent itself:
// it lists the key, and cannot remove it. Before, the command held the
// client's own agent socket and ssh-add -D emptied it.
func TestDaemonSSHAgentFiltered(t *testing.T) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	kr := agent.NewKeyring()
	if err := kr.Add(agent.AddedKey{PrivateKey: key, Comment: "client-key"}); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(shimtest.SocketDir(t, "envsieve-agent-"), "a.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _ = agent.ServeAgent(kr, c) }()
		}
	}()
	ts := startServer(t, Limits{})
	c := dial(t, ts.path)
	id := mustInit(t, c, "", clientEnv("/c-bin", "SSH_AUTH_SOCK="+sock))
	sid := mustSession(t, c, id, "agent", "")
	out, _, res := run(t, c, sid, "/bin/sh", "-c", `echo "sock-is-client=$([ "$SSH_AUTH_SOCK" = "$0" ] && echo yes || echo no)"; ssh-add -l; ssh-add -D; echo "delete=$?"`, sock)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, out)
	}
	if !strings.Contains(out, "sock-is-client=no") {
		t.Errorf("the command holds the client's agent socket:\n%s", out)
	}
	if !strings.Contains(out, "client-key") {
		t.Errorf("the command's agent does not list the client's key:\n%s", out)
	}
	if strings.Contains(out, "delete=0") {
		t.Errorf("ssh-add -D succeeded:\n%s", out)
	}
	if keys, _ := kr.List(); len(keys) != 1 {
		t.Errorf("the client's agent holds %d keys, want 1", len(keys))
	}
}
