//go:build unix

package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/policy"
)

// testPolicy is the policy of these tests: profiles for each behaviour.
const testPolicy = `version: 1
redact: {enabled: true, entropy: true}
secrets:
  DEPLOY_TOKEN: {from: env}
  FILE_TOKEN: {from: env, deliver: file}
profiles:
  agent:
    allow: ["MYAPP_*", VIRTUAL_ENV_PROMPT, DEPLOY_TOKEN]
  reviewer:
    parent: agent
    deny: ["MYAPP_*"]
  wide:
    allow: ["*"]
  full:
    client_env: full
  pass:
    shell_env_passthrough: [DAEMON_ONLY]
  tiny:
    limits: {max_keys: 2}
`

// daemonEnv is the daemon's own environment in these tests: layer 1 takes
// only its base keys (and DAEMON_ONLY for the pass profile).
var daemonEnv = []string{
	"PATH=/daemon-bin:/usr/bin:/bin",
	"HOME=/home/daemon",
	"LANG=C.UTF-8",
	"DAEMON_ONLY=from-the-daemon",
	"DAEMON_SECRET_TOKEN=" + "ghp" + "_" + strings.Repeat("Dq7Y", 9),
	"MYAPP_MODE=daemon",
	"DAEMON_DB_PASSWORD=correct-horse-daemon-staple",
}

type testServer struct {
	*Server
	path string
}

// startServer starts a daemon on a real socket in a private directory.
func startServer(t testing.TB, lim Limits) *testServer {
	t.Helper()
	return startServerWith(t, testPolicy, lim)
}

