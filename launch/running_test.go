//go:build unix

package launch_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
)

// TestRunning: a server's launch (Host.Server) returns from Start with the
// program running: its pid is live, a signal reaches it and Wait reports
// it as a shell would (128+N); a cancelled context kills it; and a plan
// starts once.
func TestRunning(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("version: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	build := func(t *testing.T) *launch.Plan {
		t.Helper()
		l, err := launch.Build(context.Background(), &launch.Host{Server: true}, launch.Options{
			Policy: p, Parent: []string{"PATH=/usr/bin:/bin"},
			Request: sieve.Request{Commands: [][]string{{"sleep", "30"}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	for _, tc := range []struct {
		name   string
		end    func(r *launch.Running, cancel context.CancelFunc) error
		status int
	}{
		{name: "signal", end: func(r *launch.Running, _ context.CancelFunc) error { return r.Signal(syscall.SIGTERM) }, status: 128 + int(syscall.SIGTERM)},
		{name: "cancel", end: func(_ *launch.Running, cancel context.CancelFunc) error { cancel(); return nil }, status: 128 + int(syscall.SIGKILL)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := build(t)
			if !l.Decision().Resident {
				t.Error("a server's launch is decided in place")
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			r, err := l.Start(ctx, launch.Stdio{})
			if err != nil {
				t.Fatal(err)
			}
			if err := syscall.Kill(r.Pid(), 0); err != nil {
				t.Fatalf("pid %d is not running: %v", r.Pid(), err)
			}
			if _, err := l.Start(ctx, launch.Stdio{}); err == nil {
				t.Error("a plan started twice")
			}
			if err := tc.end(r, cancel); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			status, err := r.Wait()
			if err != nil || status != tc.status || r.ProcessState() == nil {
				t.Errorf("Wait: %d, %v (state %v), want %d", status, err, r.ProcessState(), tc.status)
			}
			if time.Since(start) > 10*time.Second {
				t.Error("the program was not ended")
			}
		})
	}
	t.Run("not found", func(t *testing.T) {
		l, err := launch.Build(context.Background(), &launch.Host{Server: true}, launch.Options{
			Policy: p, Parent: []string{"PATH=/usr/bin:/bin"},
			Request: sieve.Request{Commands: [][]string{{"no-such-program-envsieve"}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		var nf *launch.NotFoundError
		if _, err := l.Start(context.Background(), launch.Stdio{}); !errors.As(err, &nf) {
			t.Errorf("Start: %v, want a *NotFoundError", err)
		}
		if l.Decision().ProgramErr == nil {
			t.Error("the decision record does not say the program is not found")
		}
	})
}
