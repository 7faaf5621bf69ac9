//go:build unix

package daemon

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lockedBuffer collects an exec's streamed output while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// TestSessionNoPrefixOracle plays a client whose session command echoes
// each guess it is fed (through a FIFO) while the client watches the
// streamed output: the session's own masked value (its snapshot's
// MYAPP_API_KEY, withheld) must not come out one character at a time from
// what the daemon holds back. Given the first four characters, the client
// learns nothing more. redact.entropy is off: that stage's own hold of the
// last word would hide the signal, and a policy may turn it off.
func TestSessionNoPrefixOracle(t *testing.T) {
	secret := "Zq9Xk3Y9xQ2mZ7pL4vN8wR5t"
	alphabet := "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	ts := startServerWith(t, "version: 1\nredact: {enabled: true, entropy: false}\nprofiles:\n  agent: {}\n", Limits{})
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	fifo := filepath.Join(dir, "guesses")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}

	c := dial(t, ts.path)
	id := mustInit(t, c, "", clientEnv("/c-bin", "MYAPP_API_KEY="+secret))
	sid := mustSession(t, c, id, "agent", "")
	var out lockedBuffer
	done := make(chan error, 1)
	go func() {
		_, err := c.Exec(context.Background(), ExecParams{SessionID: sid, Shell: `while IFS= read -r l; do printf '%s' "$l"; done < ` + fifo}, &out, nil)
		done <- err
	}()
	feed, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	held := func(guess string) int {
		time.Sleep(8 * time.Millisecond)
		o, k := out.String(), len(guess)
		for k > 0 && !strings.HasSuffix(o, guess[:k]) {
			k--
		}
		return len(guess) - k
	}
	known := secret[:4]
	for len(known) < len(secret) {
		found := false
		for _, c := range alphabet {
			guess := "|" + known + string(c)
			fmt.Fprintln(feed, guess)
			if held(guess) > len(known) {
				known += string(c)
				found = true
				break
			}
		}
		if !found {
			break
		}
	}
	feed.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	n := 0
	for n < len(known) && known[n] == secret[n] {
		n++
	}
	if n > 4 {
		t.Fatalf("the client recovered %d characters of the session's masked value", n)
	}
}

// TestExecSecretsDeclared: session/exec's secrets are limited to names the
// policy's secrets or a tool declares. Before, `secrets: [GITHUB_TOKEN]`
// returned any variable of the client's snapshot, whatever the profile
// withheld: a command that reached the daemon's socket could ask for it.
func TestExecSecretsDeclared(t *testing.T) {
	ts := startServer(t, Limits{})
	c := dial(t, ts.path)
	id := mustInit(t, c, "", clientEnv("/c-bin", "GITHUB_TOKEN=gh-undeclared-value", "DEPLOY_TOKEN=deploy-value-1234"))
	sid := mustSession(t, c, id, "agent", "")
	var so lockedBuffer
	_, err := c.Exec(context.Background(), ExecParams{SessionID: sid, Shell: `printf '%s' "${GITHUB_TOKEN:-unset}"`, Secrets: []string{"GITHUB_TOKEN"}}, &so, nil)
	if err == nil || codeOf(err) != CodeSecret || strings.Contains(err.Error(), "gh-undeclared") {
		t.Fatalf("exec with an undeclared secret: %v (output %d bytes)", err, len(so.String()))
	}
	// A declared one still works.
	if _, err := c.Exec(context.Background(), ExecParams{SessionID: sid, Shell: `true`, Secrets: []string{"DEPLOY_TOKEN"}}, nil, nil); err != nil {
		t.Fatalf("exec with a declared secret: %v", err)
	}
}

// TestClientIDBound: a client id is bound to the secret initialize gave
// for it. Before, ids could be chosen ("agent-7") and were not bound to the
// connection that registered them: any process of the user could open a
// session with another client's snapshot, or replace that snapshot.
func TestClientIDBound(t *testing.T) {
	ts := startServer(t, Limits{})
	owner := dial(t, ts.path)
	id := mustInit(t, owner, "agent-7", clientEnv("/c-bin", "MYAPP_X=owner"))
	if owner.ClientSecret(id) == "" {
		t.Fatal("initialize gave no client_secret")
	}
	intruder := dial(t, ts.path)
	ctx := context.Background()
	if _, err := intruder.NewSession(ctx, id, "agent", ""); codeOf(err) != CodeUnknownClient {
		t.Errorf("session/new with another client's id and no secret: %v", err)
	}
	intruder.SetClientSecret(id, "cs_"+strings.Repeat("0", 32))
	if _, err := intruder.NewSession(ctx, id, "agent", ""); codeOf(err) != CodeUnknownClient {
		t.Errorf("session/new with a wrong secret: %v", err)
	}
	if _, err := intruder.Initialize(ctx, id, clientEnv("/evil-bin")); codeOf(err) != CodeUnknownClient {
		t.Errorf("initialize of another client's id without its secret: %v", err)
	}
	// The owner's snapshot is untouched, and the owner still opens sessions.
	sid := mustSession(t, owner, id, "agent", "")
	if got := envOf(t, owner, sid)["PATH"]; got != "/c-bin:/usr/bin:/bin" {
		t.Errorf("owner's PATH %q", got)
	}
	// One connection cannot take every client slot.
	greedy := dial(t, ts.path)
	var err error
	for i := 0; i < 100 && err == nil; i++ {
		_, err = greedy.Initialize(ctx, "", clientEnv("/g"))
	}
	if codeOf(err) != CodeTooManyClients {
		t.Errorf("100 client ids on one connection: %v", err)
	}
}

// TestExecSealRequired: a profile that asks for the seal gets its
// commands sealed, as `envsieve run` seals its tree (by Landlock here, the
// daemon being the command's parent): a file the seal masks cannot be read
// by a sealed session's command; the control, an unsealed session, reads
// it. (TestDaemonSealed in cmd/envsieve runs it as an unprivileged user,
// with the credential files of a HOME and a granted program.)
func TestExecSealRequired(t *testing.T) {
	secretFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(secretFile, []byte("seal-canary-7d1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ts := startServerWith(t, "version: 1\nprofiles:\n  sealed: {seal: {mode: required, mask: ["+secretFile+"]}}\n  open: {}\n", Limits{})
	c := dial(t, ts.path)
	id := mustInit(t, c, "", clientEnv("/c-bin"))
	read := func(profile string) string {
		t.Helper()
		var out strings.Builder
		ss := mustSession(t, c, id, profile, "")
		if _, err := c.Exec(context.Background(), ExecParams{SessionID: ss, Argv: []string{"/bin/sh", "-c", "cat " + secretFile + " 2>/dev/null; echo done"}}, &out, io.Discard); err != nil {
			t.Fatalf("exec in a %s session: %v", profile, err)
		}
		return out.String()
	}
	if got := read("open"); !strings.Contains(got, "seal-canary-7d1") {
		t.Fatalf("control: an unsealed session's command should read the file: %q", got)
	}
	if got := read("sealed"); strings.Contains(got, "seal-canary-7d1") || !strings.Contains(got, "done") {
		t.Errorf("a sealed session's command read a masked file, or did not run: %q", got)
	}
}