// startServerConfig starts a daemon under the policy src with cfg's
// optional fields (Limits, Shim, AuditPath, Home), on a real socket in a
// private directory.
func startServerConfig(t testing.TB, src string, cfg Config) *testServer {
	t.Helper()
	pol, err := policy.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policy, cfg.Env, cfg.RuntimeDir = pol, daemonEnv, t.TempDir()
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dir := shimtest.SocketDir(t, "envsieve-daemon-") // a socket's path must fit, whatever TMPDIR is
	path := filepath.Join(dir, "d.sock")
	if err := s.Listen(path); err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve() }()
	t.Cleanup(func() {
		s.Shutdown()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return &testServer{Server: s, path: path}
}

// startServerWith is startServer under the policy src.
func startServerWith(t testing.TB, src string, lim Limits) *testServer {
	t.Helper()
	return startServerConfig(t, src, Config{Limits: lim})
}

func dial(t testing.TB, path string) *Client {
	t.Helper()
	c, err := Dial(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// clientEnv is a client snapshot: a PATH of its own plus extras.
func clientEnv(pathDir string, extra ...string) []string {
	return append([]string{"PATH=" + pathDir + ":/usr/bin:/bin", "HOME=/home/client"}, extra...)
}

// run execs argv in a session and returns stdout, stderr and the result.
func run(t testing.TB, c *Client, sid string, argv ...string) (string, string, *ExecResult) {
	t.Helper()
	var out, errb bytes.Buffer
	res, err := c.Exec(context.Background(), ExecParams{SessionID: sid, Argv: argv}, &out, &errb)
	if err != nil {
		t.Fatalf("exec %v: %v", argv, err)
	}
	return out.String(), errb.String(), res
}

// envOf runs env in a session and returns its lines as a map.
func envOf(t testing.TB, c *Client, sid string) map[string]string {
	t.Helper()
	out, _, res := run(t, c, sid, "env")
	if res.ExitCode != 0 {
		t.Fatalf("env exited %d", res.ExitCode)
	}
	return parseEnv(out)
}

func parseEnv(out string) map[string]string {
	m := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

func mustSession(t testing.TB, c *Client, client, profile, parent string) string {
	t.Helper()
	sid, err := c.NewSession(context.Background(), client, profile, parent)
	if err != nil {
		t.Fatalf("session/new %s: %v", profile, err)
	}
	return sid
}

func mustInit(t testing.TB, c *Client, id string, env []string) string {
	t.Helper()
	got, err := c.Initialize(context.Background(), id, env)
	if err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return got
}

func codeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// TestDaemonTwoClientsDifferentPATH is the design's first scenario: two
// clients with different PATHs each get their own.
func TestDaemonTwoClientsDifferentPATH(t *testing.T) {
	ts := startServer(t, Limits{})
	a, b := dial(t, ts.path), dial(t, ts.path)
	ida := mustInit(t, a, "", clientEnv("/a-bin"))
	idb := mustInit(t, b, "", clientEnv("/b-bin"))
	if !strings.HasPrefix(ida, "cli_") || len(ida) != 12 || ida == idb {
		t.Fatalf("client ids %q %q: want distinct cli_ + 8 hex", ida, idb)
	}
	sa, sb := mustSession(t, a, ida, "agent", ""), mustSession(t, b, idb, "agent", "")
	for _, tc := range []struct {
		c    *Client
		sid  string
		want string
	}{{a, sa, "/a-bin:/usr/bin:/bin"}, {b, sb, "/b-bin:/usr/bin:/bin"}} {
		env := envOf(t, tc.c, tc.sid)
		if env["PATH"] != tc.want {
			t.Errorf("PATH = %q, want %q (the client's, over the daemon's)", env["PATH"], tc.want)
		}
		if env["HOME"] != "/home/client" {
			t.Errorf("HOME = %q, want the client's", env["HOME"])
		}
		if env["LANG"] != "C.UTF-8" {
			t.Errorf("LANG = %q, want the daemon's (layer 1, no client value)", env["LANG"])
		}
		for _, k := range []string{"DAEMON_ONLY", "DAEMON_SECRET_TOKEN", "MYAPP_MODE"} {
			if _, ok := env[k]; ok {
				t.Errorf("%s reached the command: only base keys come from the daemon", k)
			}
		}
	}
}

// TestDaemonOnlyOneClientHasVirtualEnv is the second scenario.
func TestDaemonOnlyOneClientHasVirtualEnv(t *testing.T) {
	ts := startServer(t, Limits{})
	a, b := dial(t, ts.path), dial(t, ts.path)
	ida := mustInit(t, a, "", clientEnv("/a-bin", "VIRTUAL_ENV=/work/a/.venv", "VIRTUAL_ENV_PROMPT=a"))
	idb := mustInit(t, b, "", clientEnv("/b-bin"))
	sa, sb := mustSession(t, a, ida, "agent", ""), mustSession(t, b, idb, "agent", "")
	ea, eb := envOf(t, a, sa), envOf(t, b, sb)
	if ea["VIRTUAL_ENV"] != "/work/a/.venv" || ea["VIRTUAL_ENV_PROMPT"] != "a" {
		t.Errorf("client A's session: VIRTUAL_ENV=%q VIRTUAL_ENV_PROMPT=%q", ea["VIRTUAL_ENV"], ea["VIRTUAL_ENV_PROMPT"])
	}
	for _, k := range []string{"VIRTUAL_ENV", "VIRTUAL_ENV_PROMPT"} {
		if v, ok := eb[k]; ok {
			t.Errorf("client B's session has %s=%q: it crossed from A", k, v)
		}
	}
}

// TestDaemonClientDisconnectsWhileOtherRuns is the third scenario: A
// disconnects in the middle of a command; A's command is killed, B's runs on
// to the end with its own environment, and the daemon goes on.
func TestDaemonClientDisconnectsWhileOtherRuns(t *testing.T) {
	ts := startServer(t, Limits{})
	a, b := dial(t, ts.path), dial(t, ts.path)
	ida := mustInit(t, a, "", clientEnv("/a-bin"))
	idb := mustInit(t, b, "", clientEnv("/b-bin", "MYAPP_NAME=b"))
	sa, sb := mustSession(t, a, ida, "agent", ""), mustSession(t, b, idb, "agent", "")

	pidFile := filepath.Join(t.TempDir(), "a.pid")
	aStarted := make(chan struct{})
	go func() {
		w := &notifyWriter{ch: aStarted}
		_, _ = a.Exec(context.Background(), ExecParams{SessionID: sa,
			Shell: "echo $$ > " + pidFile + "; echo started; exec sleep 60"}, w, nil)
	}()
	bDone := make(chan string, 1)
	go func() {
		out, _, res := run(t, b, sb, "sh", "-c", "sleep 0.5; env")
		if res.ExitCode != 0 {
			t.Errorf("B's command exited %d", res.ExitCode)
		}
		bDone <- out
	}()
	select {
	case <-aStarted:
	case <-time.After(10 * time.Second):
		t.Fatal("A's command did not start")
	}
	pid := readPID(t, pidFile)
	a.Close() // A dies mid-exec
	waitGone(t, pid)
	env := parseEnv(<-bDone)
	if env["PATH"] != "/b-bin:/usr/bin:/bin" || env["MYAPP_NAME"] != "b" {
		t.Errorf("B's env after A left: PATH=%q MYAPP_NAME=%q", env["PATH"], env["MYAPP_NAME"])
	}
	// The daemon goes on: A comes back with its id (and the secret it kept),
	// and its session too.
	a2 := dial(t, ts.path)
	a2.SetClientSecret(ida, a.ClientSecret(ida))
	mustInit(t, a2, ida, clientEnv("/a2-bin"))
	if got := envOf(t, a2, sa)["PATH"]; got != "/a-bin:/usr/bin:/bin" {
		t.Errorf("A's old session after A left: PATH=%q, want its own copy", got)
	}
}

// TestDaemonReconnectSameIDWhileOldSessionRuns is the fourth scenario: A
// registers the same id again, with another environment, while a command of
// its old session runs; the old session keeps its copy, a new session gets
// the new snapshot.
func TestDaemonReconnectSameIDWhileOldSessionRuns(t *testing.T) {
	ts := startServer(t, Limits{})
	a1 := dial(t, ts.path)
	id := mustInit(t, a1, "cli_0000aaaa", clientEnv("/old-bin", "MYAPP_GEN=1"))
	if id != "cli_0000aaaa" {
		t.Fatalf("client id %q, want the given one", id)
	}
	old := mustSession(t, a1, id, "agent", "")
	running := make(chan string, 1)
	go func() {
		out, _, _ := run(t, a1, old, "sh", "-c", "sleep 0.5; env")
		running <- out
	}()
	time.Sleep(100 * time.Millisecond)
	a2 := dial(t, ts.path)
	a2.SetClientSecret(id, a1.ClientSecret(id)) // the same client, with the secret it kept
	mustInit(t, a2, id, clientEnv("/new-bin", "MYAPP_GEN=2"))
	fresh := mustSession(t, a2, id, "agent", "")
	if e := envOf(t, a2, fresh); e["PATH"] != "/new-bin:/usr/bin:/bin" || e["MYAPP_GEN"] != "2" {
		t.Errorf("new session: PATH=%q MYAPP_GEN=%q, want the new snapshot", e["PATH"], e["MYAPP_GEN"])
	}
	if e := parseEnv(<-running); e["PATH"] != "/old-bin:/usr/bin:/bin" || e["MYAPP_GEN"] != "1" {
		t.Errorf("running command of the old session: PATH=%q MYAPP_GEN=%q", e["PATH"], e["MYAPP_GEN"])
	}
	// The old session is usable from the new connection, still with its copy.
	if e := envOf(t, a2, old); e["MYAPP_GEN"] != "1" {
		t.Errorf("old session from the new connection: MYAPP_GEN=%q, want 1", e["MYAPP_GEN"])
	}
}

type notifyWriter struct {
	once sync.Once
	ch   chan struct{}
}

func (w *notifyWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.ch) })
	return len(p), nil
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitGone waits for a process to end (it may linger as a zombie until its
// parent reaps it, which the daemon does).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d still runs", pid)
}

func TestDaemonLayers(t *testing.T) {
	ts := startServer(t, Limits{})
	c := dial(t, ts.path)
	id := mustInit(t, c, "", clientEnv("/c-bin", "MYAPP_X=1", "LD_PRELOAD=/evil.so", "GITHUB_TOKEN="+"ghp"+"_"+strings.Repeat("Zq9X", 9), "RANDOM_THING=r"))
	tests := []struct {
		profile   string
		want      map[string]string
		wantNot   []string
		wantExtra bool
	}{
		{profile: "agent", want: map[string]string{"MYAPP_X": "1", "LANG": "C.UTF-8"}, wantNot: []string{"LD_PRELOAD", "GITHUB_TOKEN", "RANDOM_THING", "DAEMON_ONLY"}},
		{profile: "wide", want: map[string]string{"RANDOM_THING": "r"}, wantNot: []string{"LD_PRELOAD", "GITHUB_TOKEN"}},
		{profile: "full", want: map[string]string{"RANDOM_THING": "r", "MYAPP_X": "1"}, wantNot: []string{"LD_PRELOAD", "DAEMON_ONLY"}},
		{profile: "pass", want: map[string]string{"DAEMON_ONLY": "from-the-daemon"}, wantNot: []string{"MYAPP_X"}},
	}
	for _, tc := range tests {
		t.Run(tc.profile, func(t *testing.T) {
			sid := mustSession(t, c, id, tc.profile, "")
			env := envOf(t, c, sid)
			for k, v := range tc.want {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
			for _, k := range tc.wantNot {
				if _, ok := env[k]; ok {
					t.Errorf("%s reached the command", k)
				}
			}
		})
	}
	// client_env: full hands over the client's credentials as they are.
	sid := mustSession(t, c, id, "full", "")
	if _, ok := envOf(t, c, sid)["GITHUB_TOKEN"]; !ok {
		t.Error("client_env full: GITHUB_TOKEN missing")
	}
}

func TestDaemonRedactsOutput(t *testing.T) {
	ts := startServer(t, Limits{})
	c := dial(t, ts.path)
	tok := "ghp" + "_" + strings.Repeat("Zq9X", 9)
	id := mustInit(t, c, "", clientEnv("/c-bin", "GITHUB_TOKEN="+tok, "DEPLOY_TOKEN=deploy-value-1234"))
	sid := mustSession(t, c, id, "agent", "")
	daemonTok := strings.TrimPrefix(daemonEnv[4], "DAEMON_SECRET_TOKEN=")
	out, errOut, res := run(t, c, sid, "sh", "-c", "printf '%s\\n' '"+tok+"'; printf '%s\\n' '"+daemonTok+"' >&2")
	if res.ExitCode != 0 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	if strings.Contains(out, tok) || !strings.Contains(out, "[MASKED:") {
		t.Errorf("stdout not masked: %d bytes, holds the value: %v", len(out), strings.Contains(out, tok))
	}
	if strings.Contains(errOut, daemonTok) || !strings.Contains(errOut, "[MASKED:") {
		t.Errorf("stderr not masked (a token by its look)")
	}
	// The daemon's own values are not in a session's set of masked values:
	// the session cannot hold them, and masking them would make the
	// redactor an oracle for them (issue 15). Printed here only because the
	// test knows the value; nothing but the known-value stage would mask it.
	_, errOut2, _ := run(t, c, sid, "sh", "-c", "printf '%s\\n' correct-horse-daemon-staple >&2")
	if !strings.Contains(errOut2, "correct-horse-daemon-staple") {
		t.Errorf("the daemon's own value is masked in a session's output: %q", errOut2)
	}
	// A requested secret is injected and masked in the output.
	var so bytes.Buffer
	r, err := c.Exec(context.Background(), ExecParams{SessionID: sid, Shell: `printf '%s' "$DEPLOY_TOKEN"`, Secrets: []string{"DEPLOY_TOKEN"}}, &so, nil)
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("exec with secret: %v %+v", err, r)
	}
	if so.String() == "deploy-value-1234" || !strings.HasPrefix(so.String(), "[MASKED:") {
		t.Errorf("injected secret not masked in the output (%d bytes)", so.Len())
	}
	// Values the command was given on purpose (an exact allow) are not masked.
	var so2 bytes.Buffer
	if _, err := c.Exec(context.Background(), ExecParams{SessionID: sid, Shell: `printf '%s' "$MYAPP_V"`}, &so2, nil); err != nil {
		t.Fatal(err)
	}
}

func TestDaemonOutputText(t *testing.T) {
	ts := startServer(t, Limits{})
	c := dial(t, ts.path)
	id := mustInit(t, c, "", clientEnv("/c-bin"))
	sid := mustSession(t, c, id, "", "")
	// A multi-byte character split across two writes arrives whole, and
	// bytes that are not UTF-8 arrive as they are (data_b64).
	out, _, _ := run(t, c, sid, "sh", "-c", `printf '\342\202'; sleep 0.05; printf '\254 ok\n'; printf '\377\376\n'`)
	if want := "€ ok\n\xff\xfe\n"; out != want {
		t.Errorf("output %q, want %q", out, want)
	}
}

func TestDaemonSubAgentCannotEscalate(t *testing.T) {
	ts := startServer(t, Limits{})
	c := dial(t, ts.path)
	id := mustInit(t, c, "", clientEnv("/c-bin", "MYAPP_X=1"))
	parent := mustSession(t, c, id, "agent", "")
	tests := []struct {
		profile string
		code    Code
		key     string
	}{
		{profile: "reviewer"},
		{profile: "wide", code: CodeEscalation, key: `"*"`},
		{profile: "full", code: CodeEscalation, key: "client_env"},
		{profile: "pass", code: CodeEscalation, key: "DAEMON_ONLY"},
		{profile: "nosuch", code: CodeUnknownProfile},
	}
	for _, tc := range tests {
		t.Run(tc.profile, func(t *testing.T) {
			sid, err := c.NewSession(context.Background(), id, tc.profile, parent)
			if tc.code == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := envOf(t, c, sid)["MYAPP_X"]; ok {
					t.Error("the sub-agent's deny did not apply")
				}
				return
			}
			if codeOf(err) != tc.code || !strings.Contains(err.Error(), tc.key) {
				t.Fatalf("err = %v, want code %d naming %s", err, tc.code, tc.key)
			}
		})
	}
	// A sub-agent starts from its parent's snapshot, not a newer one.
	mustInit(t, c, id, clientEnv("/newer-bin"))
	sub := mustSession(t, c, id, "reviewer", parent)
	if got := envOf(t, c, sub)["PATH"]; got != "/c-bin:/usr/bin:/bin" {
		t.Errorf("sub-agent PATH %q, want its parent's snapshot", got)
	}
	// Closing the parent closes the sub-agent's session.
	if err := c.CloseSession(context.Background(), parent); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(context.Background(), ExecParams{SessionID: sub, Argv: []string{"true"}}, nil, nil); codeOf(err) != CodeUnknownSession {
		t.Errorf("exec in a closed parent's sub-session: %v", err)
	}
}

func TestDaemonErrors(t *testing.T) {
	ts := startServer(t, Limits{MaxSessionsPerClient: 2, MaxExecsPerClient: 1})
	c := dial(t, ts.path)
	id := mustInit(t, c, "", clientEnv("/c-bin"))
	sid := mustSession(t, c, id, "agent", "")
	mustSession(t, c, id, "agent", "")
	ctx := context.Background()
	tiny := mustSession(t, c, mustInit(t, c, "", clientEnv("/t-bin")), "tiny", "")

	_, err := c.NewSession(ctx, id, "agent", "")
	if codeOf(err) != CodeTooManySessions {
		t.Errorf("third session: %v, want code %d", err, CodeTooManySessions)
	}
	var e *Error
	if errors.As(err, &e) {
		var d LimitData
		if json.Unmarshal(e.Data, &d) != nil || d.Limit != "max_sessions_per_client" || d.Max != 2 {
			t.Errorf("limit data %s", e.Data)
		}
	}
	tests := []struct {
		name string
		call func() error
		code Code
	}{
		{"unknown client", func() error { _, err := c.NewSession(ctx, "cli_nobody", "agent", ""); return err }, CodeUnknownClient},
		{"unknown session", func() error {
			_, err := c.Exec(ctx, ExecParams{SessionID: "ses_x", Argv: []string{"true"}}, nil, nil)
			return err
		}, CodeUnknownSession},
		{"unknown profile", func() error { _, err := c.NewSession(ctx, id, "nosuch", ""); return err }, CodeUnknownProfile},
		{"argv and shell", func() error {
			_, err := c.Exec(ctx, ExecParams{SessionID: sid, Argv: []string{"true"}, Shell: "true"}, nil, nil)
			return err
		}, CodeInvalidParams},
		{"not found", func() error {
			_, err := c.Exec(ctx, ExecParams{SessionID: sid, Argv: []string{"no-such-program"}}, nil, nil)
			return err
		}, CodeNotFound},
		{"not executable", func() error {
			_, err := c.Exec(ctx, ExecParams{SessionID: sid, Argv: []string{"/etc/passwd"}}, nil, nil)
			return err
		}, CodeNotExecutable},
		{"relative cwd", func() error {
			_, err := c.Exec(ctx, ExecParams{SessionID: sid, Argv: []string{"true"}, Cwd: "x"}, nil, nil)
			return err
		}, CodeInvalidParams},
		{"unknown tool", func() error {
			_, err := c.Exec(ctx, ExecParams{SessionID: sid, Argv: []string{"true"}, Tool: "nosuch"}, nil, nil)
			return err
		}, CodeUnknownTool},
		{"missing secret", func() error {
			_, err := c.Exec(ctx, ExecParams{SessionID: sid, Argv: []string{"true"}, Secrets: []string{"NOPE_TOKEN"}}, nil, nil)
			return err
		}, CodeSecret},
		{"unknown field", func() error {
			return c.Call(ctx, MethodSessionNew, map[string]any{"client_id": id, "profil": "agent"}, nil)
		}, CodeInvalidParams},
		{"no env", func() error { return c.Call(ctx, MethodInitialize, map[string]any{"client_id": "x"}, nil) }, CodeInvalidParams},
		{"method not found", func() error { return c.Call(ctx, "rpc.serverInfo", map[string]any{}, nil) }, -32601},
		{"snapshot too large", func() error {
			_, err := c.Initialize(ctx, "", []string{"A=" + strings.Repeat("x", 70<<10)})
			return err
		}, CodeSnapshotTooLarge},
		{"env limit", func() error {
			_, err := c.Exec(ctx, ExecParams{SessionID: tiny, Argv: []string{"true"}}, nil, nil)
			return err
		}, CodeEnvLimit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if codeOf(err) != tc.code {
				t.Fatalf("err = %v, want code %d", err, tc.code)
			}
		})
	}
	t.Run("too many execs", func(t *testing.T) {
		started := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = c.Exec(ctx, ExecParams{SessionID: sid, Shell: "echo go; sleep 2"}, &notifyWriter{ch: started}, nil)
		}()
		<-started
		_, err := c.Exec(ctx, ExecParams{SessionID: sid, Argv: []string{"true"}}, nil, nil)
		if codeOf(err) != CodeTooManyExecs {
			t.Errorf("second concurrent exec: %v, want code %d", err, CodeTooManyExecs)
		}
		if err := c.CloseSession(ctx, sid); err != nil {
			t.Fatal(err)
		}
		<-done
	})
}

