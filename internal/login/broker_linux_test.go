package login_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/broker"
	"github.com/envsieve/envsieve/internal/login"
)

// TestNpmThroughBroker: the whole path of a credential file. The real
// .npmrc becomes a fake one (with broker.Fake and the launch's key, as the
// launcher will do); the broker gets the credentials the format returned;
// the real npm, given only the fake file and the broker's variables, pings
// a registry stand-in that accepts only the real credential. For _auth the
// fake is inside base64 of user:password, and the broker swaps it after
// decoding Basic.
func TestNpmThroughBroker(t *testing.T) {
	const realPass, realTok = "Secr3tPassw0rdXyZ", "npm_RealToken1234567890abcdef"
	var mu sync.Mutex
	var got []string
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("{}"))
	}))
	// A certificate for "localhost": node checks a name, and the broker's
	// leaf for an IP address does not satisfy npm's agent.
	cert, leaf := localhostCert(t)
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	host := "localhost:" + port
	key := bytes.Repeat([]byte{7}, 32)
	faker := func(name, real string) string { return broker.Fake(key, name, real) }
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

	for _, c := range []struct{ name, line, want string }{
		{"_auth", "//" + host + "/:_auth=" + b64("alice:"+realPass), "Basic " + b64("alice:"+realPass)},
		{"_authToken", "//" + host + "/:_authToken=" + realTok, "Bearer " + realTok},
	} {
		t.Run(c.name, func(t *testing.T) {
			format, ok := login.ByPath(".npmrc")
			if !ok {
				t.Fatal("no format for .npmrc")
			}
			out, creds, err := format.Fake([]byte("registry=https://"+host+"/\n"+c.line+"\n"), faker)
			if err != nil {
				t.Fatal(err)
			}
			var swapped []string
			cfg := broker.Config{Secrets: map[string]string{}, Key: key, UpstreamRoots: roots, UID: os.Getuid(), Dir: t.TempDir(), Env: map[string]string{},
				Audit: func(e broker.Event) {
					mu.Lock()
					defer mu.Unlock()
					if e.Kind == "swapped" {
						swapped = append(swapped, e.Secret)
					}
				}}
			for _, cr := range creds {
				cfg.Bindings = append(cfg.Bindings, broker.Binding{Name: cr.Name, Hosts: cr.Hosts, In: cr.In})
				cfg.Secrets[cr.Name] = cr.Real
			}
			b, err := broker.Start(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			dir := t.TempDir()
			rc := filepath.Join(dir, "npmrc")
			if err := os.WriteFile(rc, out, 0o600); err != nil {
				t.Fatal(err)
			}
			env := []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "npm_config_cache=" + filepath.Join(dir, "cache"), "npm_config_update_notifier=false", "npm_config_logs_max=0", "npm_config_fetch_retries=0"}
			for k, v := range b.ChildEnv() {
				if _, isCred := cfg.Secrets[k]; !isCred {
					env = append(env, k+"="+v)
				}
			}
			mu.Lock()
			got = nil
			mu.Unlock()
			cmd := exec.Command("/usr/bin/npm", "ping", "--userconfig", rc)
			cmd.Env = env
			stdout, err := cmd.CombinedOutput()
			if strings.Contains(string(stdout), realPass) || strings.Contains(string(stdout), realTok) {
				t.Fatal("npm's output holds the real value")
			}
			if err != nil {
				t.Fatalf("npm ping: %v\n%s", err, stdout)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(got) == 0 || got[0] != c.want {
				t.Errorf("the registry got %d requests; the first one's Authorization is not the real credential", len(got))
			}
			if len(swapped) == 0 || swapped[0] != creds[0].Name {
				t.Errorf("the broker swapped %q, want %q", swapped, creds[0].Name)
			}
		})
	}
}

// localhostCert makes a self-signed certificate for localhost.
func localhostCert(t *testing.T) (tls.Certificate, *x509.Certificate) {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "localhost"},
		DNSNames:              []string{"localhost"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: k, Leaf: leaf}, leaf
}
