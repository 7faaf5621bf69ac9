//go:build linux

package main

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// agentLogin is one agent's own login file, as its CLI writes it: rel
// under HOME, the JSON of a login holding the tokens reals, and the
// shell word that names the file where the agent in the tree reads it
// (its state dir's variable, else the default).
type agentLogin struct {
	// name names the case when one profile has several.
	name                    string
	profile, rel, agentPath string
	file                    func(reals []string) string
	// token returns the access token of the file's JSON.
	token func(b []byte) string
}

func jwtOf(sig string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc([]byte(`{"email":"a@example.com"}`)) + "." + sig
}

var agentLogins = []agentLogin{
	{
		profile: "claude", rel: ".claude/.credentials.json",
		agentPath: `"${CLAUDE_CONFIG_DIR:-$HOME/.claude}/.credentials.json"`,
		file: func(r []string) string {
			return `{"claudeAiOauth":{"accessToken":"` + r[0] + `","refreshToken":"` + r[1] +
				`","expiresAt":1000,"scopes":["user:inference"],"subscriptionType":"max"}}`
		},
		token: func(b []byte) string {
			var f struct {
				O struct{ AccessToken string } `json:"claudeAiOauth"`
			}
			json.Unmarshal(b, &f)
			return f.O.AccessToken
		},
	},
	{
		// Claude Code's login with the tokens of an MCP server the user
		// logged in to (mcpOAuth): the server's access token, refresh
		// token and client secret are all r[2] and more.
		name: "claude-mcp", profile: "claude", rel: ".claude/.credentials.json",
		agentPath: `"${CLAUDE_CONFIG_DIR:-$HOME/.claude}/.credentials.json"`,
		file: func(r []string) string {
			return `{"claudeAiOauth":{"accessToken":"` + r[0] + `","refreshToken":"` + r[1] +
				`","expiresAt":1000,"scopes":["user:inference"],"subscriptionType":"max"},` +
				`"mcpOAuth":{"linear|0123abcd":{"serverName":"linear","serverUrl":"https://mcp.linear.app/sse","accessToken":"` + r[2] +
				`","refreshToken":"` + r[2] + `R","expiresAt":1000,"scope":"read","clientId":"c1","clientSecret":"` + r[2] + `C"},` +
				`"local|4567":{"serverName":"local","accessToken":"` + r[2] + `L"}}}`
		},
		token: func(b []byte) string {
			var f struct {
				O struct{ AccessToken string } `json:"claudeAiOauth"`
			}
			json.Unmarshal(b, &f)
			return f.O.AccessToken
		},
	},
	{
		profile: "codex", rel: ".codex/auth.json",
		agentPath: `"${CODEX_HOME:-$HOME/.codex}/auth.json"`,
		file: func(r []string) string {
			return `{"OPENAI_API_KEY":null,"tokens":{"id_token":"` + jwtOf(r[2]) + `","access_token":"` + r[0] +
				`","refresh_token":"` + r[1] + `","account_id":"acct-1"},"last_refresh":"2026-01-01T00:00:00Z"}`
		},
		token: func(b []byte) string {
			var f struct {
				T struct {
					AccessToken string `json:"access_token"`
				} `json:"tokens"`
			}
			json.Unmarshal(b, &f)
			return f.T.AccessToken
		},
	},
	{
		profile: "gemini", rel: ".gemini/oauth_creds.json",
		agentPath: `"${GEMINI_CLI_HOME:-$HOME}/.gemini/oauth_creds.json"`,
		file: func(r []string) string {
			return `{"access_token":"` + r[0] + `","refresh_token":"` + r[1] + `","scope":"openid","token_type":"Bearer","id_token":"` +
				jwtOf(r[2]) + `","expiry_date":1000}`
		},
		token: func(b []byte) string {
			var f struct {
				A string `json:"access_token"`
			}
			json.Unmarshal(b, &f)
			return f.A
		},
	},
}

// TestAgentLoginFiles: the agents' own login files (Claude Code's
// .credentials.json, Codex's auth.json, Gemini CLI's oauth_creds.json) lie
// in state directories the tree writes. A hostile command of a sealed
// `envsieve run --profile NAME`, run as an unprivileged user, reads the
// file at its real path, where the agent reads it, and everything in the
// state dir; it finds only fakes, by both seal mechanisms, also after the
// user logs in again outside (a new real file renamed over the old one).
// The agent's file is a fake it may rewrite (a refresh); a new top-level
// entry the tree makes in the agent's state dir stays after the launch,
// and the user's real file is untouched by the tree.
func TestAgentLoginFiles(t *testing.T) {
	for _, ag := range agentLogins {
		// c-init: the namespaces made by envsieve-init (init.c), which
		// holds the state dir as seal.Apply does.
		for _, mech := range []string{"namespaces", "c-init", "landlock"} {
			name := ag.profile
			if ag.name != "" {
				name = ag.name
			}
			t.Run(name+"/"+mech, func(t *testing.T) { testAgentLoginFile(t, ag, mech) })
		}
	}
}