func TestDaemonExecControls(t *testing.T) {
	ts := startServer(t, Limits{})
	c := dial(t, ts.path)
	id := mustInit(t, c, "", clientEnv("/c-bin", "PWD="+os.TempDir()))
	sid := mustSession(t, c, id, "agent", "")
	ctx := context.Background()
	t.Run("stdin and cwd", func(t *testing.T) {
		var out bytes.Buffer
		res, err := c.Exec(ctx, ExecParams{SessionID: sid, Shell: "cat; pwd", Stdin: "hello\n", Cwd: "/usr"}, &out, nil)
		if err != nil || res.ExitCode != 0 || out.String() != "hello\n/usr\n" {
			t.Fatalf("%v %+v %q", err, res, out.String())
		}
		out.Reset()
		if _, err := c.Exec(ctx, ExecParams{SessionID: sid, Argv: []string{"pwd"}}, &out, nil); err != nil {
			t.Fatal(err)
		}
		if got, _ := filepath.EvalSymlinks(strings.TrimSpace(out.String())); got != mustEval(t, os.TempDir()) {
			t.Errorf("default cwd %q, want the snapshot's PWD %q", out.String(), os.TempDir())
		}
	})
	t.Run("exit code and signal", func(t *testing.T) {
		_, _, res := run(t, c, sid, "sh", "-c", "exit 7")
		if res.ExitCode != 7 || res.Signal != "" {
			t.Errorf("%+v", res)
		}
		_, _, res = run(t, c, sid, "sh", "-c", "kill -TERM $$")
		if res.ExitCode != 128+15 || res.Signal != "SIGTERM" {
			t.Errorf("%+v", res)
		}
	})
	t.Run("timeout kills the process group", func(t *testing.T) {
		pidFile := filepath.Join(t.TempDir(), "pid")
		start := time.Now()
		res, err := c.Exec(ctx, ExecParams{SessionID: sid, Shell: "sleep 60 & echo $! > " + pidFile + "; wait", Timeout: 0.3}, nil, nil)
		if err != nil || !res.TimedOut || res.Signal != "SIGKILL" {
			t.Fatalf("%v %+v", err, res)
		}
		if el := time.Since(start); el > 2*time.Second {
			t.Errorf("took %s", el)
		}
		waitGone(t, readPID(t, pidFile))
	})
	t.Run("background child holding the pipe", func(t *testing.T) {
		start := time.Now()
		out, _, res := run(t, c, sid, "sh", "-c", "sleep 30 & echo hi")
		if out != "hi\n" || res.ExitCode != 0 {
			t.Errorf("%q %+v", out, res)
		}
		if el := time.Since(start); el > waitDelay+3*time.Second {
			t.Errorf("took %s: a background child holding the pipe must not hang the exec", el)
		}
	})
	t.Run("large output arrives whole", func(t *testing.T) {
		out, _, res := run(t, c, sid, "sh", "-c", "i=0; while [ $i -lt 20000 ]; do echo line-$i; i=$((i+1)); done")
		if res.ExitCode != 0 || strings.Count(out, "\n") != 20000 || !strings.HasSuffix(out, "line-19999\n") {
			t.Errorf("%d lines, exit %d", strings.Count(out, "\n"), res.ExitCode)
		}
	})
	t.Run("cancel by context", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		started := make(chan struct{})
		go func() { <-started; cancel() }()
		res, err := c.Exec(cctx, ExecParams{SessionID: sid, Shell: "echo go; exec sleep 60"}, &notifyWriter{ch: started}, nil)
		if err != nil || !res.Cancelled || res.ExitCode != 128+9 {
			t.Fatalf("%v %+v", err, res)
		}
	})
	t.Run("session env masks", func(t *testing.T) {
		id2 := mustInit(t, c, "", clientEnv("/c-bin", "MYAPP_API_KEY=abcdefgh12345678", "MYAPP_PLAIN=p"))
		s2 := mustSession(t, c, id2, "agent", "")
		r, err := c.Env(ctx, s2)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]EnvEntry{}
		for _, e := range r.Env {
			byName[e.Name] = e
		}
		if e := byName["MYAPP_PLAIN"]; e.Value != "p" || e.Layer != "client" {
			t.Errorf("MYAPP_PLAIN %+v", e)
		}
		if e := byName["LANG"]; e.Layer != "daemon" {
			t.Errorf("LANG %+v", e)
		}
		// MYAPP_API_KEY has a credential name: the glob does not admit it.
		if _, ok := byName["MYAPP_API_KEY"]; ok {
			t.Errorf("MYAPP_API_KEY passed a glob")
		}
	})
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestDaemonSocket(t *testing.T) {
	ts := startServer(t, Limits{})
	fi, err := os.Stat(ts.path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("socket mode %v %v, want 0600", fi.Mode(), err)
	}
	di, _ := os.Stat(filepath.Dir(ts.path))
	if di.Mode().Perm() != 0o700 {
		t.Errorf("socket dir mode %v, want 0700", di.Mode())
	}
	t.Run("live socket is not stolen", func(t *testing.T) {
		s2, err := New(Config{Policy: ts.cfg.Policy, Env: daemonEnv})
		if err != nil {
			t.Fatal(err)
		}
		if err := s2.Listen(ts.path); !errors.Is(err, ErrDaemonRunning) {
			t.Fatalf("second Listen: %v, want ErrDaemonRunning", err)
		}
		c := dial(t, ts.path)
		mustInit(t, c, "", nil)
	})
	t.Run("stale socket is replaced", func(t *testing.T) {
		dir := shimtest.SocketDir(t, "envsieve-daemon-")
		os.Chmod(dir, 0o700)
		path := filepath.Join(dir, "s.sock")
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		ln.SetUnlinkOnClose(false)
		ln.Close() // a dead daemon's socket file stays behind
		s2, err := New(Config{Policy: ts.cfg.Policy, Env: daemonEnv})
		if err != nil {
			t.Fatal(err)
		}
		if err := s2.Listen(path); err != nil {
			t.Fatalf("Listen over a stale socket: %v", err)
		}
		go s2.Serve()
		c := dial(t, path)
		mustInit(t, c, "", nil)
		s2.Shutdown()
		if _, err := os.Lstat(path); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("socket left after shutdown: %v", err)
		}
	})
	t.Run("open directory is refused", func(t *testing.T) {
		dir := shimtest.SocketDir(t, "envsieve-daemon-")
		os.Chmod(dir, 0o755)
		s2, _ := New(Config{Policy: ts.cfg.Policy, Env: daemonEnv})
		if err := s2.Listen(filepath.Join(dir, "s.sock")); err == nil || !strings.Contains(err.Error(), "0700") {
			t.Fatalf("Listen in a 0755 dir: %v", err)
		}
	})
	t.Run("a path too long for a socket is refused, and says so", func(t *testing.T) {
		path := filepath.Join(shimtest.SocketDir(t, "envsieve-daemon-"), strings.Repeat("x", MaxSocketPath), "s.sock")
		s2, _ := New(Config{Policy: ts.cfg.Policy, Env: daemonEnv})
		if err := s2.Listen(path); err == nil || !strings.Contains(err.Error(), "longer than a unix socket's path may be") {
			t.Fatalf("Listen on a %d-byte path: %v", len(path), err)
		}
	})
	t.Run("a runtime directory too deep gives way to /tmp", func(t *testing.T) {
		deep := "/run/" + strings.Repeat("d", MaxSocketPath)
		if got, want := DefaultSocket(deep), filepath.Join("/tmp", "envsieve-"+strconv.Itoa(os.Getuid()), SocketName); got != want {
			t.Errorf("DefaultSocket(a deep directory) = %s, want %s", got, want)
		}
	})
	t.Run("not a socket is not replaced", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "file")
		os.WriteFile(path, []byte("x"), 0o600)
		s2, _ := New(Config{Policy: ts.cfg.Policy, Env: daemonEnv})
		if err := s2.Listen(path); err == nil {
			t.Fatal("Listen replaced a regular file")
		}
	})
}

