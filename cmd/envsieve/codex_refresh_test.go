//go:build linux

package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestCodexOAuthRefresh: the real Codex, logged in with ChatGPT by an
// auth.json of fakes last refreshed long ago, run as an unprivileged user
// through the broker. It refreshes at auth.openai.com with the fake
// refresh token in a JSON body (the stand-in gets the real one), then
// calls chatgpt.com's backend with the new fake access token (the stand-in
// gets the new real one); the user's real file afterwards holds the new
// real tokens, the tree's file only the new fakes, its id_token still
// decodable.
func TestCodexOAuthRefresh(t *testing.T) {
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
		}
		return s
	}
	m := &modelStandIn{canary: "echo hi"}
	var mu sync.Mutex
	var refreshes, auths []string
	realJSON := "{\n  \"OPENAI_API_KEY\": null,\n  \"tokens\": {\n    \"id_token\": \"" + oldID + "\",\n    \"access_token\": \"" + oldA +
		"\",\n    \"refresh_token\": \"" + oldR + "\",\n    \"account_id\": \"acct-1\"\n  },\n  \"last_refresh\": \"2020-01-01T00:00:00Z\"\n}"
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/oauth/token" {
			body, _ := io.ReadAll(r.Body)
			var req map[string]any
			json.Unmarshal(body, &req)
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
	home, realFile, _, env := oauthSetup(t, srv, ".codex/auth.json", realJSON, "auth.openai.com", "chatgpt.com", "api.openai.com")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, codex, "exec", "--skip-git-repo-check", "-s", "danger-full-access",
		"--disable", "responses_websockets", "--disable", "responses_websockets_v2", "Say hi.")
	cmd.Dir = home
	cmd.Env = append(env, "CODEX_HOME="+filepath.Join(home, ".codex"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	treeFile, _ := os.ReadFile(filepath.Join(home, ".codex", "auth.json"))
	t.Logf("codex: %v\n%s", err, mask(string(out)))
	for _, r := range reals {
		if strings.Contains(string(out), r) || strings.Contains(string(treeFile), r) {
			t.Fatal("the tree holds a real token")
		}
	}
	mu.Lock()
	if len(refreshes) == 0 || refreshes[0] != oldR {
		t.Errorf("the token endpoint did not get the real refresh token (%d refreshes)", len(refreshes))
	}
	mu.Unlock()
	// The stand-in answers the model's requests, not the ChatGPT
	// backend's workspace routing (/backend-api/wham/accounts/check), so
	// Codex stops before the model; every backend request it made after
	// the refresh carried the new real access token.
	mu.Lock()
	after := 0
	for _, a := range auths {
		if strings.HasSuffix(a, " Bearer "+newA) {
			after++
		} else if strings.Contains(a, "Bearer ") {
			t.Errorf("a backend request without the new real access token: %s", mask(a))
		}
	}
	mu.Unlock()
	if after == 0 {
		t.Error("no backend request carried the new real access token")
	}
	var tf struct {
		Tokens struct {
			IDToken     string `json:"id_token"`
			AccessToken string `json:"access_token"`
		} `json:"tokens"`
	}
	json.Unmarshal(treeFile, &tf)
	if parts := strings.Split(tf.Tokens.IDToken, "."); len(parts) != 3 || parts[1] != strings.Split(newID, ".")[1] || len(tf.Tokens.AccessToken) != len(newA) {
		t.Errorf("the tree's file does not hold the new fakes, its id_token decodable: %s", treeFile)
	}
	got, _ := os.ReadFile(realFile)
	if !strings.Contains(string(got), newA) || !strings.Contains(string(got), newR) || !strings.Contains(string(got), newID) {
		t.Errorf("the user's real file does not hold the new real tokens: %s", mask(string(got)))
	}
}