func testAgentLoginFile(t *testing.T, ag agentLogin, mech string) {
	landlock := mech == "landlock"
	exe, home := unprivilegedInstall(t)
	tag := strings.ToUpper(ag.profile[:1]) + ag.profile[1:2]
	reals := []string{"acc1" + strings.Repeat(tag+"a1", 20), "ref1" + strings.Repeat(tag+"r1", 20), "sig1" + strings.Repeat(tag+"s1", 20)}
	news := []string{"acc2" + strings.Repeat(tag+"a2", 21), "ref2" + strings.Repeat(tag+"r2", 21), "sig2" + strings.Repeat(tag+"s2", 21)}
	all := append(append([]string{}, reals...), news...)
	masked := func(s string) string {
		for i, r := range all {
			s = strings.ReplaceAll(s, r, "<REAL"+string(rune('0'+i))+">")
		}
		return s
	}
	realFile := filepath.Join(home, ag.rel)
	stateDir := filepath.Dir(realFile)
	writeOwned(t, realFile, ag.file(reals))
	writeOwned(t, filepath.Join(stateDir, "sub", "kept"), "state")
	phases := phaseDir(t) // not under HOME, which the seal keeps read-only
	real := `"$HOME/` + ag.rel + `"`
	script := `
echo "real: $(cat ` + real + ` 2>&1)"
echo "agent: $(cat ` + ag.agentPath + ` 2>&1)"
echo "all: $(cat "$HOME/` + filepath.Dir(ag.rel) + `"/* "$HOME/` + filepath.Dir(ag.rel) + `"/*/* 2>&1)"
d=$(dirname ` + ag.agentPath + `)
echo new > "$d/made-in-tree" && echo made
echo more >> "$d/sub/kept" && echo appended
printf '%s' "$(cat ` + ag.agentPath + `)" > "$d/.tmp" && mv "$d/.tmp" ` + ag.agentPath + ` && echo rewritten
touch ` + phases + `/one
while [ ! -e ` + phases + `/two ]; do sleep 0.05; done
echo "real after: $(cat ` + real + ` 2>&1)"
echo "agent after: $(cat ` + ag.agentPath + ` 2>&1)"
echo "all after: $(cat "$HOME/` + filepath.Dir(ag.rel) + `"/* 2>&1)"
`
	argv := []string{exe, "run", "--profile", ag.profile, "--", "/bin/sh", "-c", script}
	if landlock {
		noNS := filepath.Join(filepath.Dir(exe), "nouserns")
		copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		argv = append([]string{noNS}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "ENVSIEVE_DEBUG=1"}
	if mech == "c-init" {
		cmd.Env = append(cmd.Env, "ENVSIEVE_SHIM="+shimtest.Lib(t))
	}
	cmd.Dir = home
	cmd.SysProcAttr = asUnprivileged()
	got := runInPhases(t, cmd, phases, masked, func() {
		// The user logs in again outside: the CLI writes a new file and
		// renames it over the old one.
		writeOwned(t, realFile+".new", ag.file(news))
		if err := os.Rename(realFile+".new", realFile); err != nil {
			t.Fatal(err)
		}
	})
	for _, r := range all {
		if strings.Contains(got, r) {
			t.Errorf("a real token is in what the tree read:\n%s", masked(got))
			break
		}
	}
	if landlock && !strings.Contains(got, "seal: landlock;") {
		t.Errorf("the tree was not sealed by Landlock:\n%s", masked(got))
	}
	// The agent reads a fake of the access token where it looks.
	var agentLine string
	for _, l := range strings.Split(got, "\n") {
		if v, ok := strings.CutPrefix(l, "agent: "); ok {
			agentLine = v
		}
	}
	if tok := ag.token([]byte(agentLine)); len(tok) != len(reals[0]) || tok == reals[0] {
		t.Errorf("the agent's file does not hold a fake access token:\n%s", masked(got))
	}
	for _, want := range []string{"made", "appended", "rewritten"} {
		if !strings.Contains(got, "\n"+want+"\n") {
			t.Errorf("the tree could not write its state dir (%s):\n%s", want, masked(got))
		}
	}
	// The real file is the user's new login, untouched.
	if b, _ := os.ReadFile(realFile); string(b) != ag.file(news) {
		t.Errorf("the user's real file changed: %s", masked(string(b)))
	}
	if b, err := os.ReadFile(filepath.Join(stateDir, "made-in-tree")); err != nil || string(b) != "new\n" {
		t.Errorf("a file the tree made in the agent's state dir did not stay: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(stateDir, "sub", "kept")); string(b) != "statemore\n" {
		t.Errorf("a write to the state dir's subdirectory did not stay: %q", b)
	}
	ents, _ := os.ReadDir(stateDir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".envsieve") {
			t.Errorf("the launch left %s in the state dir", e.Name())
		}
	}
}

// connectProxy starts an HTTP proxy that sends every CONNECT to srv: the
// broker's upstream, so that srv plays every host it has a certificate
// for.
func connectProxy(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		hj, _ := w.(http.Hijacker)
		cc, rw, err := hj.Hijack()
		if err != nil {
			c.Close()
			return
		}
		io.WriteString(cc, "HTTP/1.1 200 OK\r\n\r\n")
		go func() { io.Copy(c, rw); c.Close() }()
		io.Copy(cc, c)
		cc.Close()
	}))
	t.Cleanup(up.Close)
	return up.URL
}

// TestClaudeLoginSealed: the real Claude Code, logged in by the user's
// OAuth credentials file, under `envsieve run --profile claude` with
// nothing else configured, run as an unprivileged user by both seal
// mechanisms, against a stand-in of api.anthropic.com and of the token
// endpoint. A first request carries the real access token upstream; the
// tree then finds its access token expired (the script ages its own copy),
// Claude Code refreshes with the fake refresh token (the stand-in gets the
// real one), and a second request carries the new real access token. The
// tree reads only fakes throughout, the user's real file afterwards holds
// the new real tokens, and the view is gone.
func TestClaudeLoginSealed(t *testing.T) {
	for _, mech := range []string{"namespaces", "landlock"} {
		t.Run(mech, func(t *testing.T) { testClaudeLoginSealed(t, mech == "landlock") })
	}
}

