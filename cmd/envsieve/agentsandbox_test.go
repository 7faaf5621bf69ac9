//go:build linux

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestAgentSandboxGrant runs real Codex, as an unprivileged user, with its
// own sandbox on as docs/agents.md recommends it (bubblewrap:
// -s workspace-write with network access), under a policy whose rule
// grants GITHUB_TOKEN to gh, and with XDG_RUNTIME_DIR unset (a server, CI,
// a container). The stand-in model has Codex's shell tool run gh, a
// root-owned program in a root-owned directory: gh gets its token through
// the launcher, inside Codex's sandbox, and the shell around it does not.
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
	const token = "tok-for-gh-in-codex-sandbox-51d0"
	// By its path: Codex runs `bash -lc`, whose /etc/profile resets PATH.
	command := filepath.Join(sys, "gh") + `; echo "shell: ${GITHUB_TOKEN:+holds it}"`
	ag := agentCases[2]
	if ag.name != "codex" {
		t.Fatal("agentCases[2] is not codex")
	}
	program := agentCLI(t, ag.program)
	model, caPEM := openaiModel(t, command, true)
	// Not under /tmp: Codex makes the helper its sandbox runs
	// (codex-linux-sandbox) in CODEX_HOME, and refuses to under /tmp.
	home := unprivilegedHomeIn(t, "/var/tmp")
	ca := filepath.Join(home, "standin-ca.pem")
	writeOwned(t, ca, string(caPEM))
	policy := filepath.Join(home, "policy.yaml")
	writeOwned(t, policy, "version: 1\nallow: [CODEX_CA_CERTIFICATE]\nbroker:\n  upstream_ca: ["+ca+"]\n"+
		"secrets:\n  CODEX_API_KEY:\n    broker: {hosts: [\""+strings.TrimPrefix(model.URL, "https://")+"\"]}\n"+
		"rules:\n  - name: gh\n    match: {command: gh}\n    allow: [GITHUB_TOKEN]\n")
	args := []string{"run", "--audit", "-", "--profile", "codex", "--policy", policy, "--", program,
		"exec", "--skip-git-repo-check", "-s", "workspace-write", "-c", "sandbox_workspace_write.network_access=true",
		"--disable", "responses_websockets", "--disable", "responses_websockets_v2",
		"-c", `openai_base_url="` + model.URL + `/v1"`, "Run gh."}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = []string{"PATH=" + sys + ":/usr/bin:/bin", "HOME=" + home, ag.keyVar + "=" + ag.key,
		"CODEX_CA_CERTIFICATE=" + ca, "GITHUB_TOKEN=" + token, "ENVSIEVE_SHIM=" + shimtest.Lib(t)}
	cmd.Dir = home
	cmd.SysProcAttr = asUnprivileged()
	out, err := cmd.CombinedOutput()
	shown := strings.ReplaceAll(strings.ReplaceAll(string(out), ag.key, "<REAL KEY>"), token, "<TOKEN>")
	if err != nil {
		t.Fatalf("envsieve run codex: %v\n%s", err, shown)
	}
	_, _, results := model.seen()
	tool := strings.ReplaceAll(strings.Join(results, "\n"), token, "<TOKEN>")
	if len(results) == 0 {
		t.Fatalf("the agent never sent the shell tool's result back:\n%s", shown)
	}
	t.Logf("tool result: %s", tool)
	if !strings.Contains(tool, "gh: granted") {
		t.Errorf("gh got no token inside Codex's sandbox:\n%s\n%.3000s", tool, shown)
	}
	if strings.Contains(tool, "shell: holds it") || strings.Contains(tool, "<TOKEN>") {
		t.Errorf("the shell around gh holds the token:\n%s", tool)
	}
}
