//go:build linux

package launch

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/proc"
	"github.com/envsieve/envsieve/internal/shimwire"
)

// request is a start request from the process caller, with this test's
// stdio and working directory.
func request(t *testing.T, caller *os.Process) *shimwire.StartRequest {
	t.Helper()
	dir, err := os.Open(".")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dir.Close() })
	return &shimwire.StartRequest{Start: &shimwire.Start{}, Peer: caller.Pid,
		Stdio: [3]*os.File{nil, os.Stdout, os.Stderr}, Dir: dir}
}

// TestStartGranted: the launcher starts a granted program in its caller's
// process group when the session allows it, else in one of its own; the
// program's exit code and the signal that ends it come back as they are.
func TestStartGranted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		attr   *syscall.SysProcAttr
		joined bool
	}{
		{"the caller's group", &syscall.SysProcAttr{Setpgid: true}, true},
		{"a caller in another session", &syscall.SysProcAttr{Setsid: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			caller := exec.Command("sleep", "30")
			caller.Env = []string{}
			caller.SysProcAttr = tc.attr
			if err := caller.Start(); err != nil {
				t.Fatal(err)
			}
			defer func() { caller.Process.Kill(); caller.Wait() }()
			r := request(t, caller.Process)
			p, err := startGranted("/bin/sh", []string{"sh", "-c", "exit 3"}, []string{"PATH=/usr/bin:/bin"}, r, nil)
			if err != nil {
				t.Fatal(err)
			}
			if g, ok := p.(*granted); !ok || g.pidfd == nil {
				t.Error("the program is not waited for through its pidfd")
			}
			if p.Joined() != tc.joined {
				t.Errorf("joined the caller's group: %v, want %v", p.Joined(), tc.joined)
			}
			if code, sig := p.Wait(); code != 3 || sig != 0 {
				t.Errorf("exit %d, signal %d; want 3, 0", code, sig)
			}
			p, err = startGranted("/bin/sleep", []string{"sleep", "30"}, []string{}, r, nil)
			if err != nil {
				t.Fatal(err)
			}
			time.Sleep(20 * time.Millisecond)
			p.Signal(syscall.SIGTERM)
			if code, sig := p.Wait(); sig != int(syscall.SIGTERM) {
				t.Errorf("exit %d, signal %d; want signal %d", code, sig, syscall.SIGTERM)
			}
		})
	}
}

// TestStartWithoutScope: where the tree cannot be kept from reading what
// the launcher starts (no Landlock, no --isolate), every start request is
// declined and nothing starts.
func TestStartWithoutScope(t *testing.T) {
	s := &shimRun{l: &Plan{host: &Host{}}, grants: true}
	s.NoScope(proc.ErrNoScope)
	p, why := s.Start(&shimwire.StartRequest{Start: &shimwire.Start{Path: "/bin/true", Argv: []string{"true"}}})
	if p != nil {
		p.Kill()
		t.Fatal("started a program without a scope")
	}
	if why != "grants are off" {
		t.Errorf("declined for %q", why)
	}
	if !errors.Is(s.noScope, proc.ErrNoScope) {
		t.Errorf("noScope = %v", s.noScope)
	}
}
