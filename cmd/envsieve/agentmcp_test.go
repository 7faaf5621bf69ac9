//go:build linux

package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// runAgentTree runs script in a sealed `envsieve run --profile profile`
// as an unprivileged user, by the seal mechanism mech, with the extra
// environment env, and returns its output (it must end in "ran").
func runAgentTree(t *testing.T, exe, home, profile, mech, script string, env ...string) string {
	t.Helper()
	argv := []string{exe, "run", "--profile", profile, "--", "/bin/sh", "-c", script + "; echo ran"}
	if mech == "landlock" {
		noNS := filepath.Join(filepath.Dir(exe), "nouserns")
		copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		argv = append([]string{noNS}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + home}, env...)
	cmd.Dir = home
	cmd.SysProcAttr = asUnprivileged()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.HasSuffix(string(out), "ran\n") {
		t.Fatalf("the tree did not run: %v\n%s", err, out)
	}
	return string(out)
}

// mcpStore is one agent's MCP OAuth token file as its CLI writes it,
// holding the server's tokens acc and ref, and where the agent in the
// tree reads it.
type mcpStore struct {
	profile, dir, file, agentPath string
	json                          func(acc, ref string) string
	// tokens returns the access and refresh tokens of the file's JSON.
	tokens func(b []byte) (string, string)
}

var mcpStores = []mcpStore{
	{profile: "codex", dir: ".codex", file: ".credentials.json", agentPath: `"$CODEX_HOME/.credentials.json"`,
		json: func(acc, ref string) string {
			return `{"linear|0123456789abcdef":{"server_name":"linear","server_url":"https://mcp.linear.app/mcp","client_id":"c1","access_token":"` + acc +
				`","expires_at":1000,"refresh_token":"` + ref + `","scopes":["read"]}}`
		},
		tokens: func(b []byte) (string, string) {
			var f map[string]struct {
				AccessToken  string `json:"access_token"`
				RefreshToken string `json:"refresh_token"`
			}
			json.Unmarshal(b, &f)
			e := f["linear|0123456789abcdef"]
			return e.AccessToken, e.RefreshToken
		}},
	{profile: "gemini", dir: ".gemini", file: "mcp-oauth-tokens.json", agentPath: `"$GEMINI_CLI_HOME/.gemini/mcp-oauth-tokens.json"`,
		json: func(acc, ref string) string {
			return "[\n  {\n    \"serverName\": \"linear\",\n    \"token\": {\n      \"accessToken\": \"" + acc + "\",\n      \"refreshToken\": \"" + ref +
				"\",\n      \"expiresAt\": 1000,\n      \"tokenType\": \"Bearer\"\n    },\n    \"clientId\": \"c1\",\n    \"tokenUrl\": \"https://linear.app/oauth/token\",\n" +
				"    \"mcpServerUrl\": \"https://mcp.linear.app/mcp\",\n    \"updatedAt\": 1\n  }\n]"
		},
		tokens: func(b []byte) (string, string) {
			var f []struct {
				Token struct{ AccessToken, RefreshToken string }
			}
			if json.Unmarshal(b, &f) != nil || len(f) == 0 {
				return "", ""
			}
			return f[0].Token.AccessToken, f[0].Token.RefreshToken
		}},
}

// TestAgentMCPTokensFaked: Codex's and Gemini CLI's MCP OAuth token files
// are shown to the agent in the tree as fakes, in the view its variable
// names, so an MCP server it logged in to keeps working there (the
// broker swaps the access token on the way to the server): with and
// without the agent's own login beside them, by both seal mechanisms. The
// tree reads no real token anywhere, and the user's file is untouched.
func TestAgentMCPTokensFaked(t *testing.T) {
	for _, st := range mcpStores {
		for _, mech := range []string{"namespaces", "landlock"} {
			for _, withLogin := range []bool{true, false} {
				name := st.profile + "/" + mech + "/nologin"
				if withLogin {
					name = st.profile + "/" + mech + "/login"
				}
				t.Run(name, func(t *testing.T) {
					exe, home := unprivilegedInstall(t)
					tag := strings.ToUpper(st.profile[:2])
					acc, ref := "mcpa"+strings.Repeat(tag+"a2", 20), "mcpr"+strings.Repeat(tag+"r2", 20)
					reals := []string{acc, ref}
					if withLogin {
						for _, ag := range agentLogins {
							if ag.profile == st.profile {
								r := []string{"acc2" + strings.Repeat(tag+"a1", 20), "ref2" + strings.Repeat(tag+"r1", 20), "sig2" + strings.Repeat(tag+"s1", 20)}
								writeOwned(t, filepath.Join(home, ag.rel), ag.file(r))
								reals = append(reals, r...)
							}
						}
					}
					real := st.json(acc, ref)
					writeOwned(t, filepath.Join(home, st.dir, st.file), real)
					out := runAgentTree(t, exe, home, st.profile, mech,
						`echo "view: `+st.agentPath+`"; echo "<<"; cat `+st.agentPath+`; echo ">>"; cat "$HOME/`+st.dir+`/`+st.file+`" 2>&1; cat "$HOME/`+st.dir+`"/* 2>&1`)
					for _, r := range reals {
						if strings.Contains(out, r) {
							t.Fatalf("the tree read a real token:\n%s", out)
						}
					}
					if !strings.Contains(out, "view: "+filepath.Join(home, st.dir, ".envsieve-view-")) {
						t.Errorf("the agent's variable names no view:\n%s", out)
					}
					_, rest, _ := strings.Cut(out, "<<\n")
					seen, _, _ := strings.Cut(rest, ">>")
					a, r := st.tokens([]byte(seen))
					if len(a) != len(acc) || len(r) != len(ref) {
						t.Errorf("the agent reads no fake MCP tokens where it reads them:\n%s", out)
					}
					if b, err := os.ReadFile(filepath.Join(home, st.dir, st.file)); err != nil || string(b) != real {
						t.Errorf("the user's file changed: %v", err)
					}
				})
			}
		}
	}
}

