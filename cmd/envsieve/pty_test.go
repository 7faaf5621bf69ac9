//go:build unix

package main

import (
	"bytes"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// TestPTY gives envsieve a real terminal: with something to redact, the
// child still runs on a terminal (a pty of the launcher's), reads a line
// typed at it, and its output comes back masked.
func TestPTY(t *testing.T) {
	t.Parallel()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	defer ptmx.Close()
	token := "ghp" + "_" + strings.Repeat("Zq9X", 9)
	script := `test -t 0 && test -t 1 && echo "child has a terminal"; read line; echo "got:$line token:$GITHUB_TOKEN"`
	cmd := exec.Command(binary(t, "envsieve"), "run", "--secret", "GITHUB_TOKEN", "--", "sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + t.TempDir(), "GITHUB_TOKEN=" + token, "ENVSIEVE_AUDIT=" + suiteAudit}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = tty, tty, tty
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The test keeps its slave fd open until envsieve has exited, so the
	// pty cannot hang up (and drop the last output) before it is read.
	out := make(chan []byte)
	go func() {
		var buf bytes.Buffer
		_, _ = io.Copy(&buf, ptmx) // ends with EIO once tty is closed below
		out <- buf.Bytes()
	}()
	time.Sleep(300 * time.Millisecond)
	if _, err := ptmx.Write([]byte("hello\r")); err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("envsieve: %v", err)
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		t.Fatal("envsieve did not finish")
	}
	time.Sleep(50 * time.Millisecond)
	tty.Close()
	got := string(<-out)
	for _, want := range []string{"child has a terminal", "got:hello token:[MASKED:"} {
		if !strings.Contains(got, want) {
			t.Errorf("terminal output lacks %q:\n%q", want, strings.ReplaceAll(got, token, "<token>"))
		}
	}
	if strings.Contains(got, token) {
		t.Error("the token reached the terminal")
	}
}
