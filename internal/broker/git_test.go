//go:build linux

package broker

import (
	"crypto/x509"
	"encoding/base64"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitCloneThroughBroker: git clone over https, through the broker as
// its proxy, with only the fake in the clone URL: git http-backend behind
// the stand-in host accepts only the real token (Basic, as GitHub takes
// it), and the clone succeeds; git's own config and output hold the fake.
func TestGitCloneThroughBroker(t *testing.T) {
	backend := "/usr/lib/git-core/git-http-backend"
	if _, err := os.Stat(backend); err != nil {
		t.Fatalf("git http-backend is needed: %v", err)
	}
	root := t.TempDir()
	repo := filepath.Join(root, "repo.git")
	for _, argv := range [][]string{
		{"git", "init", "-q", "--bare", repo},
		{"git", "-C", repo, "config", "http.receivepack", "true"},
	} {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v %s", argv, err, out)
		}
	}
	work := filepath.Join(root, "work")
	for _, argv := range [][]string{
		{"git", "init", "-q", work},
		{"git", "-C", work, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "first"},
		{"git", "-C", work, "push", "-q", repo, "HEAD:refs/heads/main"},
	} {
		if out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v %s", argv, err, out)
		}
	}
	h := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("x-access-token:"+realToken))
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != want {
			w.Header().Set("WWW-Authenticate", `Basic realm="stand-in"`)
			http.Error(w, "bad credentials", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	host := srv.Listener.Addr().String()
	b, log := startBroker(t, host, roots)
	fake := b.Fakes()["GITHUB_TOKEN"]
	dst := filepath.Join(root, "clone")
	cmd := exec.Command("git", "clone", "-q", "https://x-access-token:"+fake+"@"+host+"/repo.git", dst)
	cmd.Env = append(childEnv(b), "GIT_TERMINAL_PROMPT=0", "GIT_CONFIG_NOSYSTEM=1")
	out, err := cmd.CombinedOutput()
	checkNoReal(t, "git's output", out)
	if err != nil {
		t.Fatalf("git clone: %v\n%s", err, out)
	}
	cfg, err := os.ReadFile(filepath.Join(dst, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	checkNoReal(t, "the clone's config", cfg)
	if !strings.Contains(string(cfg), fake) {
		t.Error("the clone's remote URL does not hold the fake")
	}
	if !log.has("swapped", "GITHUB_TOKEN", "header:Authorization") {
		t.Error("no swapped event")
	}
	// Without the broker, the fake is refused by the host: the test's
	// host checks for real.
	direct := exec.Command("git", "-c", "http.sslCAInfo="+writePEM(t, srv), "clone", "-q", "https://x-access-token:"+fake+"@"+host+"/repo.git", filepath.Join(root, "direct"))
	direct.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + root, "GIT_TERMINAL_PROMPT=0"}
	if out, err := direct.CombinedOutput(); err == nil {
		t.Errorf("the stand-in accepted the fake without the broker: %s", out)
	}
}

func writePEM(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ca.pem")
	var b strings.Builder
	b.WriteString("-----BEGIN CERTIFICATE-----\n")
	enc := base64.StdEncoding.EncodeToString(srv.Certificate().Raw)
	for len(enc) > 64 {
		b.WriteString(enc[:64] + "\n")
		enc = enc[64:]
	}
	b.WriteString(enc + "\n-----END CERTIFICATE-----\n")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
