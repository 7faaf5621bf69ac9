//go:build linux

package broker

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

func asNobody() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}

// TestAnotherUserRefused: a connection of another uid is closed at once.
func TestAnotherUserRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to connect as another user") // CI runs as root
	}
	srv, roots, got := standIn(t)
	b, log := startBroker(t, srv.Listener.Addr().String(), roots)
	cmd := exec.Command("curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5",
		"--proxy", b.ChildEnv()["HTTPS_PROXY"], "-H", "Authorization: token "+b.Fakes()["GITHUB_TOKEN"],
		"https://"+srv.Listener.Addr().String()+"/x")
	cmd.Env = childEnv(b)
	cmd.SysProcAttr = asNobody()
	out, _ := cmd.Output()
	if strings.TrimSpace(string(out)) != "000" {
		t.Errorf("another user got an answer: %s", out)
	}
	if len(got.all()) != 0 {
		t.Error("the host got a request from another user")
	}
	if !log.has("denied", "", "peer-uid") {
		t.Errorf("no denied event: %+v", log.events)
	}
}