// TestAgentLoginOwnDirFaked: a user who set CLAUDE_CONFIG_DIR, CODEX_HOME
// or GEMINI_CLI_HOME to their own directory keeps the agent's login
// there; the agent in the sealed tree is logged in by a fake of it, in a
// view of that directory its variable names (not the default's), by both
// seal mechanisms: it reads no real token, a new entry it makes in its
// state dir is there after the launch, and the user's file is untouched.
func TestAgentLoginOwnDirFaked(t *testing.T) {
	for _, ag := range agentLogins {
		if ag.name != "" {
			continue
		}
		env := map[string]string{"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME", "gemini": "GEMINI_CLI_HOME"}[ag.profile]
		for _, mech := range []string{"namespaces", "landlock"} {
			t.Run(ag.profile+"/"+mech, func(t *testing.T) {
				exe, home := unprivilegedInstall(t)
				tag := strings.ToUpper(ag.profile[:2])
				reals := []string{"acc3" + strings.Repeat(tag+"a3", 20), "ref3" + strings.Repeat(tag+"r3", 20), "sig3" + strings.Repeat(tag+"s3", 20)}
				own := filepath.Join(home, "agentdirs", ag.profile)
				rel := strings.TrimPrefix(ag.rel, ".claude/")
				rel = strings.TrimPrefix(rel, ".codex/")
				if ag.profile == "gemini" {
					rel = ag.rel // GEMINI_CLI_HOME names the home of .gemini
				}
				real := ag.file(reals)
				writeOwned(t, filepath.Join(own, rel), real)
				for d := filepath.Join(own, rel); d != home; d = filepath.Dir(d) {
					if err := os.Chown(d, 65534, 65534); err != nil {
						t.Fatal(err)
					}
				}
				state := filepath.Dir(filepath.Join(own, rel))
				out := runAgentTree(t, exe, home, ag.profile, mech,
					`echo "var: $`+env+`"; echo "<<"; cat `+ag.agentPath+`; echo ">>"; cat "`+filepath.Join(own, rel)+`" 2>&1; cat "`+state+`"/* 2>&1; `+
						`echo new > "$(dirname `+ag.agentPath+`)/new-entry"`, env+"="+own)
				for _, r := range reals {
					if strings.Contains(out, r) {
						t.Fatalf("the tree read a real token:\n%s", out)
					}
				}
				if !strings.Contains(out, "var: "+filepath.Join(state, ".envsieve-view-")) {
					t.Errorf("%s names no view of the user's own state dir:\n%s", env, out)
				}
				_, rest, _ := strings.Cut(out, "<<\n")
				seen, _, _ := strings.Cut(rest, ">>")
				if tok := ag.token([]byte(seen)); len(tok) != len(reals[0]) {
					t.Errorf("the agent reads no fake login where it reads it:\n%s", out)
				}
				if b, err := os.ReadFile(filepath.Join(own, rel)); err != nil || string(b) != real {
					t.Errorf("the user's file changed: %v", err)
				}
				if b, err := os.ReadFile(filepath.Join(state, "new-entry")); err != nil || string(b) != "new\n" {
					t.Errorf("the tree's new entry did not reach the user's state dir: %v", err)
				}
				if m, _ := filepath.Glob(filepath.Join(state, ".envsieve-view-*")); len(m) > 0 {
					t.Errorf("the view stayed: %v", m)
				}
			})
		}
	}
}
