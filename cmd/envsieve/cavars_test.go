//go:build linux

package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// caVarNames are the variables through which a TLS client takes roots,
// as the broker sets them in proxy mode.
var caVarNames = []string{"SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO",
	"AWS_CA_BUNDLE", "npm_config_cafile", "PIP_CERT", "DENO_CERT", "CARGO_HTTP_CAINFO", "GRPC_DEFAULT_SSL_ROOTS_FILE_PATH",
	"CODEX_CA_CERTIFICATE"}

// nodeTrustVarNames are the variables through which the broker gives
// node the launch CA without a cost at every start (broker.nodeTrust).
var nodeTrustVarNames = []string{"NODE_OPTIONS", "SSL_CERT_DIR"}

// proxyVarNames are the proxy variables the broker sets in proxy mode.
var proxyVarNames = []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"}

// nodeThroughProxy is a node script that reaches https://HOST:PORT/x
// (argv[2]) with the token in Authorization, through $HTTPS_PROXY by
// CONNECT (node 20 does not read the proxy variables itself), trusting
// node's default store: its roots plus NODE_EXTRA_CA_CERTS.
const nodeThroughProxy = `
const http = require('http'), https = require('https'), tls = require('tls');
const p = new URL(process.env.HTTPS_PROXY), target = process.argv[2];
const [host, port] = target.split(':');
const auth = 'Basic ' + Buffer.from(decodeURIComponent(p.username) + ':' + decodeURIComponent(p.password)).toString('base64');
http.request({host: p.hostname, port: p.port, method: 'CONNECT', path: target, headers: {'Proxy-Authorization': auth}})
  .on('connect', (res, sock) => {
    if (res.statusCode !== 200) { console.log('connect', res.statusCode); process.exit(1); }
    https.get({host, port, path: '/x', headers: {Authorization: 'Bearer ' + process.env.CA_TEST_TOKEN},
        createConnection: () => tls.connect({socket: sock, host})}, r => {
      let b = ''; r.on('data', d => b += d); r.on('end', () => console.log('node status', r.statusCode, b));
    }).on('error', e => { console.log('node error', e.code || e.message); process.exit(1); });
  }).on('error', e => { console.log('proxy error', e.message); process.exit(1); }).end();
`

// nodeDirect is a node script that reaches https://127.0.0.1:PORT/ (argv[2])
// directly, checking the leaf against the name localhost: a host of the
// user's own CA, which no binding names.
const nodeDirect = `
const https = require('https');
https.get({host: '127.0.0.1', port: process.argv[2], path: '/', servername: 'localhost'}, r => {
  let b = ''; r.on('data', d => b += d); r.on('end', () => console.log('node direct', r.statusCode, b));
}).on('error', e => { console.log('node direct error', e.code || e.message); process.exit(1); });
`

// pythonThrough reaches https://HOST:PORT/x (argv[1]) with urllib, which
// honours the proxy variables and trusts OpenSSL's default paths
// (SSL_CERT_FILE, SSL_CERT_DIR), then https://localhost:PORT/ (argv[2]),
// and each further port's, which NO_PROXY sends direct.
const pythonThrough = `
import os, sys, urllib.request
r = urllib.request.Request("https://" + sys.argv[1] + "/x", headers={"Authorization": "Bearer " + os.environ["CA_TEST_TOKEN"]})
print("python status", urllib.request.urlopen(r, timeout=10).status)
for port in sys.argv[2:]:
    print("python direct", urllib.request.urlopen("https://localhost:" + port + "/", timeout=10).read().decode())
`

// userCAHost starts a TLS server for localhost and 127.0.0.1 whose leaf a
// CA of the user's own signs (a company CA), answering body, and returns
// that CA's PEM and the server's port.
func userCAHost(t *testing.T, body string) (caPEM []byte, port string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "user's CA " + body},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(8), NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(body))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, _ = net.SplitHostPort(strings.TrimPrefix(srv.URL, "https://"))
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), port
}

