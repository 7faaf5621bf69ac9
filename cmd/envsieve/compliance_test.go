package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// canaryEnv is a hostile parent environment: credentials by name and by value,
// code injection, invalid names, and a duplicated PATH whose second value
// must never win. Tokens are assembled at run time so no real-looking secret
// sits in the source in one piece.
func canaryEnv(bindir, home string) []string {
	ghp := "ghp" + "_" + strings.Repeat("Zq9X", 9)
	return []string{
		"PATH=" + bindir + ":/usr/bin:/bin",
		"HOME=" + home,
		"ANTHROPIC_API_KEY=sk-ant-" + strings.Repeat("k3y", 12),
		"DATABASE_URL=postgres://app:hunter2hunter2@db.internal:5432/app",
		"AWS_SECRET_ACCESS_KEY=" + strings.Repeat("wJalrXUtnFEMI/K7MDENG", 2),
		"GITHUB_TOKEN=" + ghp,
		"STRIPE_SECRET_KEY=sk_live_" + strings.Repeat("4eC39HqLyjWD", 2),
		"PROOF_ENV=innocent",
		"MYAPP_CONFIG=" + ghp,
		"LD_PRELOAD=/tmp/evil.so",
		"BASH_FUNC_x%%=() { echo pwned; }",
		"BAD-NAME=1",
		"PATH=/evil/bin",
	}
}

// runCanary runs `envsieve ARGS -- envdump` under the canary environment and
// returns the child's environment as a map, failing on duplicate keys.
func runCanary(t *testing.T, home string, args ...string) map[string]string {
	t.Helper()
	bindir := filepath.Dir(binary(t, "envdump"))
	// The child writes its environment to a file: its stdout passes through
	// the launcher's redaction, which would mask the API key it prints.
	dump := filepath.Join(t.TempDir(), "env.txt")
	argv := append(append([]string{"envsieve"}, args...), "--", "envdump", "-o", dump)
	env := append(canaryEnv(bindir, home), "ENVSIEVE_AUDIT="+suiteAudit)
	_, stderr, err := startRaw(binary(t, "envsieve"), argv, env, t.TempDir())
	if err != nil {
		t.Fatalf("envsieve %v: %v\n%s", args, err, stderr)
	}
	out, err := os.ReadFile(dump)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range envLines(out) {
		k, v, _ := strings.Cut(kv, "=")
		if _, dup := got[k]; dup {
			t.Errorf("child received %s twice", k)
		}
		got[k] = v
	}
	return got
}

// startRaw runs a program with env handed to the kernel exactly as given.
// os/exec cannot be used here: it de-duplicates Cmd.Env keeping the last
// value, which would hide the duplicated PATH of the canary environment.
func startRaw(path string, argv, env []string, dir string) (stdout, stderr []byte, err error) {
	or, ow, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	er, ew, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	proc, err := os.StartProcess(path, argv, &os.ProcAttr{Dir: dir, Env: env, Files: []*os.File{nil, ow, ew}})
	ow.Close()
	ew.Close()
	if err != nil {
		or.Close()
		er.Close()
		return nil, nil, err
	}
	errc := make(chan []byte)
	go func() { b, _ := io.ReadAll(er); errc <- b }()
	stdout, _ = io.ReadAll(or)
	stderr = <-errc
	or.Close()
	er.Close()
	st, err := proc.Wait()
	if err == nil && !st.Success() {
		err = fmt.Errorf("%s", st)
	}
	return stdout, stderr, err
}

// take removes key from env, asserting it is there with the wanted value. The
// failure message names the key only, never a value.
func take(t *testing.T, env map[string]string, key, want string) {
	t.Helper()
	v, ok := env[key]
	if !ok {
		t.Errorf("child lacks %s", key)
		return
	}
	if v != want {
		t.Errorf("child got a different value for %s (%d bytes, want %d)", key, len(v), len(want))
	}
	delete(env, key)
}