func TestDaemonPeerOfAnotherUIDIsRefused(t *testing.T) {
	testOnlyUID = os.Getuid() + 4242
	t.Cleanup(func() { testOnlyUID = -1 })
	ts := startServer(t, Limits{})
	c := dial(t, ts.path)
	_, err := c.Initialize(context.Background(), "", nil)
	if codeOf(err) != CodePeerRefused {
		t.Fatalf("err = %v, want code %d", err, CodePeerRefused)
	}
}

func TestDaemonWireMalformed(t *testing.T) {
	ts := startServer(t, Limits{MaxMessageBytes: 4096})
	tests := []struct {
		name, send string
		want       string // a substring of the first reply; "" means the connection closes
		code       int
	}{
		{"not json", "{nope\n", "", -32700},
		{"array of nothing", "[]\n", "", -32600},
		{"no method", `{"jsonrpc":"2.0","id":1}` + "\n", "", -32600},
		{"wrong params type", `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"client_id":7}}` + "\n", "", -32602},
		{"oversized", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"env":["A=` + strings.Repeat("x", 5000) + `"]}}` + "\n", "", int(CodeMessageTooLarge)},
		{"object env", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"env":{"PATH":"/x"}}}` + "\n", "cli_", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			nc, err := net.Dial("unix", ts.path)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.Write([]byte(tc.send))
			nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			line, err := bufio.NewReader(nc).ReadString('\n')
			if err != nil {
				t.Fatalf("no reply: %v", err)
			}
			var m wireMsg
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("reply is not JSON: %q", line)
			}
			if tc.code != 0 {
				if m.Error == nil || int(m.Error.Code) != tc.code {
					t.Fatalf("reply %s, want code %d", line, tc.code)
				}
			} else if !strings.Contains(line, tc.want) {
				t.Fatalf("reply %s, want %q", line, tc.want)
			}
		})
	}
	// The daemon goes on.
	c := dial(t, ts.path)
	mustInit(t, c, "", nil)
}