func testClaudeLoginSealed(t *testing.T, landlock bool) {
	claude := agentCLI(t, "@anthropic-ai/claude-code/bin/claude.exe")
	oldA, oldR := "sk-ant-oat01-"+strings.Repeat("Ol1x", 22)+"-AA", "sk-ant-ort01-"+strings.Repeat("Or2x", 22)+"-AA"
	newA, newR := "sk-ant-oat01-"+strings.Repeat("Nw3x", 22)+"-AA", "sk-ant-ort01-"+strings.Repeat("Nr4x", 22)+"-AA"
	reals := []string{oldA, oldR, newA, newR}
	mask := func(s string) string {
		for _, r := range reals {
			s = strings.ReplaceAll(s, r, "<REAL>")
		}
		return s
	}
	m := &modelStandIn{canary: "echo hi"}
	var mu sync.Mutex
	var refreshes []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/oauth/token" {
			var req map[string]any
			json.NewDecoder(r.Body).Decode(&req)
			rt, _ := req["refresh_token"].(string)
			mu.Lock()
			refreshes = append(refreshes, rt)
			mu.Unlock()
			if rt != oldR {
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"token_type":"Bearer","access_token":"`+newA+`","refresh_token":"`+newR+`","expires_in":28800,"scope":"user:inference user:profile"}`)
			return
		}
		if a := r.Header.Get("Authorization"); a != "" && a != "Bearer "+oldA && a != "Bearer "+newA {
			http.Error(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid token"}}`, http.StatusUnauthorized)
			return
		}
		m.anthropic(w, r)
	}))
	cert, caPEM := hostCert(t, "api.anthropic.com", "platform.claude.com", "console.anthropic.com")
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	upstream := connectProxy(t, srv)

	exe, home := unprivilegedInstall(t)
	if landlock {
		// Landlock seals the directories above HOME's sealed files: the
		// home is where a user's is, out of /tmp, which Claude Code writes.
		home = unprivilegedHomeIn(t, "/var/tmp")
	}
	realFile := filepath.Join(home, ".claude", ".credentials.json")
	writeOwned(t, realFile, `{"claudeAiOauth":{"accessToken":"`+oldA+`","refreshToken":"`+oldR+
		`","expiresAt":4102444800000,"scopes":["user:inference","user:profile"],"subscriptionType":"max"}}`)
	writeOwned(t, filepath.Join(home, "standin-ca.pem"), string(caPEM))
	// Claude Code's global config, in HOME (issue 25: the tree could not
	// write it).
	globalConfig := `{"numStartups":7,"hasCompletedOnboarding":true,"marker":"kept"}`
	writeOwned(t, filepath.Join(home, ".claude.json"), globalConfig)
	policy := filepath.Join(home, "policy.yaml")
	writeOwned(t, policy, "version: 1\nbroker:\n  upstream_ca: ["+filepath.Join(home, "standin-ca.pem")+"]\n")
	work := filepath.Join(home, "work")
	writeOwned(t, filepath.Join(work, "README"), "work\n")
	creds := `"$CLAUDE_CONFIG_DIR/.credentials.json"`
	script := `set -e
echo "real: $(cat "$HOME/.claude/.credentials.json" 2>&1 || true)"
` + claude + ` -p "Say hi." </dev/null
echo "first-done"
sed 's/"expiresAt":[0-9]*/"expiresAt":1000/' ` + creds + ` > "$CLAUDE_CONFIG_DIR/aged" && mv "$CLAUDE_CONFIG_DIR/aged" ` + creds + `
` + claude + ` -p "Say hi again." </dev/null
echo "second-done"
echo "tree file: $(cat ` + creds + `)"
echo "real after: $(cat "$HOME/.claude/.credentials.json" 2>&1 || true)"
`
	argv := []string{exe, "run", "--profile", "claude", "--policy", policy, "--", "/bin/sh", "-c", script}
	if landlock {
		noNS := filepath.Join(filepath.Dir(exe), "nouserns")
		copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		argv = append([]string{noNS}, argv...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_RUNTIME_DIR=" + home, "HTTPS_PROXY=" + upstream,
		"DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "ENVSIEVE_DEBUG=1"}
	cmd.Dir = work
	cmd.SysProcAttr = asUnprivileged()
	out, err := cmd.CombinedOutput()
	got := string(out)
	if err != nil {
		t.Fatalf("envsieve run: %v\n%s", err, mask(got))
	}
	for _, r := range reals {
		if strings.Contains(got, r) {
			t.Fatalf("the tree read a real token:\n%s", mask(got))
		}
	}
	if landlock && !strings.Contains(got, "seal: landlock;") {
		t.Errorf("the tree was not sealed by Landlock:\n%s", mask(got))
	}
	for _, want := range []string{"first-done", "second-done", "tree file: {"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q missing:\n%s", want, mask(got))
		}
	}
	mu.Lock()
	if len(refreshes) == 0 || refreshes[0] != oldR {
		t.Errorf("the token endpoint did not get the real refresh token (%d refreshes)", len(refreshes))
	}
	mu.Unlock()
	m.mu.Lock()
	keys := slices.Clone(m.keys)
	m.mu.Unlock()
	sawOld, sawNew := false, false
	for _, k := range keys {
		switch k {
		case "Bearer " + oldA:
			sawOld = true
		case "Bearer " + newA:
			sawNew = sawOld
		default:
			t.Errorf("a model request reached the stand-in without a real token: %s", mask(k))
		}
	}
	if !sawOld || !sawNew {
		t.Errorf("want a request with the real access token, then one with the new one (%d requests):\n%s", len(keys), mask(got))
	}
	b, _ := os.ReadFile(realFile)
	if !strings.Contains(string(b), newA) || !strings.Contains(string(b), newR) || !strings.Contains(string(b), `"subscriptionType":"max"`) {
		t.Errorf("the user's real file does not hold the new real tokens: %s", mask(string(b)))
	}
	ents, _ := os.ReadDir(filepath.Join(home, ".claude"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".envsieve") {
			t.Errorf("the launch left %s in ~/.claude", e.Name())
		}
	}
	// Claude Code read its global config in the tree and wrote it back to
	// HOME, where it keeps it outside envsieve.
	var gc struct {
		NumStartups    int    `json:"numStartups"`
		Marker         string `json:"marker"`
		FirstStartTime string `json:"firstStartTime"`
	}
	b, err = os.ReadFile(filepath.Join(home, ".claude.json"))
	if json.Unmarshal(b, &gc); err != nil || gc.Marker != "kept" || gc.NumStartups != 7 || gc.FirstStartTime == "" {
		t.Errorf("~/.claude.json was not read and written by the tree's Claude Code (%v): %s", err, mask(string(b)))
	}
	if _, err := os.Lstat(filepath.Join(home, ".claude", ".claude.json")); err == nil {
		t.Error("the tree's global config landed in ~/.claude")
	}
}

