//go:build unix

package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/daemon"
	"github.com/envsieve/envsieve/internal/shimtest"
)

// startDaemon starts `envsieve daemon` as a real process on a socket in a
// private directory and returns it with a connected client.
func startDaemon(t *testing.T) (*exec.Cmd, string, *bytes.Buffer) {
	t.Helper()
	dir := shimtest.SocketDir(t, "envsieve-daemon-") // a socket's path must fit, whatever TMPDIR is
	sock := filepath.Join(dir, "d.sock")
	cmd := exec.Command(binary(t, "envsieve"), "daemon", "--socket", sock)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "XDG_RUNTIME_DIR=" + dir, "LANG=C.UTF-8"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if listening(sock) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the daemon did not listen: %s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return cmd, sock, &stderr
}

// TestDaemonSIGTERM: SIGTERM to the daemon ends the commands it runs, removes
// the socket, and exits 0.
func TestDaemonSIGTERM(t *testing.T) {
	cmd, sock, stderr := startDaemon(t)
	ctx := context.Background()
	c, err := daemon.Dial(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	id, err := c.Initialize(ctx, "", []string{"PATH=/usr/bin:/bin"})
	if err != nil {
		t.Fatal(err)
	}
	sid, err := c.NewSession(ctx, id, "", "")
	if err != nil {
		t.Fatal(err)
	}
	pids := make(chan int, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := &lineWriter{fn: func(l string) {
			if pid, err := strconv.Atoi(strings.TrimSpace(l)); err == nil {
				pids <- pid
			}
		}}
		_, _ = c.Exec(ctx, daemon.ExecParams{SessionID: sid, Shell: "echo $$; exec sleep 60"}, w, nil)
	}()
	var pid int
	select {
	case pid = <-pids:
	case <-time.After(10 * time.Second):
		t.Fatalf("the command did not start: %s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	werr := make(chan error, 1)
	go func() { werr <- cmd.Wait() }()
	select {
	case err := <-werr:
		if err != nil {
			t.Errorf("daemon exit: %v\n%s", err, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the daemon did not exit on SIGTERM")
	}
	<-done
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("command %d outlived the daemon", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left behind: %v", err)
	}
}

// TestDaemonStaleSocketAfterKill: a daemon killed with SIGKILL leaves its
// socket; the next daemon replaces it.
func TestDaemonStaleSocketAfterKill(t *testing.T) {
	cmd, sock, _ := startDaemon(t)
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if _, err := os.Lstat(sock); err != nil {
		t.Fatalf("the killed daemon left no socket, so this test would prove nothing: %v", err)
	}
	next := exec.Command(binary(t, "envsieve"), "daemon", "--socket", sock)
	next.Env = cmd.Env
	var stderr bytes.Buffer
	next.Stderr = &stderr
	if err := next.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = next.Process.Signal(syscall.SIGTERM)
		_ = next.Wait()
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := daemon.Dial(context.Background(), sock)
		if err == nil {
			_, err = c.Initialize(context.Background(), "", nil)
			c.Close()
			if err == nil {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no daemon answers on the stale socket: %v\n%s", err, stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// lineWriter calls fn with each complete line written to it.
type lineWriter struct {
	buf []byte
	fn  func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.fn(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
}

// TestDaemonProgramMissing: without envsieve-daemon beside it, envsieve
// says where it looked and exits 125; it never looks in PATH.
func TestDaemonProgramMissing(t *testing.T) {
	src, err := os.ReadFile(binary(t, "envsieve"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	exe := filepath.Join(dir, "envsieve")
	if err := os.WriteFile(exe, src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, verb := range []string{"daemon", "client"} {
		cmd := exec.Command(exe, verb, "--help")
		// PATH holds an envsieve-daemon: it must not be used.
		cmd.Env = []string{"PATH=" + filepath.Dir(binary(t, "envsieve-daemon")), "HOME=" + dir}
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 125 {
			t.Fatalf("%s: want exit 125, got %v: %s", verb, err, out)
		}
		if want := "envsieve-daemon is not installed: looked in " + filepath.Join(dir, "envsieve-daemon"); !strings.Contains(string(out), want) {
			t.Errorf("%s: want %q in %s", verb, want, out)
		}
	}
}

// listening reports whether a daemon accepts connections at sock: the
// socket file exists from its bind, before its listen, so a stat is not
// enough.
func listening(sock string) bool {
	c, err := net.Dial("unix", sock)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
