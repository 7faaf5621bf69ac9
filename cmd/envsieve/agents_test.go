//go:build linux

package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// agentsDir is where `make agents` installs the agent CLIs from npm, at
// the versions the Makefile pins: ENVSIEVE_TEST_AGENTS, or a directory an
// unprivileged user can read (root's home is closed to it).
func agentsDir() string {
	if d := os.Getenv("ENVSIEVE_TEST_AGENTS"); d != "" {
		return d
	}
	if os.Getuid() == 0 {
		return "/var/cache/envsieve-agents"
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".cache", "envsieve-agents")
}

// agentCLI is the installed program of one agent CLI; the test fails,
// naming the command that installs it, when it is missing.
func agentCLI(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(agentsDir(), "node_modules", rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the agent CLIs from npm are needed (make agents): %v", err)
	}
	return p
}

// canary is the command the stand-in model has the agent's shell tool
// run: the shell's own environment and its parent's (the agent's)
// /proc environ, the two places one Bash tool call reads an agent's key
// from.
const canary = `env; echo ==parent==; tr '\0' '\n' < /proc/$PPID/environ`

// agentCase is one agent CLI driven through one turn against a stand-in
// of its model provider: its profile, its program under agentsDir, the
// arguments of a headless turn that may run its shell tool, and the key
// it is given. setup prepares the home and returns envsieve's own extra
// arguments and environment (a policy, an endpoint variable).
type agentCase struct {
	name, profile, program string
	key, keyVar            string
	model                  func(*testing.T) (*modelStandIn, []byte)
	args                   func(model *modelStandIn) []string
	setup                  func(t *testing.T, home string, model *modelStandIn, caPEM []byte) (flags, env []string)
}