// TestCodexLoginSealed: the real Codex, logged in with ChatGPT by the
// user's ~/.codex/auth.json last refreshed long ago, under `envsieve run
// --profile codex` by both seal mechanisms: it refreshes at
// auth.openai.com with the fake refresh token (the stand-in gets the real
// one) and calls the ChatGPT backend with the new fake access token (the
// stand-in gets the new real one). The tree reads only fakes; the user's
// real file afterwards holds the new real tokens.
func TestCodexLoginSealed(t *testing.T) {
	for _, mech := range []string{"namespaces", "landlock"} {
		t.Run(mech, func(t *testing.T) { testCodexLoginSealed(t, mech == "landlock") })
	}
}

func testCodexLoginSealed(t *testing.T, landlock bool) {
	codex := agentCLI(t, ".bin/codex")
	e := base64.RawURLEncoding.EncodeToString
	jwt := func(claims, sig string) string {
		return e([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + e([]byte(claims)) + "." + sig
	}
	claims := `{"email":"dev@example.com","exp":4102444800,"https://api.openai.com/auth":{"chatgpt_plan_type":"pro","chatgpt_account_id":"acct-1"}}`
	oldID, newID := jwt(claims, strings.Repeat("Oi1x", 20)), jwt(claims, strings.Repeat("Ni2x", 20))
	oldA, newA := jwt(`{"exp":4102444800}`, strings.Repeat("Oa3x", 20)), jwt(`{"exp":4102444800}`, strings.Repeat("Na4x", 20))
	oldR, newR := "rt_"+strings.Repeat("Or5x", 12), "rt_"+strings.Repeat("Nr6x", 12)
	reals := []string{oldID, newID, oldA, newA, oldR, newR}
	mask := func(s string) string {
		for _, r := range reals {
			s = strings.ReplaceAll(s, r, "<REAL>")
			if parts := strings.Split(r, "."); len(parts) == 3 {
				s = strings.ReplaceAll(s, parts[2], "<REAL SIGNATURE>")
			}
		}
		return s
	}
	m := &modelStandIn{canary: "echo hi"}
	var mu sync.Mutex
	var refreshes, auths []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/oauth/token" {
			var req map[string]any
			json.NewDecoder(r.Body).Decode(&req)
			rt, _ := req["refresh_token"].(string)
			mu.Lock()
			refreshes = append(refreshes, rt)
			mu.Unlock()
			if rt != oldR {
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id_token":"`+newID+`","access_token":"`+newA+`","refresh_token":"`+newR+`","expires_in":864000}`)
			return
		}
		mu.Lock()
		auths = append(auths, r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		m.openai(w, r)
	}))
	cert, caPEM := hostCert(t, "auth.openai.com", "chatgpt.com", "api.openai.com")
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	upstream := connectProxy(t, srv)

	exe, home := unprivilegedInstall(t)
	if landlock {
		home = unprivilegedHomeIn(t, "/var/tmp")
	}
	realFile := filepath.Join(home, ".codex", "auth.json")
	writeOwned(t, realFile, "{\n  \"OPENAI_API_KEY\": null,\n  \"tokens\": {\n    \"id_token\": \""+oldID+"\",\n    \"access_token\": \""+oldA+
		"\",\n    \"refresh_token\": \""+oldR+"\",\n    \"account_id\": \"acct-1\"\n  },\n  \"last_refresh\": \"2020-01-01T00:00:00Z\"\n}")
	writeOwned(t, filepath.Join(home, ".codex", "config.toml"), "check_for_update_on_startup = false\n")
	writeOwned(t, filepath.Join(home, "standin-ca.pem"), string(caPEM))
	policy := filepath.Join(home, "policy.yaml")
	writeOwned(t, policy, "version: 1\nbroker:\n  upstream_ca: ["+filepath.Join(home, "standin-ca.pem")+"]\n")
	work := filepath.Join(home, "work")
	writeOwned(t, filepath.Join(work, "README"), "work\n")
	script := `echo "real: $(cat "$HOME/.codex/auth.json" 2>&1)"
` + codex + ` exec --skip-git-repo-check -s danger-full-access --disable responses_websockets --disable responses_websockets_v2 "Say hi." </dev/null
echo "codex-exit: $?"
echo "tree file: $(cat "$CODEX_HOME/auth.json")"
echo "real after: $(cat "$HOME/.codex/auth.json" 2>&1)"
`
	argv := []string{exe, "run", "--profile", "codex", "--policy", policy, "--", "/bin/sh", "-c", script}
	if landlock {
		noNS := filepath.Join(filepath.Dir(exe), "nouserns")
		copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		argv = append([]string{noNS}, argv...)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_RUNTIME_DIR=" + home, "HTTPS_PROXY=" + upstream, "ENVSIEVE_DEBUG=1"}
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
	if landlock && !strings.Contains(got, "seal: landlock;") {
		t.Errorf("the tree was not sealed by Landlock:\n%s", mask(got))
	}
	if !strings.Contains(got, "tree file: {") {
		t.Errorf("the tree's Codex has no login file:\n%s", mask(got))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(refreshes) == 0 || refreshes[0] != oldR {
		t.Errorf("the token endpoint did not get the real refresh token (%d refreshes):\n%s", len(refreshes), mask(got))
	}
	after := 0
	for _, a := range auths {
		if strings.HasSuffix(a, " Bearer "+newA) {
			after++
		} else if strings.Contains(a, "Bearer ") {
			t.Errorf("a backend request without the new real access token: %s", mask(a))
		}
	}
	if after == 0 {
		t.Errorf("no backend request carried the new real access token:\n%s", mask(got))
	}
	b, _ := os.ReadFile(realFile)
	if !strings.Contains(string(b), newA) || !strings.Contains(string(b), newR) || !strings.Contains(string(b), newID) {
		t.Errorf("the user's real file does not hold the new real tokens: %s", mask(string(b)))
	}
}

// TestExplainAgentLogins: explain lists the agents' own login files like
// the other login files: a fake under the agent's profile, with the hosts
// bound and the variable that names the agent's copy; passed unsealed.
func TestExplainAgentLogins(t *testing.T) {
	exe, home := unprivilegedInstall(t)
	reals := []string{"acc1" + strings.Repeat("Xa1", 10), "ref1" + strings.Repeat("Xr1", 10), "sig1" + strings.Repeat("Xs1", 10)}
	for _, ag := range agentLogins {
		writeOwned(t, filepath.Join(home, ag.rel), ag.file(reals))
	}
	explain := func(args ...string) string {
		cmd := exec.Command(exe, append(append([]string{"explain"}, args...), "--", "true")...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
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
	for _, c := range []struct{ profile, rel, host, env string }{
		{"claude", ".claude/.credentials.json", "api.anthropic.com", "CLAUDE_CONFIG_DIR"},
		{"codex", ".codex/auth.json", "auth.openai.com", "CODEX_HOME"},
		{"gemini", ".gemini/oauth_creds.json", "oauth2.googleapis.com", "GEMINI_CLI_HOME"},
	} {
		got := explain("--profile", c.profile)
		var line string
		for _, l := range strings.Split(got, "\n") {
			if strings.HasPrefix(l, "login:   "+filepath.Join(home, c.rel)+" ") {
				line = l
			}
		}
		if !strings.Contains(line, " fake") || !strings.Contains(line, c.host) || !strings.Contains(line, c.env) {
			t.Errorf("explain --profile %s: the login line of %s: %q\n%s", c.profile, c.rel, line, got)
		}
	}
	if open := explain(); !strings.Contains(open, "login:   "+filepath.Join(home, ".claude/.credentials.json")+" passed") {
		t.Errorf("explain unsealed: the file is not passed:\n%s", open)
	}
}

// TestGeminiLoginSealed: the real Gemini CLI, logged in with Google by the
// user's ~/.gemini/oauth_creds.json whose access token has expired, under
// `envsieve run --profile gemini`: it refreshes at oauth2.googleapis.com
// with the fake refresh token in a form body (the stand-in gets the real
// one), checks the new token at the token info endpoint (the stand-in gets
// the new real one), and the user's real file afterwards holds the new real
// tokens. The stand-in does not play Code Assist, so the turn itself fails
// after that; the tree reads only fakes throughout.
func TestGeminiLoginSealed(t *testing.T) {
	gemini := agentCLI(t, "@google/gemini-cli/bundle/gemini.js")
	oldA, newA := "ya29.a0"+strings.Repeat("Ga1x", 30), "ya29.a0"+strings.Repeat("Gn2x", 30)
	oldR, newR := "1//0g"+strings.Repeat("Gr3x", 20), "1//0g"+strings.Repeat("Gs4x", 20)
	reals := []string{oldA, newA, oldR, newR}
	mask := func(s string) string {
		for _, r := range reals {
			s = strings.ReplaceAll(s, r, "<REAL>")
		}
		return s
	}
	var mu sync.Mutex
	var refreshes, auths []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host == "oauth2.googleapis.com" && r.URL.Path == "/token" {
			r.ParseForm()
			rt := r.PostForm.Get("refresh_token")
			mu.Lock()
			refreshes = append(refreshes, rt)
			mu.Unlock()
			if rt != oldR {
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"access_token":"`+newA+`","refresh_token":"`+newR+`","expires_in":3599,"scope":"openid","token_type":"Bearer"}`)
			return
		}
		mu.Lock()
		auths = append(auths, r.Host+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path == "/tokeninfo" && r.Header.Get("Authorization") == "Bearer "+newA {
			// google-auth-library checks the refreshed token here.
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"expires_in":3599,"scope":"openid https://www.googleapis.com/auth/cloud-platform"}`)
			return
		}
		http.Error(w, `{"error":{"code":403,"message":"stand-in"}}`, http.StatusForbidden)
	}))
	cert, caPEM := hostCert(t, "oauth2.googleapis.com", "cloudcode-pa.googleapis.com", "www.googleapis.com")
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	upstream := connectProxy(t, srv)

	exe, home := unprivilegedInstall(t)
	realFile := filepath.Join(home, ".gemini", "oauth_creds.json")
	writeOwned(t, realFile, `{"access_token":"`+oldA+`","refresh_token":"`+oldR+`","scope":"openid","token_type":"Bearer","expiry_date":1000}`)
	writeOwned(t, filepath.Join(home, ".gemini", "settings.json"),
		`{"security": {"auth": {"selectedType": "oauth-personal"}}, "general": {"disableAutoUpdate": true}, "telemetry": {"enabled": false}}`)
	writeOwned(t, filepath.Join(home, "standin-ca.pem"), string(caPEM))
	policy := filepath.Join(home, "policy.yaml")
	writeOwned(t, policy, "version: 1\nbroker:\n  upstream_ca: ["+filepath.Join(home, "standin-ca.pem")+"]\n")
	work := filepath.Join(home, "work")
	writeOwned(t, filepath.Join(work, "README"), "work\n")
	script := `echo "real: $(cat "$HOME/.gemini/oauth_creds.json" 2>&1)"
timeout 60 node ` + gemini + ` -p "Say hi." --skip-trust </dev/null
echo "gemini-exit: $?"
echo "tree file: $(cat "$GEMINI_CLI_HOME/.gemini/oauth_creds.json")"
`
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, "run", "--profile", "gemini", "--policy", policy, "--", "/bin/sh", "-c", script)
	cmd.WaitDelay = 5 * time.Second
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_RUNTIME_DIR=" + home, "HTTPS_PROXY=" + upstream, "ENVSIEVE_DEBUG=1"}
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
	mu.Lock()
	defer mu.Unlock()
	if len(refreshes) == 0 || refreshes[0] != oldR {
		t.Fatalf("the token endpoint did not get the real refresh token (%d refreshes):\n%s", len(refreshes), mask(got))
	}
	checked := false
	for _, a := range auths {
		if strings.Contains(a, "Bearer ") && !strings.HasSuffix(a, " Bearer "+newA) {
			t.Errorf("a request without the new real access token: %s", mask(a))
		}
		checked = checked || a == "oauth2.googleapis.com/tokeninfo Bearer "+newA
	}
	if !checked {
		t.Errorf("the token info endpoint did not get the new real access token (%d requests):\n%s", len(auths), mask(got))
	}
	b, _ := os.ReadFile(realFile)
	if !strings.Contains(string(b), newA) || !strings.Contains(string(b), newR) {
		t.Errorf("the user's real file does not hold the new real tokens: %s", mask(string(b)))
	}
}

