//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
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

// TestClaudeCodeBrokered runs the real Claude Code from npm, as an
// unprivileged user, under `envsieve run --profile claude` against a
// stand-in Anthropic server on loopback. The stand-in's model calls the
// Bash tool with the canary; the tool's result travels back to the
// stand-in in the next request, so what the model would see is what the
// stand-in records. Brokered: the stand-in receives the real key on every
// request, while the tool's env and /proc/$PPID/environ, everything the
// agent sent and everything it printed hold only the fake. The control,
// --no-broker, is today's hand-over: the real key reaches the shell tool
// and so the model, which shows the canary can see it.
func TestClaudeCodeBrokered(t *testing.T) {
	claude := agentCLI(t, "@anthropic-ai/claude-code/bin/claude.exe")
	exe, _ := unprivilegedInstall(t)
	realKey := "sk-ant-api03-" + strings.Repeat("Cl4u", 23) + "-deAA"
	for _, tc := range []struct {
		name     string
		args     []string
		brokered bool
	}{
		{"brokered", nil, true},
		{"no-broker", []string{"--no-broker"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			model := anthropicModel(t, canary)
			home := unprivilegedHome(t)
			args := append([]string{"run", "--profile", "claude"}, tc.args...)
			args = append(args, "--", claude, "-p", "Run the canary.", "--allowedTools", "Bash")
			cmd := exec.Command(exe, args...)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_RUNTIME_DIR=" + home,
				"ANTHROPIC_API_KEY=" + realKey, "ANTHROPIC_BASE_URL=" + model.URL,
				"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
			cmd.Dir = home
			cmd.SysProcAttr = asUnprivileged()
			out, err := cmd.CombinedOutput()
			shown := strings.ReplaceAll(string(out), realKey, "<REAL KEY>")
			if err != nil {
				t.Fatalf("envsieve run claude: %v\n%s", err, shown)
			}
			keys, bodies, results := model.seen()
			if len(results) == 0 {
				t.Fatalf("the agent never sent the Bash tool's result back (%d requests):\n%s", len(keys), shown)
			}
			tool := strings.Join(results, "\n")
			if !strings.Contains(tool, "ANTHROPIC_BASE_URL=") || !strings.Contains(tool, "==parent==") {
				t.Fatalf("the canary did not run in the Bash tool:\n%.2000s", strings.ReplaceAll(tool, realKey, "<REAL KEY>"))
			}
			if !tc.brokered {
				if !strings.Contains(tool, realKey) {
					t.Fatal("control: without the broker the real key should reach the Bash tool, and the canary should see it")
				}
				return
			}
			for i, k := range keys {
				if k != realKey {
					t.Errorf("request %d reached the stand-in without the real key", i)
				}
			}
			for i, b := range bodies {
				if strings.Contains(b, realKey) {
					t.Errorf("request %d carried the real key to the model in its body", i)
				}
			}
			if strings.Contains(string(out), realKey) {
				t.Error("the real key is in what the agent printed")
			}
			if !strings.Contains(tool, "ANTHROPIC_API_KEY=sk-ant-api03-") {
				t.Error("the Bash tool's environment holds no fake key: the canary may not read what it should")
			}
		})
	}
}

// unprivilegedHome is a fresh home directory the unprivileged user owns.
func unprivilegedHome(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "envsieve-home-")
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