var agentCases = []agentCase{
	{
		// Base-URL mode: ANTHROPIC_BASE_URL points at the broker.
		name: "claude", profile: "claude", program: "@anthropic-ai/claude-code/bin/claude.exe",
		key: "sk-ant-api03-" + strings.Repeat("Cl4u", 23) + "-deAA", keyVar: "ANTHROPIC_API_KEY",
		model: func(t *testing.T) (*modelStandIn, []byte) { return anthropicModel(t, canary), nil },
		args:  func(*modelStandIn) []string { return []string{"-p", "Run the canary.", "--allowedTools", "Bash"} },
		setup: func(t *testing.T, home string, m *modelStandIn, _ []byte) ([]string, []string) {
			// Its global config, which it rewrites (issue 25): checked after.
			writeOwned(t, filepath.Join(home, ".claude.json"), `{"hasCompletedOnboarding":true,"marker":"kept"}`)
			return nil, []string{"ANTHROPIC_BASE_URL=" + m.URL, "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
		},
	},
	{
		// Base-URL mode: GOOGLE_GEMINI_BASE_URL points at the broker. Gemini
		// CLI headless, pointed at another endpoint, needs the auth type
		// chosen in its settings (docs/agents.md).
		name: "gemini", profile: "gemini", program: "@google/gemini-cli/bundle/gemini.js",
		key: "AIza" + strings.Repeat("Gem1", 8) + "abc", keyVar: "GEMINI_API_KEY",
		model: func(t *testing.T) (*modelStandIn, []byte) { return geminiModel(t, canary), nil },
		args: func(*modelStandIn) []string {
			return []string{"-p", "Run the canary.", "--approval-mode", "yolo", "--skip-trust"}
		},
		setup: func(t *testing.T, home string, m *modelStandIn, _ []byte) ([]string, []string) {
			writeOwned(t, filepath.Join(home, ".gemini", "settings.json"),
				`{"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"disableAutoUpdate": true}, "telemetry": {"enabled": false}}`)
			return nil, []string{"GOOGLE_GEMINI_BASE_URL=" + m.URL}
		},
	},
	{
		// Proxy mode: Codex 0.169 ignores OPENAI_BASE_URL (its endpoint is
		// the openai_base_url setting), so it reaches its provider over
		// HTTPS through HTTPS_PROXY, and trusts the broker's CA through
		// SSL_CERT_FILE or CODEX_CA_CERTIFICATE. The stand-in is an HTTPS
		// server on 127.0.0.1 standing in for api.openai.com; the user's
		// policy binds the key to it and gives the broker its CA, as the
		// catalog binds the key to api.openai.com. Codex's own sandbox is
		// off (-s danger-full-access): the seal is envsieve's.
		name: "codex", profile: "codex", program: ".bin/codex",
		key: "sk-proj-" + strings.Repeat("C0dx", 20) + "T3BlbkFJ", keyVar: "CODEX_API_KEY",
		model: func(t *testing.T) (*modelStandIn, []byte) { return openaiModel(t, canary, true) },
		args: func(m *modelStandIn) []string {
			return []string{"exec", "--skip-git-repo-check", "-s", "danger-full-access",
				"--disable", "responses_websockets", "--disable", "responses_websockets_v2",
				"-c", `openai_base_url="` + m.URL + `/v1"`, "Run the canary."}
		},
		setup: func(t *testing.T, home string, m *modelStandIn, caPEM []byte) ([]string, []string) {
			ca := filepath.Join(home, "standin-ca.pem")
			writeOwned(t, ca, string(caPEM))
			policy := filepath.Join(home, "policy.yaml")
			// CODEX_CA_CERTIFICATE lets the control (--no-broker) reach the
			// stand-in directly; brokered, the broker's bundle replaces it.
			writeOwned(t, policy, "version: 1\nallow: [CODEX_CA_CERTIFICATE]\nbroker:\n  upstream_ca: ["+ca+"]\n"+
				"secrets:\n  CODEX_API_KEY:\n    broker: {hosts: [\""+strings.TrimPrefix(m.URL, "https://")+"\"]}\n")
			return []string{"--policy", policy}, []string{"CODEX_CA_CERTIFICATE=" + ca}
		},
	},
}

// TestAgentsBrokered runs the real agent CLIs from npm, as an
// unprivileged user, each under `envsieve run --profile NAME` against a
// stand-in of its model provider on loopback. The stand-in's model calls
// the agent's shell tool with the canary; the tool's result travels back
// to the stand-in in the next request, so what the model would see is
// what the stand-in records. Brokered: the stand-in receives the real key
// on every model request, while the tool's env and /proc/$PPID/environ
// (the agent's own), everything the agent sent and everything it printed
// hold only the fake. The control, --no-broker, is the hand-over of
// before the broker: the real key reaches the shell tool and so the
// model, which shows that the canary sees what it should. Each profile
// seals the tree; a third run makes the seal with Landlock, under a
// seccomp filter that refuses user namespaces, in a fresh home as on a
// first run: the agent works all the same.
func TestAgentsBrokered(t *testing.T) {
	exe, _ := unprivilegedInstall(t)
	noNS := filepath.Join(filepath.Dir(exe), "nouserns")
	copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
	cases := agentCases
	if testing.Short() {
		cases = cases[:1] // make quick: Claude Code alone (1 s; Codex takes 7 s a run)
	}
	for _, ag := range cases {
		program := agentCLI(t, ag.program)
		for _, mode := range []string{"brokered", "no-broker", "landlock"} {
			brokered := mode != "no-broker"
			t.Run(ag.name+"/"+mode, func(t *testing.T) {
				model, caPEM := ag.model(t)
				home := unprivilegedHome(t)
				if mode == "landlock" {
					// Landlock seals the directories above HOME's
					// sealed files: the home is where a user's is, out
					// of /tmp, which the agent's shell tool writes.
					home = unprivilegedHomeIn(t, "/var/tmp")
				}
				flags, env := ag.setup(t, home, model, caPEM)
				args := append([]string{"run", "--profile", ag.profile}, flags...)
				if !brokered {
					args = append(args, "--no-broker")
				}
				args = append(append(args, "--", program), ag.args(model)...)
				// A turn takes a few seconds; an agent stuck on its network
				// fails the test instead of hanging it.
				ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
				defer cancel()
				cmd := exec.CommandContext(ctx, exe, args...)
				cmd.WaitDelay = 5 * time.Second
				cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_RUNTIME_DIR=" + home,
					ag.keyVar + "=" + ag.key}, env...)
				if mode == "landlock" {
					cmd.Path, cmd.Args = noNS, append([]string{noNS}, cmd.Args...)
					cmd.Env = append(cmd.Env, "ENVSIEVE_DEBUG=1")
				}
				cmd.Dir = home
				cmd.SysProcAttr = asUnprivileged()
				out, err := cmd.CombinedOutput()
				shown := strings.ReplaceAll(string(out), ag.key, "<REAL KEY>")
				if err != nil {
					t.Fatalf("envsieve run %s: %v\n%s", ag.name, err, shown)
				}
				if mode == "landlock" && !strings.Contains(shown, "seal: landlock;") {
					t.Errorf("the tree was not sealed by Landlock:\n%.3000s", shown)
				}
				keys, bodies, results := model.seen()
				if len(results) == 0 {
					t.Fatalf("the agent never sent the shell tool's result back (%d model requests):\n%s", len(keys), shown)
				}
				tool := strings.Join(results, "\n")
				if !strings.Contains(tool, ag.keyVar+"=") || !strings.Contains(tool, "==parent==") {
					t.Fatalf("the canary did not run in the shell tool:\n%.2000s", strings.ReplaceAll(tool, ag.key, "<REAL KEY>"))
				}
				if !brokered {
					if !strings.Contains(tool, ag.key) {
						t.Fatal("control: without the broker the real key should reach the shell tool, and the canary should see it")
					}
					return
				}
				for i, k := range keys {
					if k != ag.key {
						t.Errorf("model request %d reached the stand-in without the real key", i)
					}
				}
				for i, b := range bodies {
					if strings.Contains(b, ag.key) {
						t.Errorf("request %d carried the real key to the model in its body", i)
					}
				}
				if strings.Contains(string(out), ag.key) {
					t.Error("the real key is in what the agent printed")
				}
				if ag.profile == "claude" {
					// Logged in by an API key, Claude Code still works in
					// a view of ~/.claude: its ~/.claude.json is written in
					// the sealed tree and persists.
					var gc struct{ Marker, FirstStartTime string }
					b, err := os.ReadFile(filepath.Join(home, ".claude.json"))
					if json.Unmarshal(b, &gc); err != nil || gc.Marker != "kept" || gc.FirstStartTime == "" {
						t.Errorf("~/.claude.json was not read and written by the tree's Claude Code (%v): %s", err, b)
					}
				}
			})
		}
	}
}

// writeOwned writes a file, and the directories above it up to the home,
// owned by the unprivileged user.
func writeOwned(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		for _, p := range []string{filepath.Dir(path), path} {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// unprivilegedHome is a fresh home directory the unprivileged user owns.
func unprivilegedHome(t *testing.T) string {
	t.Helper()
	return unprivilegedHomeIn(t, "")
}

// unprivilegedHomeIn is unprivilegedHome in the directory parent ("": the
// temporary directory).
func unprivilegedHomeIn(t *testing.T, parent string) string {
	t.Helper()
	dir, err := os.MkdirTemp(parent, "envsieve-home-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		if err := os.Chown(dir, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}