// TestAgentLoginNoBroker: with no broker (--no-broker) there is no fake to
// show: each agent's login file stays masked in the sealed tree, by both
// mechanisms.
func TestAgentLoginNoBroker(t *testing.T) {
	t.Parallel()
	for _, landlock := range []bool{false, true} {
		exe, home := unprivilegedInstall(t)
		reals := []string{"acc1" + strings.Repeat("Nb1", 10), "ref1" + strings.Repeat("Nb2", 10), "sig1" + strings.Repeat("Nb3", 10)}
		script := ""
		for _, ag := range agentLogins {
			writeOwned(t, filepath.Join(home, ag.rel), ag.file(reals))
			script += `cat "$HOME/` + ag.rel + `" ` + ag.agentPath + "; "
		}
		script += "echo ran"
		argv := []string{exe, "run", "--profile", "claude", "--no-broker", "--", "/bin/sh", "-c", script}
		if landlock {
			noNS := filepath.Join(filepath.Dir(exe), "nouserns")
			copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
			argv = append([]string{noNS}, argv...)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		out, err := cmd.CombinedOutput()
		for _, r := range reals {
			if strings.Contains(string(out), r) {
				t.Fatalf("landlock %v: the tree read a real token", landlock)
			}
		}
		if err != nil || !strings.HasSuffix(string(out), "ran\n") {
			t.Fatalf("landlock %v: the tree did not run: %v\n%s", landlock, err, out)
		}
	}
}

// TestAgentLoginViewKeepsMasks: a file of the agent's state dir that the
// policy masks (seal.mask) stays masked in the agent's view of it too,
// where the view copies the state dir's other small files.
func TestAgentLoginViewKeepsMasks(t *testing.T) {
	exe, home := unprivilegedInstall(t)
	real := "sec1" + strings.Repeat("Vm1", 10)
	writeOwned(t, filepath.Join(home, ".claude", ".credentials.json"), agentLogins[0].file([]string{"acc1" + strings.Repeat("Vm2", 10), "ref1" + strings.Repeat("Vm3", 10)}))
	writeOwned(t, filepath.Join(home, ".claude", "mcp-secrets.json"), real)
	policy := filepath.Join(home, "policy.yaml")
	writeOwned(t, policy, "version: 1\nprofiles:\n  agent:\n    extends: [builtin:claude]\n    seal: {mode: on, mask: [~/.claude/mcp-secrets.json]}\n")
	cmd := exec.Command(exe, "run", "--policy", policy, "--profile", "agent", "--", "/bin/sh", "-c",
		`test -n "$CLAUDE_CONFIG_DIR" && cat "$CLAUDE_CONFIG_DIR/mcp-secrets.json" "$HOME/.claude/mcp-secrets.json"; echo ran`)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
	cmd.Dir = home
	cmd.SysProcAttr = asUnprivileged()
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), real) {
		t.Fatal("the tree read a masked file of the state dir through the agent's view")
	}
	if err != nil || !strings.HasSuffix(string(out), "ran\n") {
		t.Fatalf("the tree did not run: %v\n%s", err, out)
	}
}

