//go:build linux

package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
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

	"github.com/envsieve/envsieve/internal/broker"
	"github.com/envsieve/envsieve/internal/daemon"
	"github.com/envsieve/envsieve/internal/login"
	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
)

// TestClaudeOAuthRefresh: the real Claude Code, logged in by an OAuth
// credentials file of fakes whose access token has expired, run as an
// unprivileged user through the broker. It refreshes at
// platform.claude.com with the fake refresh token (the stand-in gets the
// real one), then calls api.anthropic.com with the new fake access token
// (the stand-in gets the new real one); the user's real file afterwards
// holds the new real tokens, the tree's file only fakes. The stand-in plays
// both hosts: the broker reaches them through an upstream proxy of the
// test's that sends every CONNECT to it.
func TestClaudeOAuthRefresh(t *testing.T) {
	claude := agentCLI(t, "@anthropic-ai/claude-code/bin/claude.exe")
	oldA, oldR := "sk-ant-oat01-"+strings.Repeat("Ol1x", 22)+"-AA", "sk-ant-ort01-"+strings.Repeat("Or2x", 22)+"-AA"
	newA, newR := "sk-ant-oat01-"+strings.Repeat("Nw3x", 22)+"-AA", "sk-ant-ort01-"+strings.Repeat("Nr4x", 22)+"-AA"
	mask := func(s string) string {
		for _, r := range []string{oldA, oldR, newA, newR} {
			s = strings.ReplaceAll(s, r, "<REAL>")
		}
		return s
	}

	m := &modelStandIn{canary: "echo hi"}
	var mu sync.Mutex
	var refreshes []string
	realJSON := `{"claudeAiOauth":{"accessToken":"` + oldA + `","refreshToken":"` + oldR + `","expiresAt":1000,"scopes":["user:inference","user:profile"],"subscriptionType":"max"}}`
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
		m.anthropic(w, r)
	}))
	home, realFile, fakeJSON, env := oauthSetup(t, srv, ".claude/.credentials.json", realJSON, "platform.claude.com", "api.anthropic.com")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, claude, "-p", "Say hi.")
	cmd.Dir = home
	cmd.Env = append(env, "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	treeFile, _ := os.ReadFile(filepath.Join(home, ".claude", ".credentials.json"))
	t.Logf("claude: %v\n%s", err, mask(string(out)))
	for _, r := range []string{oldA, oldR, newA, newR} {
		if strings.Contains(string(out), r) || strings.Contains(string(treeFile), r) {
			t.Fatal("the tree holds a real token")
		}
	}
	mu.Lock()
	if len(refreshes) == 0 || refreshes[0] != oldR {
		t.Errorf("the token endpoint did not get the real refresh token (%d refreshes)", len(refreshes))
	}
	mu.Unlock()
	m.mu.Lock()
	keys := strings.Join(m.keys, "\n")
	m.mu.Unlock()
	if !strings.Contains(keys, "Bearer "+newA) {
		t.Errorf("the API did not get the new real access token: %s", mask(keys))
	}
	got, _ := os.ReadFile(realFile)
	if !strings.Contains(string(got), newA) || !strings.Contains(string(got), newR) || !strings.Contains(string(got), `"subscriptionType":"max"`) {
		t.Errorf("the user's real file does not hold the new real tokens: %s", mask(string(got)))
	}
	// Claude Code saved the new fakes it was given in the tree's file
	// (by rename in its directory): the next run in the tree uses them.
	var tf struct {
		O struct{ AccessToken, RefreshToken string } `json:"claudeAiOauth"`
	}
	json.Unmarshal(treeFile, &tf)
	if string(treeFile) == string(fakeJSON) || len(tf.O.AccessToken) != len(newA) || strings.Contains(string(fakeJSON), tf.O.AccessToken) {
		t.Errorf("the tree's file does not hold new fakes: %s", treeFile)
	}
}

// oauthSetup gives srv (unstarted) a certificate for hosts and starts it,
// writes the user's real login file (rel under a HOME of its own) and the
// tree's fake one (rel under the tree's HOME, the unprivileged user's),
// and starts the broker for the file's credentials, bound to their real
// hosts and reaching srv through an upstream proxy that sends every
// CONNECT to it. It returns the tree's HOME, the real file, the fake
// file's first contents and the tree's environment.
func oauthSetup(t *testing.T, srv *httptest.Server, rel, realJSON string, hosts ...string) (home, realFile string, fakeJSON []byte, env []string) {
	t.Helper()
	cert, pool := hostCert(t, hosts...)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
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

	base := unprivilegedHome(t)
	os.Chown(base, 0, 0)
	os.Chmod(base, 0o755)
	ca := filepath.Join(base, "standin-ca.pem")
	os.WriteFile(ca, pool, 0o644)
	realFile = filepath.Join(base, "user", rel)
	os.MkdirAll(filepath.Dir(realFile), 0o700)
	os.WriteFile(realFile, []byte(realJSON), 0o600)
	key := make([]byte, 32)
	rand.Read(key)
	f, _ := login.ByPath(rel)
	fakeJSON, creds, err := f.Fake([]byte(realJSON), func(name, real string) string { return broker.Fake(key, name, real) })
	if err != nil {
		t.Fatal(err)
	}
	home = filepath.Join(base, "home")
	writeOwned(t, filepath.Join(home, rel), string(fakeJSON))
	os.Chown(home, 65534, 65534)
	os.Chown(filepath.Dir(filepath.Join(home, rel)), 65534, 65534)
	brokerDir := filepath.Join(base, "broker")
	os.Mkdir(brokerDir, 0o755)
	req := launch.BrokerRequest{Secrets: map[string]string{}, Key: key, UID: 65534, Dir: brokerDir,
		Env:        map[string]string{"HTTPS_PROXY": up.URL},
		UpstreamCA: []string{ca}, Logins: []launch.LoginFile{{Path: realFile, Format: f.Name, Renews: map[string]map[string]string{}}}}
	for _, c := range creds {
		req.Bindings = append(req.Bindings, &policy.Binding{Name: c.Name, Hosts: c.Hosts, In: c.In, Paths: c.Paths})
		req.Secrets[c.Name] = c.Real
		if c.Renews != nil {
			req.Logins[0].Renews[c.Name] = c.Renews
		}
	}
	run, err := daemon.StartBroker(req, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { run.Close() })
	// The broker runs as the tree's user in a launch; here as root, so
	// its CA files are given to the tree's user.
	ents, _ := os.ReadDir(brokerDir)
	for _, e := range ents {
		os.Chown(filepath.Join(brokerDir, e.Name()), 65534, 65534)
	}
	env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
	for k, v := range run.ChildEnv() {
		env = append(env, k+"="+v)
	}
	return home, realFile, fakeJSON, env
}

// hostCert returns a self-signed certificate for hosts, and its PEM.
func hostCert(t *testing.T, hosts ...string) (tls.Certificate, []byte) {
	t.Helper()
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: hosts[0]}, DNSNames: hosts,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