func TestDaemonShutdownKillsCommands(t *testing.T) {
	ts := startServer(t, Limits{})
	c := dial(t, ts.path)
	id := mustInit(t, c, "", clientEnv("/c-bin"))
	sid := mustSession(t, c, id, "", "")
	pidFile := filepath.Join(t.TempDir(), "pid")
	started := make(chan struct{})
	go func() {
		_, _ = c.Exec(context.Background(), ExecParams{SessionID: sid, Shell: "echo $$ > " + pidFile + "; echo go; exec sleep 60"}, &notifyWriter{ch: started}, nil)
	}()
	<-started
	pid := readPID(t, pidFile)
	if err := dial(t, ts.path).Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	<-ts.stopped
	waitGone(t, pid)
	if _, err := os.Lstat(ts.path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after shutdown: %v", err)
	}
	if _, err := Dial(context.Background(), ts.path); err == nil {
		t.Error("dial after shutdown succeeded")
	}
}

func TestDaemonSnapshotForms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
		err  bool
	}{
		{in: `["A=1","B=2=3"]`, want: []string{"A=1", "B=2=3"}},
		{in: `{"B":"2","A":"1"}`, want: []string{"A=1", "B=2"}},
		{in: `[]`, want: []string{}},
		{in: `null`, err: true},
		{in: `"A=1"`, err: true},
		{in: `[1]`, err: true},
	}
	for _, tc := range tests {
		var s Snapshot
		err := json.Unmarshal([]byte(tc.in), &s)
		if (err != nil) != tc.err || (!tc.err && !slices.Equal([]string(s), tc.want)) {
			t.Errorf("%s: %v %v, want %v (error %v)", tc.in, s, err, tc.want, tc.err)
		}
	}
}