// TestCAVariablesOnlyForProxyMode: the CA variables are set only when
// proxy mode is active (docs/design.md, "The credential broker"), each pointing at what its
// client needs. Under the claude profile, whose bindings are all served
// through their base-URL variable, the tree gets neither a CA variable
// nor a proxy variable (node would parse the CA file at every start).
// With a binding that has hosts and no base URL, NODE_EXTRA_CA_CERTS
// (which adds to node's store) holds the launch CA alone, the variables
// that replace a store hold a bundle (the system roots and the launch
// CA), and real node still trusts the broker's leaf for the bound host:
// the stand-in gets the real token. Where the system keeps a hashed
// directory of roots, node gets the launch CA through --use-openssl-ca
// (NODE_OPTIONS), SSL_CERT_FILE (the user's CA and the launch CA alone)
// and SSL_CERT_DIR (the system's directory), which cost no start; real
// node and Python urllib then still trust the broker's leaf and a host
// the user's own CA signs. Run as an unprivileged user.
func TestCAVariablesOnlyForProxyMode(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatalf("node is needed: %v", err)
	}
	exe, _ := unprivilegedInstall(t)
	realToken := "ghp_" + strings.Repeat("C4vR", 9)

	var mu sync.Mutex
	var auths []string
	caPEM, leaf := standInCA(t)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Write([]byte("standin-ok"))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{leaf}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "https://")

	// The child prints each variable's name with the number of
	// certificates in the file it names, then runs node through the proxy.
	report := `for v in ` + strings.Join(slices.Concat(caVarNames, proxyVarNames, nodeTrustVarNames), " ") + `; do
  eval "f=\${$v-}"; [ -n "$f" ] || continue
  case $v in *PROXY|*proxy|NODE_OPTIONS|SSL_CERT_DIR) echo "set $v $f"; continue;; esac
  echo "set $v $(grep -c 'BEGIN CERTIFICATE' "$f")"
done
echo "base ${ANTHROPIC_BASE_URL-}"
echo "no_proxy ${NO_PROXY-}"
`
	for _, tc := range []struct {
		name   string
		policy string
		env    []string
		script string
		proxy  bool
	}{
		{name: "claude profile (base-URL bindings only)",
			env:    []string{"ANTHROPIC_API_KEY=sk-ant-api03-" + strings.Repeat("Ca4v", 20) + "AA", "ANTHROPIC_BASE_URL=https://api.example.test"},
			script: report},
		{name: "claude profile, the user behind a proxy",
			env: []string{"ANTHROPIC_API_KEY=sk-ant-api03-" + strings.Repeat("Ca4v", 20) + "AA", "ANTHROPIC_BASE_URL=https://api.example.test",
				"http_proxy=http://127.0.0.1:9", "NO_PROXY=corp.example.test"},
			// The broker answers (502: its upstream does not resolve here);
			// through the user's proxy, which is not there, curl gets 000.
			script: report + `echo "code $(curl -s -o /dev/null -w '%{http_code}' "$ANTHROPIC_BASE_URL/v1/messages")"`},
		{name: "a binding with hosts and no base URL",
			policy: "version: 1\nallow: [CA_TEST_TOKEN]\nbroker:\n  upstream_ca: [STANDIN_CA]\n" +
				"secrets:\n  CA_TEST_TOKEN:\n    broker: {hosts: [\"" + host + "\"]}\n",
			// Three variables name the user's CA: each certificate once.
			env: []string{"CA_TEST_TOKEN=" + realToken, "NODE_EXTRA_CA_CERTS=USER_CA", "REQUESTS_CA_BUNDLE=USER_CA", "CURL_CA_BUNDLE=USER_CA",
				"SSL_CERT_DIR=USER_DIR", "NO_PROXY=localhost"},
			script: report + `node "$HOME/through-proxy.js" ` + host + `; node "$HOME/direct.js" USER_PORT; node "$HOME/direct.js" DIR_PORT
python3 "$HOME/through.py" ` + host + ` USER_PORT DIR_PORT`,
			proxy: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := unprivilegedHome(t)
			writeOwned(t, filepath.Join(home, "through-proxy.js"), nodeThroughProxy)
			writeOwned(t, filepath.Join(home, "direct.js"), nodeDirect)
			writeOwned(t, filepath.Join(home, "through.py"), pythonThrough)
			userCA, userPort := userCAHost(t, "company-ok")
			writeOwned(t, filepath.Join(home, "user-ca.pem"), string(userCA))
			// A CA found only in a hashed directory the user's SSL_CERT_DIR
			// names: OpenSSL's lazy lookup, as the system's roots are found.
			dirCA, dirPort := userCAHost(t, "dir-ok")
			// (Outside HOME, which the seal masks.)
			userDir, err := os.MkdirTemp("", "envsieve-certs-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(userDir) })
			writeOwned(t, filepath.Join(home, "dir-ca.pem"), string(dirCA))
			hash, err := exec.Command("openssl", "x509", "-hash", "-noout", "-in", filepath.Join(home, "dir-ca.pem")).Output()
			if err != nil {
				t.Fatalf("openssl x509 -hash: %v", err)
			}
			if err := os.Chmod(userDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(userDir, strings.TrimSpace(string(hash))+".0"), dirCA, 0o644); err != nil {
				t.Fatal(err)
			}
			script := strings.NewReplacer("USER_PORT", userPort, "DIR_PORT", dirPort).Replace(tc.script)
			args := []string{"run", "--profile", "claude"}
			if tc.policy != "" {
				ca := filepath.Join(home, "standin-ca.pem")
				writeOwned(t, ca, string(caPEM))
				pol := filepath.Join(home, "policy.yaml")
				writeOwned(t, pol, strings.ReplaceAll(tc.policy, "STANDIN_CA", ca))
				args = append(args, "--policy", pol)
			}
			cmd := exec.Command(exe, append(args, "--", "/bin/sh", "-c", script)...)
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "XDG_RUNTIME_DIR=" + home}
			for _, kv := range tc.env {
				cmd.Env = append(cmd.Env, strings.NewReplacer("USER_CA", filepath.Join(home, "user-ca.pem"), "USER_DIR", userDir).Replace(kv))
			}
			cmd.Dir = home
			cmd.SysProcAttr = asUnprivileged()
			out, err := cmd.CombinedOutput()
			shown := strings.ReplaceAll(string(out), realToken, "<REAL>")
			if err != nil {
				t.Fatalf("envsieve run: %v\n%s", err, shown)
			}
			set := map[string]string{}
			for _, l := range strings.Split(shown, "\n") {
				if rest, ok := strings.CutPrefix(l, "set "); ok {
					k, n, _ := strings.Cut(rest, " ")
					set[k] = n
				}
			}
			if !tc.proxy {
				for k, v := range set {
					if slices.Contains(tc.env, k+"="+v) {
						continue // the user's own proxy
					}
					t.Errorf("the child has %s, and no binding is served in proxy mode", k)
				}
				if slices.Contains(tc.env, "http_proxy=http://127.0.0.1:9") {
					if !strings.Contains(shown, "no_proxy corp.example.test,127.0.0.1\n") {
						t.Errorf("NO_PROXY does not keep the user's entries and add the broker's loopback:\n%s", shown)
					}
					if strings.Contains(shown, "code 000") || !strings.Contains(shown, "code ") {
						t.Errorf("curl did not reach the broker past the user's proxy:\n%s", shown)
					}
				}
				if !strings.Contains(shown, "base http://127.0.0.1:") {
					t.Errorf("ANTHROPIC_BASE_URL does not point at the broker:\n%s", shown)
				}
				return
			}
			for _, k := range proxyVarNames {
				if _, ok := set[k]; !ok {
					t.Errorf("proxy mode, and the child lacks %s", k)
				}
			}
			// Where the system has a hashed directory of roots (Debian's
			// /etc/ssl/certs, here), SSL_CERT_FILE is the small file too.
			hashed := set["SSL_CERT_DIR"] != ""
			if hashed {
				if set["NODE_OPTIONS"] != "--use-openssl-ca" || !strings.HasPrefix(set["SSL_CERT_DIR"], userDir+":/") {
					t.Errorf("node's trust without a start cost: NODE_OPTIONS %q, SSL_CERT_DIR %q", set["NODE_OPTIONS"], set["SSL_CERT_DIR"])
				}
			} else if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err == nil {
				t.Errorf("this system keeps its roots in /etc/ssl/certs, and the child has no SSL_CERT_DIR:\n%s", shown)
			}
			sysRoots := 0 // the system bundle's certificates, where the broker finds it
			if data, err := os.ReadFile("/etc/ssl/certs/ca-certificates.crt"); err == nil {
				sysRoots = strings.Count(string(data), "BEGIN CERTIFICATE")
			}
			for _, k := range caVarNames {
				n, ok := set[k]
				small := k == "NODE_EXTRA_CA_CERTS" || (hashed && k == "SSL_CERT_FILE")
				switch {
				case !ok:
					t.Errorf("proxy mode, and the child lacks %s", k)
				case small && n != "2":
					t.Errorf("%s should hold the user's CA and the launch CA alone; it holds %s certificates", k, n)
				case !small && (n == "0" || n == "1" || n == "2"):
					t.Errorf("%s replaces its client's store and should hold the system roots and the launch CA; it holds %s", k, n)
				case !small && sysRoots > 0 && n != strconv.Itoa(sysRoots+2):
					t.Errorf("%s should hold the %d system roots, the user's CA and the launch CA, each once; it holds %s", k, sysRoots, n)
				}
			}
			for _, want := range []string{"node status 200 standin-ok", "node direct 200 company-ok", "node direct 200 dir-ok",
				"python status 200", "python direct company-ok", "python direct dir-ok"} {
				if !strings.Contains(shown, want+"\n") {
					t.Errorf("%q missing: a client did not trust the broker's leaf for the bound host, or the user's CA for another:\n%s", want, shown)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(auths) != 2 || auths[0] != "Bearer "+realToken || auths[1] != "Bearer "+realToken {
				t.Errorf("the stand-in did not get the real token (%d requests)", len(auths))
			}
		})
	}
}
