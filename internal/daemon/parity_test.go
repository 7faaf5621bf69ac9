//go:build linux

package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
)

const hidePolicy = `version: 1
profiles:
  hider:
    allow: ["MYAPP_*"]
    block_iteration: true
    hide: [MYAPP_SESSION]
`

// TestDaemonHidesAsRunDoes: a session command gets the shim and the
// policy's block_iteration exactly as `envsieve run` gives them (one
// launch package): the hidden key leaves the shell's environ and its
// children never see it. Before the shared launch, the daemon ignored
// block_iteration and `env` listed the key.
func TestDaemonHidesAsRunDoes(t *testing.T) {
	ts := startServerConfig(t, hidePolicy, Config{Shim: shimtest.Lib(t)})
	c := dial(t, ts.path)
	mustInit(t, c, "agent", clientEnv("/usr/bin", "MYAPP_SESSION=s3ss10n-value-abcdef", "MYAPP_MODE=dev"))
	sid := mustSession(t, c, "agent", "hider", "")
	out, errb, res := run(t, c, sid, "/bin/sh", "-c", `env | grep '^MYAPP_' | sort`)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d; stderr %q", res.ExitCode, errb)
	}
	if strings.Contains(out, "MYAPP_SESSION=") {
		t.Errorf("the hidden key is listed by a child:\n%s", out)
	}
	if !strings.Contains(out, "MYAPP_MODE=dev") {
		t.Errorf("an admitted key is missing:\n%s", out)
	}
}

// TestDaemonBlockIterationNeedsTheShim: as `envsieve run`, a policy that
// hides keys is refused, and nothing runs, where the shim cannot load.
func TestDaemonBlockIterationNeedsTheShim(t *testing.T) {
	ts := startServerConfig(t, hidePolicy, Config{Shim: filepath.Join(t.TempDir(), "missing.so")})
	c := dial(t, ts.path)
	mustInit(t, c, "agent", clientEnv("/usr/bin", "MYAPP_SESSION=s3ss10n-value-abcdef"))
	sid := mustSession(t, c, "agent", "hider", "")
	marker := filepath.Join(t.TempDir(), "ran")
	_, err := c.Exec(context.Background(), ExecParams{SessionID: sid, Argv: []string{"/usr/bin/touch", marker}}, nil, nil)
	if err == nil || !strings.Contains(err.Error(), "block_iteration") {
		t.Fatalf("exec: got %v, want a block_iteration error", err)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran")
	}
}

// TestDaemonWritesTheAuditLog: a session command is recorded in the
// policy's audit log as a launch of `envsieve run` is (launch, decisions,
// exec, exit), which the daemon did not do before.
func TestDaemonWritesTheAuditLog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	src := "version: 1\naudit: {path: " + logPath + "}\nprofiles:\n  agent: {allow: [\"MYAPP_*\"]}\n"
	ts := startServerConfig(t, src, Config{})
	c := dial(t, ts.path)
	mustInit(t, c, "agent", clientEnv("/usr/bin", "MYAPP_MODE=dev", "DB_PASSWORD=hunter2-hunter2"))
	sid := mustSession(t, c, "agent", "agent", "")
	if _, _, res := run(t, c, sid, "/bin/true"); res.ExitCode != 0 {
		t.Fatalf("exit %d", res.ExitCode)
	}
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatalf("no audit log: %v", err)
	}
	defer f.Close()
	events := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "hunter2") {
			t.Error("the audit log holds a value")
		}
		var ev struct {
			Msg string `json:"msg"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		events[ev.Msg]++
	}
	for _, want := range []string{"launch", "exec", "exit"} {
		if events[want] == 0 {
			t.Errorf("no %q event in the audit log; events %v", want, events)
		}
	}
}

// TestDaemonBrokers: a session command gets a fake of a brokered key, as
// `envsieve run` gives it, and its API call reaches the endpoint with the
// real key through the daemon's broker.
func TestDaemonBrokers(t *testing.T) {
	var got []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("X-Api-Key"))
		mu.Unlock()
		io.WriteString(w, "ok "+r.URL.Path)
	}))
	defer srv.Close()
	real := "sk-ant-api03-" + strings.Repeat("D4em", 20)
	ts := startServerConfig(t, "version: 1\nallow: [ANTHROPIC_API_KEY]\nbrokered: [ANTHROPIC_API_KEY]\n", Config{})
	c := dial(t, ts.path)
	mustInit(t, c, "agent", clientEnv("/usr/bin", "ANTHROPIC_API_KEY="+real, "ANTHROPIC_BASE_URL="+srv.URL))
	sid := mustSession(t, c, "agent", "", "")
	out, errb, res := run(t, c, sid, "/bin/sh", "-c", `printenv ANTHROPIC_API_KEY | wc -c; curl -sS -H "x-api-key: $ANTHROPIC_API_KEY" "$ANTHROPIC_BASE_URL/v1/messages"`)
	if res.ExitCode != 0 {
		t.Fatalf("exit %d: %s", res.ExitCode, errb)
	}
	if strings.Contains(out, real) || !strings.Contains(out, "ok /v1/messages") {
		t.Errorf("output %q", strings.ReplaceAll(out, real, "<REAL>"))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 1 || got[0] != real {
		t.Errorf("the endpoint did not get the real key (%d requests)", len(got))
	}
}
