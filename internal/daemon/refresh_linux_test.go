package daemon

import (
	"encoding/json"
	"encoding/pem"
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

	"github.com/envsieve/envsieve/internal/broker"
	"github.com/envsieve/envsieve/internal/login"
	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
)

// TestLoginRefreshWrittenBack: Claude Code's OAuth login end to end, the
// tree run as an unprivileged user whose HOME holds the fake credentials
// file (the user's real file elsewhere): the tree's API call reaches the
// stand-in with the real access token; its refresh with the fake refresh
// token reaches the token endpoint with the real one; the tree gets new
// fakes, and its next API call reaches the stand-in with the new real
// access token; the user's real file afterwards holds the new real tokens,
// the tree's file and output only fakes.
func TestLoginRefreshWrittenBack(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run the tree as another user") // CI runs as root
	}
	oldA, oldR := "sk-ant-oat01-"+strings.Repeat("Ol1", 30), "sk-ant-ort01-"+strings.Repeat("Or2", 30)
	newA, newR := "sk-ant-oat01-"+strings.Repeat("Nw3", 30), "sk-ant-ort01-"+strings.Repeat("Nr4", 30)
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path == "/v1/oauth/token" {
			var req map[string]string
			json.Unmarshal(body, &req)
			seen = append(seen, "refresh:"+req["refresh_token"])
			if req["refresh_token"] != oldR {
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
			io.WriteString(w, `{"access_token":"`+newA+`","refresh_token":"`+newR+`","expires_in":28800}`)
			return
		}
		seen = append(seen, "api:"+r.Header.Get("Authorization"))
		io.WriteString(w, "ok\n")
	}))
	defer srv.Close()
	host := srv.Listener.Addr().String()

	base, err := os.MkdirTemp("", "envsieve-refresh-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(base)
	os.Chmod(base, 0o755)
	ca := filepath.Join(base, "upstream-ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
	realFile := filepath.Join(base, "user", ".claude", ".credentials.json")
	os.MkdirAll(filepath.Dir(realFile), 0o700)
	realJSON := `{"claudeAiOauth":{"accessToken":"` + oldA + `","refreshToken":"` + oldR + `","expiresAt":1,"scopes":["user:inference"]}}`
	os.WriteFile(realFile, []byte(realJSON), 0o600)

	// What the launcher does with the format (the seal's placing of the
	// fake file is another piece): the fake file, the creds, the request.
	key := []byte("0123456789abcdef0123456789abcdef")
	f, _ := login.ByPath(".claude/.credentials.json")
	fakeJSON, creds, err := f.Fake([]byte(realJSON), func(name, real string) string { return broker.Fake(key, name, real) })
	if err != nil {
		t.Fatal(err)
	}
	treeHome := filepath.Join(base, "tree")
	os.MkdirAll(filepath.Join(treeHome, ".claude"), 0o755)
	os.WriteFile(filepath.Join(treeHome, ".claude", ".credentials.json"), fakeJSON, 0o644)
	os.Chown(filepath.Join(treeHome, ".claude", ".credentials.json"), 65534, 65534)
	os.Chown(filepath.Join(treeHome, ".claude"), 65534, 65534)
	brokerDir := filepath.Join(base, "broker")
	os.Mkdir(brokerDir, 0o755)
	req := launch.BrokerRequest{Secrets: map[string]string{}, Key: key, UID: 65534, Dir: brokerDir, Env: map[string]string{},
		UpstreamCA: []string{ca}, Logins: []launch.LoginFile{{Path: realFile, Format: f.Name, Renews: map[string]map[string]string{}}}}
	for _, c := range creds {
		// Bound to the stand-in, which plays both hosts.
		req.Bindings = append(req.Bindings, &policy.Binding{Name: c.Name, Hosts: []string{host}, In: c.In, Paths: c.Paths})
		req.Secrets[c.Name] = c.Real
		if c.Renews != nil {
			req.Logins[0].Renews[c.Name] = c.Renews
		}
	}
	var evmu sync.Mutex
	var events []launch.BrokerEvent
	run, err := StartBroker(req, func(e launch.BrokerEvent) { evmu.Lock(); events = append(events, e); evmu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	// The broker runs as the tree's user in a launch; here as root, so
	// its CA files are given to the tree's user.
	ents, _ := os.ReadDir(brokerDir)
	for _, e := range ents {
		os.Chown(filepath.Join(brokerDir, e.Name()), 65534, 65534)
	}

	// The agent, as a shell script: its API call, a refresh, the new
	// tokens saved in its own file, the next API call with them.
	script := `set -e
F=$HOME/.claude/.credentials.json
AT=$(sed 's/.*"accessToken":"\([^"]*\)".*/\1/' $F)
RT=$(sed 's/.*"refreshToken":"\([^"]*\)".*/\1/' $F)
curl -sSf -H "Authorization: Bearer $AT" https://` + host + `/v1/messages
resp=$(curl -sSf -H 'Content-Type: application/json' -d "{\"grant_type\":\"refresh_token\",\"refresh_token\":\"$RT\",\"client_id\":\"c\"}" https://` + host + `/v1/oauth/token)
NA=$(echo "$resp" | sed 's/.*"access_token":"\([^"]*\)".*/\1/')
NR=$(echo "$resp" | sed 's/.*"refresh_token":"\([^"]*\)".*/\1/')
printf '{"claudeAiOauth":{"accessToken":"%s","refreshToken":"%s"}}' "$NA" "$NR" > $F
curl -sSf -H "Authorization: Bearer $NA" https://` + host + `/v1/messages
echo "$resp"
`
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + treeHome}
	for k, v := range run.ChildEnv() {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	mask := func(s string) string {
		for _, r := range []string{oldA, oldR, newA, newR} {
			s = strings.ReplaceAll(s, r, "<REAL>")
		}
		return s
	}
	if err != nil {
		t.Fatalf("the tree's agent: %v\n%s", err, mask(string(out)))
	}
	treeFile, _ := os.ReadFile(filepath.Join(treeHome, ".claude", ".credentials.json"))
	for _, r := range []string{oldA, oldR, newA, newR} {
		if strings.Contains(string(out), r) || strings.Contains(string(treeFile), r) {
			t.Fatalf("the tree holds a real token:\n%s\n%s", mask(string(out)), mask(string(treeFile)))
		}
	}
	mu.Lock()
	want := []string{"api:Bearer " + oldA, "refresh:" + oldR, "api:Bearer " + newA}
	if strings.Join(seen, "\n") != strings.Join(want, "\n") {
		t.Errorf("the stand-in saw (real values masked):\n%s", mask(strings.Join(seen, "\n")))
	}
	mu.Unlock()
	got, _ := os.ReadFile(realFile)
	var rf struct {
		O struct {
			AccessToken, RefreshToken string
			ExpiresAt                 int64
			Scopes                    []string
		} `json:"claudeAiOauth"`
	}
	if err := json.Unmarshal(got, &rf); err != nil || rf.O.AccessToken != newA || rf.O.RefreshToken != newR || rf.O.ExpiresAt <= 1 || len(rf.O.Scopes) != 1 {
		t.Errorf("the user's real file does not hold the new real tokens: %s", mask(string(got)))
	}
	if fi, _ := os.Stat(realFile); fi.Mode().Perm() != 0o600 {
		t.Errorf("the real file's mode is %o", fi.Mode().Perm())
	}
	evmu.Lock()
	defer evmu.Unlock()
	for _, e := range events {
		if e.Place == "write-back" {
			t.Errorf("write-back failed: %+v", e)
		}
	}
}
