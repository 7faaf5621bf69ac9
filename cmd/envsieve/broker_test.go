//go:build linux

package main

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// unprivilegedInstall copies envsieve and envsieve-daemon side by side
// into a directory an unprivileged user can reach, as an install has them.
func unprivilegedInstall(t *testing.T) (exe, home string) {
	t.Helper()
	exe, home = unprivilegedCopy(t, "envsieve")
	linkOrCopy(t, binary(t, "envsieve-daemon"), filepath.Join(filepath.Dir(exe), "envsieve-daemon"))
	return exe, home
}

// anthropicStandIn is a loopback stand-in for the Anthropic API: it
// records the x-api-key of each request and answers with it (as a
// careless server might).
func anthropicStandIn(t *testing.T) (string, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var keys []string
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := r.Header.Get("X-Api-Key")
		mu.Lock()
		keys = append(keys, k)
		mu.Unlock()
		json.NewEncoder(w).Encode(map[string]string{"path": r.URL.Path, "key_seen": k})
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), keys...)
	}
}

// TestBrokeredAgentKey: `envsieve run --profile claude` with the user's
// ANTHROPIC_API_KEY leaves no real key in the agent's tree (its env, its
// parent's /proc environ, what it prints) while the agent's API calls,
// made with the fake through ANTHROPIC_BASE_URL, reach the user's
// endpoint with the real key. Run as an unprivileged user, as an agent
// runs. Before the broker, the child's env held the real key.
func TestBrokeredAgentKey(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is needed: %v", err)
	}
	exe, home := unprivilegedInstall(t)
	endpoint, seen := anthropicStandIn(t)
	realKey := "sk-ant-api03-" + strings.Repeat("Br0k", 20) + "AA"
	// The agent's working directory: the rest of its HOME is read-only
	// in the sealed tree.
	work := filepath.Join(home, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		os.Chown(work, 65534, 65534)
	}
	dump := filepath.Join(work, "env.dump")
	script := `env > ` + dump + `
tr '\0' '\n' < /proc/$PPID/environ 2>/dev/null | grep -c ANTHROPIC_API_KEY= || true
node -e 'fetch(process.env.ANTHROPIC_BASE_URL + "/v1/messages", {method: "POST", headers: {"x-api-key": process.env.ANTHROPIC_API_KEY}, body: "{}"}).then(r => r.text()).then(t => console.log("answer", t))'`
	cmd := exec.Command(exe, "run", "--profile", "claude", "--", "/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "ANTHROPIC_API_KEY=" + realKey, "ANTHROPIC_BASE_URL=" + endpoint,
		"XDG_RUNTIME_DIR=" + home}
	cmd.Dir = work
	cmd.SysProcAttr = asUnprivileged()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("envsieve run: %v\n%s", err, strings.ReplaceAll(string(out), realKey, "<REAL>"))
	}
	if strings.Contains(string(out), realKey) {
		t.Errorf("the real key is in what the agent's tree printed")
	}
	if !strings.Contains(string(out), "answer ") {
		t.Fatalf("the API call did not answer:\n%s", out)
	}
	got := seen()
	if len(got) != 1 || got[0] != realKey {
		t.Errorf("the endpoint did not get the real key (%d requests)", len(got))
	}
	env, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(env), realKey) {
		t.Error("the real key is in the agent's environment")
	}
	var fake string
	for _, l := range strings.Split(string(env), "\n") {
		if v, ok := strings.CutPrefix(l, "ANTHROPIC_API_KEY="); ok {
			fake = v
		}
	}
	if len(fake) != len(realKey) || !strings.HasPrefix(fake, "sk-ant-api03-") || fake == realKey {
		t.Errorf("the agent's key is not a format-preserving fake (%d bytes)", len(fake))
	}
	if !strings.Contains(string(env), "ANTHROPIC_BASE_URL=http://127.0.0.1:") {
		t.Error("ANTHROPIC_BASE_URL does not point at the broker")
	}
	if strings.Contains(string(out), endpoint) || strings.Contains(string(env), endpoint) {
		t.Error("the user's endpoint is in the tree (the broker forwards there)")
	}
}

// TestBrokerNeedsItsProgram: without envsieve-daemon beside it, a launch
// that brokers a key refuses to start (exit 125) rather than hand the real
// key over; --no-broker hands it over on purpose.
func TestBrokerNeedsItsProgram(t *testing.T) {
	exe, home := unprivilegedCopy(t, "envsieve")
	realKey := "sk-ant-api03-" + strings.Repeat("Br0k", 20) + "AA"
	run := func(args ...string) (string, int) {
		cmd := exec.Command(exe, append(append([]string{"run"}, args...), "--", "/bin/sh", "-c", "echo started")...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "ANTHROPIC_API_KEY=" + realKey}
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		out, _ := cmd.CombinedOutput()
		return string(out), cmd.ProcessState.ExitCode()
	}
	out, code := run("--profile", "claude")
	if code != 125 || strings.Contains(out, "started") || !strings.Contains(out, "no credential broker") {
		t.Errorf("without the broker: exit %d, output %q", code, out)
	}
	out, code = run("--profile", "claude", "--no-broker")
	if code != 0 || !strings.Contains(out, "started") || !strings.Contains(out, "--no-broker") {
		t.Errorf("--no-broker: exit %d, output %q", code, out)
	}
}
