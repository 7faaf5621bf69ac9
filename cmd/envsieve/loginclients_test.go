//go:build linux

package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// loopbackName returns a host name (not "localhost", and not an address:
// Go's and node's clients never proxy those) that resolves to 127.0.0.1
// here: the machine's own name, in /etc/hosts.
func loopbackName(t *testing.T) string {
	t.Helper()
	name, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	addrs, err := net.LookupHost(name)
	if err != nil || len(addrs) == 0 || addrs[0] != "127.0.0.1" || name == "localhost" {
		t.Fatalf("this test needs the machine's name (%q) to resolve to 127.0.0.1 (%v, %v)", name, addrs, err)
	}
	return name
}

// companyStandIn is an HTTPS server on 127.0.0.1 whose certificate, for
// name, a "company CA" signed; it records each Authorization it sees and
// answers with h. It returns host:port and the CA's PEM.
func companyStandIn(t *testing.T, name string, h func(w http.ResponseWriter, r *http.Request)) (string, []byte, func() []string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "company CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), NotBefore: now.Add(-time.Hour),
		NotAfter: now.Add(time.Hour), DNSNames: []string{name}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		h(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return name + ":" + port, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// TestLoginFileClients: gh on an Enterprise host configured only by
// ~/.config/gh/hosts.yml (`gh api user`), and `npm whoami` with a token
// in ~/.npmrc, each against a stand-in with a company CA's certificate
// (named only by the user's SSL_CERT_FILE and NODE_EXTRA_CA_CERTS), in a
// sealed tree as an unprivileged user: both work through the broker, the
// tree's `gh auth token`, `npm config get` and the files themselves hold
// only fakes, and only the stand-ins got the real tokens. Sealed by
// namespaces (the files are fakes) and by Landlock (the files are masked;
// GH_CONFIG_DIR and NPM_CONFIG_USERCONFIG name the fakes).
func TestLoginFileClients(t *testing.T) {
	t.Run("namespaces", func(t *testing.T) { testLoginFileClients(t, false) })
	t.Run("landlock", func(t *testing.T) { testLoginFileClients(t, true) })
}

func testLoginFileClients(t *testing.T, landlock bool) {
	exe, home := unprivilegedInstall(t)
	name := loopbackName(t)
	ghReal := "ghp_" + strings.Repeat("Gh7r", 9)
	npmReal := "npm_" + strings.Repeat("Nq2x", 9)
	ghHost, ghCA, ghSeen := companyStandIn(t, name, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "token "+ghReal || r.URL.Path != "/api/v3/user" {
			http.Error(w, `{"message":"Bad credentials"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"login": "alice-ghe"})
	})
	npmHost, npmCA, npmSeen := companyStandIn(t, name, func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+npmReal {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"username": "alice-npm"})
	})
	write := func(rel, body string) {
		p := filepath.Join(home, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".config/gh/hosts.yml", ghHost+":\n    oauth_token: "+ghReal+"\n    user: alice-ghe\n    git_protocol: https\n")
	write(".config/gh/config.yml", "version: \"1\"\nprompt: disabled\n")
	write(".npmrc", "registry=https://"+npmHost+"/\n//"+npmHost+"/:_authToken="+npmReal+"\n")
	write("company-ca.pem", string(ghCA)+string(npmCA))
	write("work/.keep", "")
	if os.Getuid() == 0 {
		filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
	}
	script := `cd "$HOME/work"
echo "hosts.yml: $(grep oauth_token "$HOME/.config/gh/hosts.yml" 2>&1)"
echo "npmrc: $(grep _authToken "$HOME/.npmrc" 2>&1)"
echo "gh token: $(gh auth token --hostname ` + ghHost + ` 2>&1)"
echo "gh api: $(GH_HOST=` + ghHost + ` gh api user --jq .login 2>&1)"
echo "npm whoami: $(npm whoami 2>&1)"
`
	ca := filepath.Join(home, "company-ca.pem")
	argv := []string{exe, "run", "--seal", "--", "/bin/sh", "-c", script}
	if landlock {
		noNS := filepath.Join(filepath.Dir(exe), "nouserns")
		copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		argv = append([]string{noNS}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "SSL_CERT_FILE=" + ca, "NODE_EXTRA_CA_CERTS=" + ca,
		"GH_NO_UPDATE_NOTIFIER=1", "NO_COLOR=1"}
	cmd.Dir = filepath.Join(home, "work")
	cmd.SysProcAttr = asUnprivileged()
	b, err := cmd.CombinedOutput()
	out := strings.NewReplacer(ghReal, "<GH-REAL>", npmReal, "<NPM-REAL>").Replace(string(b))
	if err != nil {
		t.Fatalf("envsieve run: %v\n%s", err, out)
	}
	if out != string(b) {
		t.Errorf("a real token is in what the tree printed:\n%s", out)
	}
	files := []string{"hosts.yml:     oauth_token: ghp_", "npmrc: //" + npmHost + "/:_authToken=npm_"}
	if landlock {
		files = []string{"hosts.yml: grep: " + home + "/.config/gh/hosts.yml: Permission denied", "npmrc: grep: " + home + "/.npmrc: Permission denied"}
	}
	for _, want := range append(files, "gh api: alice-ghe", "npm whoami: alice-npm", "gh token: ghp_") {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing:\n%s", want, out)
		}
	}
	for what, seen := range map[string][]string{"gh": ghSeen(), "npm": npmSeen()} {
		if len(seen) == 0 {
			t.Errorf("the %s stand-in got no request", what)
		}
		for _, a := range seen {
			if a != "token "+ghReal && a != "Bearer "+npmReal {
				t.Errorf("the %s stand-in got an Authorization that is not the real token (%d bytes)", what, len(a))
			}
		}
	}
}