// TestExecSecretFile: a file-delivered secret reaches the command as a
// sealed memory file at /dev/fd/3, readable there, masked in the output,
// never written to the daemon's runtime directory.
func TestExecSecretFile(t *testing.T) {
	ts := startServer(t, Limits{})
	c := dial(t, ts.path)
	id := mustInit(t, c, "", clientEnv("/c-bin", "FILE_TOKEN=file-token-value-5678"))
	sid := mustSession(t, c, id, "agent", "")
	var so bytes.Buffer
	r, err := c.Exec(context.Background(), ExecParams{SessionID: sid, Shell: `echo "$FILE_TOKEN_FILE ${FILE_TOKEN:-unset}"; cat "$FILE_TOKEN_FILE"; echo; echo x >> "$FILE_TOKEN_FILE" 2>/dev/null && echo WRITABLE; true`, Secrets: []string{"FILE_TOKEN"}}, &so, nil)
	if err != nil || r.ExitCode != 0 {
		t.Fatalf("exec: %v %+v", err, r)
	}
	out := so.String()
	if strings.Contains(out, "file-token-value") {
		t.Fatal("the value reached the output unmasked")
	}
	if !strings.HasPrefix(out, "/dev/fd/3 unset\n[MASKED:") || strings.Contains(out, "WRITABLE") {
		t.Errorf("output: %q", out)
	}
	entries, _ := os.ReadDir(ts.cfg.RuntimeDir)
	if len(entries) != 0 {
		t.Errorf("the runtime directory holds %d entries", len(entries))
	}
}
