//go:build unix

package proc_test

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/proc"
)

// TestSupervise: the status a shell would report (the child's own, 128+N
// for a signal N), a nil Env refused before anything starts, and an abort
// that kills the child and returns 125 with its error.
func TestSupervise(t *testing.T) {
	env := []string{"PATH=/usr/bin:/bin"}
	for _, tt := range []struct {
		name   string
		script string
		want   int
	}{
		{"exit status", "exit 7", 7},
		{"killed by a signal", "kill -TERM $$", 143},
		{"output", "echo out; echo err >&2", 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out, errw bytes.Buffer
			c := &proc.Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", tt.script}, Env: env}
			got, err := proc.Supervise(c, proc.Resident{Stdout: &out, Stderr: &errw})
			if err != nil || got != tt.want {
				t.Fatalf("Supervise = %d, %v; want %d", got, err, tt.want)
			}
			if tt.want == 0 && (out.String() != "out\n" || errw.String() != "err\n") {
				t.Fatalf("stdout %q, stderr %q", out.String(), errw.String())
			}
		})
	}
	t.Run("nil Env", func(t *testing.T) {
		c := &proc.Cmd{Path: "/bin/true", Args: []string{"true"}}
		if _, err := proc.Supervise(c, proc.Resident{}); !errors.Is(err, proc.ErrNilEnv) {
			t.Fatalf("err = %v, want ErrNilEnv", err)
		}
		if c.ProcessState() != nil {
			t.Fatal("a Cmd with a nil Env was started")
		}
	})
	t.Run("abort", func(t *testing.T) {
		abort := make(chan error, 1)
		c := &proc.Cmd{Path: "/bin/sleep", Args: []string{"sleep", "30"}, Env: env}
		s, err := proc.SuperviseStart(c, proc.Resident{Abort: abort})
		if err != nil {
			t.Fatal(err)
		}
		why := errors.New("the audit log failed")
		abort <- why
		done := make(chan struct{})
		var got int
		go func() { got, err = s.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("the aborted child was not killed")
		}
		if got != 125 || !errors.Is(err, why) {
			t.Fatalf("Wait = %d, %v; want 125 and the abort's error", got, err)
		}
	})
}