// takeBrokered removes a brokered key, which the child must hold as a fake
// of the real value's shape, never the real value, and the base-URL
// variable the broker points at itself. The claude profile's bindings are
// all served through ANTHROPIC_BASE_URL: no proxy and no CA variable is
// set (docs/design.md, "The credential broker"), so leftover finds any that is.
func takeBrokered(t *testing.T, env map[string]string, key, real string) {
	t.Helper()
	v, ok := env[key]
	switch {
	case !ok:
		t.Errorf("child lacks %s", key)
	case v == real:
		t.Errorf("child got the real value of the brokered %s", key)
	case len(v) != len(real) || v[:7] != real[:7]:
		t.Errorf("child's %s is not a format-preserving fake (%d bytes, want %d)", key, len(v), len(real))
	}
	delete(env, key)
	if v, ok := env["ANTHROPIC_BASE_URL"]; !ok || !strings.Contains(v, "127.0.0.1:") {
		t.Errorf("child's ANTHROPIC_BASE_URL does not point at the broker")
	}
	delete(env, "ANTHROPIC_BASE_URL")
}

// takeView asserts that the child's CLAUDE_CONFIG_DIR names the launch's
// view of Claude Code's state dir (docs/design.md 9.6: made with no login
// too), and removes it.
func takeView(t *testing.T, env map[string]string, home string) {
	t.Helper()
	if v := env["CLAUDE_CONFIG_DIR"]; !strings.HasPrefix(v, filepath.Join(home, ".claude", ".envsieve-view-")) {
		t.Errorf("child's CLAUDE_CONFIG_DIR is %q, not a view of ~/.claude", v)
	}
	delete(env, "CLAUDE_CONFIG_DIR")
}

func leftover(t *testing.T, env map[string]string) {
	t.Helper()
	if len(env) == 0 {
		return
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	t.Errorf("child received keys it must not: %s", strings.Join(keys, " "))
}

// TestComplianceProfileClaude is the sudo-rs style compliance test: a real
// child dumps its environment, each expected key is removed with an
// assertion, and nothing may be left.
func TestComplianceProfileClaude(t *testing.T) {
	bindir := filepath.Dir(binary(t, "envdump"))
	want := map[string]string{}
	home := t.TempDir() // the launcher makes the tree's write places in it
	for _, kv := range canaryEnv(bindir, home) {
		k, v, _ := strings.Cut(kv, "=")
		if _, ok := want[k]; !ok {
			want[k] = v
		}
	}
	env := runCanary(t, home, "run", "--profile", "claude")
	take(t, env, "PATH", want["PATH"]) // the first PATH, what getenv sees
	take(t, env, "HOME", want["HOME"])
	takeBrokered(t, env, "ANTHROPIC_API_KEY", want["ANTHROPIC_API_KEY"])
	takeView(t, env, home)
	take(t, env, "ENVSIEVE_TREE", "1") // the launcher's marker: the child is in an envsieve tree (internal/nest)
	leftover(t, env)
}

// TestComplianceWildcards: even a policy that allows MYAPP_* and * admits only
// the innocent PROOF_ENV on top of the base; no credential passes a wildcard.
func TestComplianceWildcards(t *testing.T) {
	bindir := filepath.Dir(binary(t, "envdump"))
	pol := filepath.Join(t.TempDir(), "policy.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nbase: safe\nallow: [\"MYAPP_*\", \"*\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := runCanary(t, home, "run", "--policy", pol, "--profile", "claude")
	take(t, env, "PATH", bindir+":/usr/bin:/bin")
	take(t, env, "HOME", home)
	takeView(t, env, home)
	takeBrokered(t, env, "ANTHROPIC_API_KEY", "sk-ant-"+strings.Repeat("k3y", 12))
	take(t, env, "PROOF_ENV", "innocent")
	take(t, env, "ENVSIEVE_AUDIT", suiteAudit) // innocent too: "*" admits it
	take(t, env, "ENVSIEVE_TREE", "1")         // the launcher's marker (internal/nest)
	leftover(t, env)
}