// TestAgentLoginNotUnderstood: a login file envsieve does not fake soundly
// (Claude Code's with an MCP server's entry holding a secret field the
// format does not know) stays masked, and
// the agent's launch says so; the agent's state dir still works.
func TestAgentLoginNotUnderstood(t *testing.T) {
	t.Parallel()
	// c-init: with envsieve-init installed, a launch with no broker could
	// exec the init in its place, and nothing would move the tree's work
	// out of the view at the end.
	for _, mech := range []string{"namespaces", "c-init", "landlock"} {
		t.Run(mech, func(t *testing.T) { testAgentLoginNotUnderstood(t, mech) })
	}
}

func testAgentLoginNotUnderstood(t *testing.T, mech string) {
	exe, home := unprivilegedInstall(t)
	real := "sk-ant-oat01-" + strings.Repeat("Nu1x", 20)
	mcp := "mcp-" + strings.Repeat("Nu2x", 10)
	writeOwned(t, filepath.Join(home, ".claude", ".credentials.json"),
		`{"claudeAiOauth":{"accessToken":"`+real+`"},"mcpOAuth":{"srv|1":{"accessToken":"`+real+`M","sessionToken":"`+mcp+`"}}}`)
	argv := []string{exe, "run", "--profile", "claude", "--", "/bin/sh", "-c",
		`cat "$HOME/.claude/.credentials.json" "$CLAUDE_CONFIG_DIR/.credentials.json"; echo x > "$CLAUDE_CONFIG_DIR/made" && echo ran`}
	if mech == "landlock" {
		noNS := filepath.Join(filepath.Dir(exe), "nouserns")
		copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		argv = append([]string{noNS}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
	if mech == "c-init" {
		cmd.Env = append(cmd.Env, "ENVSIEVE_SHIM="+shimtest.Lib(t))
	}
	cmd.Dir = home
	cmd.SysProcAttr = asUnprivileged()
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), real) || strings.Contains(string(out), mcp) {
		t.Fatal("the tree read a real token")
	}
	if err != nil || !strings.HasSuffix(string(out), "ran\n") {
		t.Fatalf("the tree did not run: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "warning: login: "+filepath.Join(home, ".claude", ".credentials.json")+" stays masked") {
		t.Errorf("no warning that the agent is not logged in:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(home, ".claude", "made")); err != nil {
		t.Errorf("the agent's state dir was not written: %v", err)
	}
	ents, _ := os.ReadDir(filepath.Join(home, ".claude"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".envsieve") {
			t.Errorf("the launch left %s in ~/.claude", e.Name())
		}
	}
}

// TestAgentMCPTokenFiles: the other files where the agents keep tokens
// (Codex's MCP OAuth fallback .credentials.json and its provider OAuth
// accountgateway_oauth.json; Gemini CLI's mcp-oauth-tokens.json,
// a2a-oauth-tokens.json and its file keychain gemini-credentials.json)
// lie in the same writable state dirs. A hostile command of a sealed
// launch, run as an unprivileged user, reads each at its real path and
// through the agent's view, by both seal mechanisms, with and without
// the agent's own login beside it (a view, or none); it finds no token.
func TestAgentMCPTokenFiles(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		profile, dir, view string
		files              []string
	}{
		{"codex", ".codex", `"$CODEX_HOME"`, []string{".credentials.json", "accountgateway_oauth.json"}},
		{"gemini", ".gemini", `"$GEMINI_CLI_HOME/.gemini"`, []string{"mcp-oauth-tokens.json", "a2a-oauth-tokens.json", "gemini-credentials.json"}},
	} {
		for _, mech := range []string{"namespaces", "landlock"} {
			for _, withLogin := range []bool{true, false} {
				name := tc.profile + "/" + mech + "/nologin"
				if withLogin {
					name = tc.profile + "/" + mech + "/login"
				}
				t.Run(name, func(t *testing.T) {
					exe, home := unprivilegedInstall(t)
					tag := strings.ToUpper(tc.profile[:2])
					tok := "mcp1" + strings.Repeat(tag+"m1", 20)
					if withLogin {
						for _, ag := range agentLogins {
							if ag.profile == tc.profile {
								r := []string{"acc1" + strings.Repeat(tag+"a1", 20), "ref1" + strings.Repeat(tag+"r1", 20), "sig1" + strings.Repeat(tag+"s1", 20)}
								writeOwned(t, filepath.Join(home, ag.rel), ag.file(r))
							}
						}
					}
					script := `echo "view: "` + tc.view + `; `
					for _, f := range tc.files {
						writeOwned(t, filepath.Join(home, tc.dir, f), `{"server":{"token":{"accessToken":"`+tok+`"}}}`)
						script += `cat "$HOME/` + tc.dir + `/` + f + `" 2>&1; `
						if withLogin {
							script += `cat ` + tc.view + `/` + f + ` 2>&1; `
						}
					}
					script += `cat "$HOME/` + tc.dir + `"/* 2>&1; echo ran`
					argv := []string{exe, "run", "--profile", tc.profile, "--", "/bin/sh", "-c", script}
					if mech == "landlock" {
						noNS := filepath.Join(filepath.Dir(exe), "nouserns")
						copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
						argv = append([]string{noNS}, argv...)
					}
					cmd := exec.Command(argv[0], argv[1:]...)
					cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
					cmd.Dir = home
					cmd.SysProcAttr = asUnprivileged()
					out, err := cmd.CombinedOutput()
					got := strings.ReplaceAll(string(out), tok, "<REAL>")
					if err != nil || !strings.HasSuffix(got, "ran\n") {
						t.Fatalf("the tree did not run: %v\n%s", err, got)
					}
					if strings.Contains(string(out), tok) {
						t.Errorf("the tree read an MCP token:\n%s", got)
					}
					if withLogin && !strings.Contains(got, "view: "+filepath.Join(home, tc.dir, ".envsieve-view-")) {
						t.Errorf("the tree did not read through the agent's view:\n%s", got)
					}
				})
			}
		}
	}
}

// TestAgentLoginOwnDir: a user who set CLAUDE_CONFIG_DIR, CODEX_HOME or
// GEMINI_CLI_HOME keeps the agent's login (and its MCP token files) in
// that directory, not the default one. A hostile command of a sealed
// launch of that agent's profile, run as an unprivileged user, reads the
// files there, by both seal mechanisms; it finds no token.
func TestAgentLoginOwnDir(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		profile, env, sub string
		files             []string
	}{
		{"claude", "CLAUDE_CONFIG_DIR", "", []string{".credentials.json"}},
		{"codex", "CODEX_HOME", "", []string{"auth.json", ".credentials.json"}},
		{"gemini", "GEMINI_CLI_HOME", ".gemini", []string{"oauth_creds.json", "mcp-oauth-tokens.json"}},
	} {
		for _, mech := range []string{"namespaces", "landlock"} {
			t.Run(tc.profile+"/"+mech, func(t *testing.T) {
				exe, home := unprivilegedInstall(t)
				tok := "own1" + strings.Repeat(strings.ToUpper(tc.profile[:2])+"o1", 20)
				own := filepath.Join(home, "agentdirs", tc.profile)
				dir := filepath.Join(own, tc.sub)
				script := ""
				for _, f := range tc.files {
					writeOwned(t, filepath.Join(dir, f), `{"accessToken":"`+tok+`"}`)
					script += `cat "` + filepath.Join(dir, f) + `" 2>&1; `
				}
				for _, d := range []string{filepath.Join(home, "agentdirs"), own, dir} {
					if err := os.Chown(d, 65534, 65534); err != nil {
						t.Fatal(err)
					}
				}
				script += `cat "` + dir + `"/* 2>&1; echo ran`
				argv := []string{exe, "run", "--profile", tc.profile, "--", "/bin/sh", "-c", script}
				if mech == "landlock" {
					noNS := filepath.Join(filepath.Dir(exe), "nouserns")
					copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
					argv = append([]string{noNS}, argv...)
				}
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, tc.env + "=" + own}
				cmd.Dir = home
				cmd.SysProcAttr = asUnprivileged()
				out, err := cmd.CombinedOutput()
				got := strings.ReplaceAll(string(out), tok, "<REAL>")
				if err != nil || !strings.HasSuffix(got, "ran\n") {
					t.Fatalf("the tree did not run: %v\n%s", err, got)
				}
				if strings.Contains(string(out), tok) {
					t.Errorf("the tree read the login in the user's own state dir:\n%s", got)
				}
			})
		}
	}
}

