//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestAgentSandboxGrant runs real agent CLIs, as an unprivileged user,
// with their own sandboxes on, under a policy whose rule grants
// GITHUB_TOKEN to gh, with XDG_RUNTIME_DIR unset (a server, CI, a
// container). The stand-in model has the agent's shell tool run gh, a
// root-owned program in a root-owned directory, and report what holds the
// token and which sandbox the command ran in.
//   - Codex 0.169, -s workspace-write with network access (bubblewrap, a
//     private /dev/shm): gh gets its token; the shell around it does not.
//   - Claude Code with its sandbox (bubblewrap, a seccomp filter that
//     refuses to create unix sockets, inherited descriptors closed): gh
//     gets its token through the launcher's door; and with
//     sandbox.network.allowAllUnixSockets, through the socket.
func TestAgentSandboxGrant(t *testing.T) {
	exe, _ := unprivilegedInstall(t)
	sys := filepath.Join(filepath.Dir(exe), "sys")
	if err := os.Mkdir(sys, 0o755); err != nil {
		t.Fatal(err)
	}
	// gh says whether it holds a token, never the token.
	if err := os.WriteFile(filepath.Join(sys, "gh"), []byte("#!/bin/sh\necho \"gh: ${GITHUB_TOKEN:+granted}\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	const token = "tok-for-gh-in-a-sandbox-51d0"
	// By its path: the agents run `bash -l`, whose /etc/profile resets
	// PATH.
	command := filepath.Join(sys, "gh") + `; echo "shell: ${GITHUB_TOKEN:+holds it}"; echo "pid1: $(cat /proc/1/comm)"`
	rule := "rules:\n  - name: gh\n    match: {command: gh}\n    allow: [GITHUB_TOKEN]\n"
	lib := shimtest.Lib(t)
	for _, tc := range []struct {
		name     string
		settings string // Claude Code's settings.json
		granted  bool
	}{
		{"codex", "", true},
		{"claude", `{"sandbox": {"enabled": true, "autoAllowBashIfSandboxed": true}}`, true},
		{"claude-allow-unix-sockets", `{"sandbox": {"enabled": true, "autoAllowBashIfSandboxed": true, "network": {"allowAllUnixSockets": true}}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Not under /tmp: Codex makes the helper its sandbox runs
			// (codex-linux-sandbox) in CODEX_HOME, and refuses to under /tmp.
			home := unprivilegedHomeIn(t, "/var/tmp")
			policy := filepath.Join(home, "policy.yaml")
			env := []string{"PATH=" + sys + ":/usr/bin:/bin", "HOME=" + home, "GITHUB_TOKEN=" + token, "ENVSIEVE_SHIM=" + lib}
			var ag agentCase
			var model *modelStandIn
			var agentArgs []string
			if tc.name == "codex" {
				ag = agentCases[2]
				var caPEM []byte
				model, caPEM = openaiModel(t, command, true)
				ca := filepath.Join(home, "standin-ca.pem")
				writeOwned(t, ca, string(caPEM))
				writeOwned(t, policy, "version: 1\nallow: [CODEX_CA_CERTIFICATE]\nbroker:\n  upstream_ca: ["+ca+"]\n"+
					"secrets:\n  CODEX_API_KEY:\n    broker: {hosts: [\""+strings.TrimPrefix(model.URL, "https://")+"\"]}\n"+rule)
				agentArgs = []string{"exec", "--skip-git-repo-check", "-s", "workspace-write", "-c", "sandbox_workspace_write.network_access=true",
					"-c", `openai_base_url="` + model.URL + `/v1"`, "Run gh."}
				env = append(env, "CODEX_CA_CERTIFICATE="+ca)
			} else {
				ag = agentCases[0]
				model = anthropicModel(t, command)
				writeOwned(t, filepath.Join(home, ".claude", "settings.json"), tc.settings)
				writeOwned(t, policy, "version: 1\n"+rule)
				agentArgs = []string{"-p", "Run gh.", "--allowedTools", "Bash"}
				env = append(env, "ANTHROPIC_BASE_URL="+model.URL, "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
			}
			args := append([]string{"run", "--audit", "-", "--profile", ag.profile, "--policy", policy, "--", agentCLI(t, ag.program)}, agentArgs...)
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, exe, args...)
			cmd.WaitDelay = 5 * time.Second
			cmd.Env = append(env, ag.keyVar+"="+ag.key)
			// The agent's workspace: the rest of its HOME is read-only in
			// the sealed tree.
			work := filepath.Join(home, "work")
			writeOwned(t, filepath.Join(work, ".keep"), "")
			cmd.Dir = work
			cmd.SysProcAttr = asUnprivileged()
			out, err := cmd.CombinedOutput()
			shown := strings.ReplaceAll(strings.ReplaceAll(string(out), ag.key, "<REAL KEY>"), token, "<TOKEN>")
			if err != nil {
				t.Fatalf("envsieve run %s: %v\n%.3000s", tc.name, err, shown)
			}
			_, _, results := model.seen()
			tool := strings.ReplaceAll(strings.Join(results, "\n"), token, "<TOKEN>")
			// pid 1 of the sandbox's pid namespace: Codex's bubblewrap
			// runs as codex-linux-sandbox; Claude Code's is bwrap, or its
			// seccomp helper, run from a descriptor ("3"). Outside any
			// sandbox it would be envsieve's own init.
			if !sandboxed.MatchString(tool) {
				t.Fatalf("the command did not run in the agent's sandbox (bubblewrap):\n%s\n%.3000s", tool, shown)
			}
			if got := strings.Contains(tool, "gh: granted"); got != tc.granted {
				t.Errorf("gh got its token inside the sandbox: %v, want %v:\n%s", got, tc.granted, tool)
			}
			if !strings.Contains(tool, "gh: ") {
				t.Errorf("gh did not run:\n%s", tool)
			}
			if strings.Contains(tool, "shell: holds it") || strings.Contains(tool, "<TOKEN>") {
				t.Errorf("the shell around gh holds the token:\n%s", tool)
			}
		})
	}
}

// sandboxed finds what the command said its pid 1 was, when that is the
// agent's sandbox (TestAgentSandboxGrant).
var sandboxed = regexp.MustCompile(`pid1: (codex-linux-san|bwrap|3)[^A-Za-z0-9]`)