// phaseDir makes a directory everyone may write, for a tree run in phases
// (runInPhases): the tree's script touches PHASES/one and waits for
// PHASES/two.
func phaseDir(t *testing.T) string {
	t.Helper()
	phases, err := os.MkdirTemp("", "envsieve-phases-") // not under HOME, which the seal keeps read-only
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(phases) })
	os.Chmod(phases, 0o777)
	return phases
}

// runInPhases starts cmd, waits for its tree to reach phase one (the file
// phases/one), runs between (what the user does outside meanwhile), lets
// the tree go on (phases/two) and returns its output once it has ended
// with exit 0. mask hides the real values in what a failure prints.
func runInPhases(t *testing.T, cmd *exec.Cmd, phases string, mask func(string) string, between func()) string {
	t.Helper()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(60 * time.Second)
wait:
	for {
		select {
		case err := <-done:
			t.Fatalf("the tree ended early: %v\n%s", err, mask(out.String()))
		case <-deadline:
			cmd.Process.Kill()
			t.Fatalf("the tree did not reach its first phase\n%s", mask(out.String()))
		case <-time.After(20 * time.Millisecond):
			if _, err := os.Stat(filepath.Join(phases, "one")); err == nil {
				break wait
			}
		}
	}
	between()
	if err := os.WriteFile(filepath.Join(phases, "two"), nil, 0o644); err != nil {
		cmd.Process.Kill()
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("envsieve run: %v\n%s", err, mask(out.String()))
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the tree did not end\n%s", mask(out.String()))
	}
	return out.String()
}
