//go:build linux

package main

import (
	"crypto/tls"
	"encoding/base64"
	"net/http"
	"net/http/cgi"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// gitStandIn is git http-backend behind TLS on loopback, with a leaf of a
// "company CA" (standInCA), that takes only alice's current real password
// in Basic auth and records each Authorization it sees.
type gitStandIn struct {
	url, host string
	caPEM     []byte
	mu        sync.Mutex
	want      string
	seen      []string
}

func newGitStandIn(t *testing.T, real string) *gitStandIn {
	t.Helper()
	root := t.TempDir()
	gitAs := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + root}
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitAs("init", "-q", "--bare", "remote.git")
	gitAs("-C", "remote.git", "config", "http.receivepack", "true")
	gitAs("init", "-q", "seed")
	gitAs("-C", "seed", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "seed")
	gitAs("-C", "seed", "push", "-q", "../remote.git", "HEAD:refs/heads/master")
	s := &gitStandIn{want: real}
	caPEM, leaf := standInCA(t)
	s.caPEM = caPEM
	backend := &cgi.Handler{Path: "/usr/lib/git-core/git-http-backend",
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=alice", "HOME=" + root}}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{leaf}})
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := r.Header.Get("Authorization")
		s.mu.Lock()
		if got != "" {
			s.seen = append(s.seen, got)
		}
		ok := got == "Basic "+base64.StdEncoding.EncodeToString([]byte("alice:"+s.want))
		s.mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="stand-in"`)
			http.Error(w, "bad credentials", http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	s.host = ln.Addr().String()
	s.url = "https://" + s.host
	return s
}

// passwords returns the passwords of the Basic credentials it saw.
func (s *gitStandIn) passwords() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, a := range s.seen {
		raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, "Basic "))
		_, pw, _ := strings.Cut(string(raw), ":")
		out = append(out, pw)
	}
	return out
}

func (s *gitStandIn) accept(real string) {
	s.mu.Lock()
	s.want = real
	s.mu.Unlock()
}

// TestLoginFileGit: with the user's ~/.git-credentials (git over https to a
// host whose certificate a company CA signed, named only by the user's
// GIT_SSL_CAINFO), the sealed tree clones and pushes over https through
// the broker, as an unprivileged user, and holds only fakes: a hostile
// command reads the file and runs `git credential fill` and finds the
// fake; a fake sent to another host is refused; the real password reaches
// only its stand-in. Mid-session the user logs in again (the real file
// replaced by rename): the tree's next push carries the new password
// upstream, and the tree still sees the same fake. Sealed by namespaces
// (Go and C init: the file is a fake), and by Landlock (the file is
// masked; git's credential helper of envsieve's answers the fake).
func TestLoginFileGit(t *testing.T) {
	for _, tc := range []struct {
		name                        string
		landlock, cInit, userHelper bool
	}{
		{"namespaces", false, false, true},
		{"namespaces, the C init", false, true, true},
		// No credential helper of the user's: envsieve's answers.
		{"namespaces, no helper of the user's", false, false, false},
		{"landlock", true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) { testLoginFileGit(t, tc.landlock, tc.cInit, tc.userHelper) })
	}
}

func testLoginFileGit(t *testing.T, landlock, cInit, userHelper bool) {
	exe, home := unprivilegedInstall(t)
	real1 := "Pw1-" + strings.Repeat("q7Rk", 6)
	real2 := "Pw2-" + strings.Repeat("Zt4m", 7) // another length: a new password
	git := newGitStandIn(t, real1)
	// Another host the fake must not reach.
	var otherHits int
	var omu sync.Mutex
	other := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		omu.Lock()
		otherHits++
		omu.Unlock()
	}))
	write := func(rel, body string) {
		p := filepath.Join(home, rel)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if os.Getuid() == 0 {
			os.Chown(p, 65534, 65534)
		}
	}
	write(".git-credentials", "https://alice:"+real1+"@"+git.host+"\n")
	gitconfig := "[user]\n\tname = t\n\temail = t@example.com\n"
	if userHelper {
		gitconfig += "[credential]\n\thelper = store\n"
	}
	write(".gitconfig", gitconfig)
	write("company-ca.pem", string(git.caPEM))
	work := filepath.Join(home, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		os.Chown(work, 65534, 65534)
	}
	script := `set -e
cd "$HOME/work"
echo "file: $(cat "$HOME/.git-credentials" 2>&1 || true)"
printf 'protocol=https\nhost=` + git.host + `\n\n' | git credential fill | sed 's/^/fill: /'
git clone -q ` + git.url + `/remote.git repo
cd repo
git commit -q --allow-empty -m one
git push -q origin HEAD
echo first-push-ok
pw=$(printf 'protocol=https\nhost=` + git.host + `\n\n' | git credential fill | sed -n 's/^password=//p')
echo "other: $(curl -s -o /dev/null -w '%{http_code}' -u "alice:$pw" ` + other + `/)"
touch ../one
while [ ! -e ../two ]; do sleep 0.05; done
echo "file after: $(cat "$HOME/.git-credentials" 2>&1 || true)"
git commit -q --allow-empty -m two
git push -q origin HEAD
echo second-push-ok
`
	var wrap []string
	if landlock {
		noNS := filepath.Join(filepath.Dir(exe), "nouserns")
		copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		wrap = []string{noNS}
	}
	argv := append(append([]string{}, wrap...), exe, "run", "--seal", "--", "/bin/sh", "-c", script)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "GIT_SSL_CAINFO=" + filepath.Join(home, "company-ca.pem"),
		"ENVSIEVE_DEBUG=1"}
	if cInit {
		cmd.Env = append(cmd.Env, "ENVSIEVE_SHIM="+shimtest.Lib(t))
	}
	cmd.Dir = work
	cmd.SysProcAttr = asUnprivileged()
	mask := strings.NewReplacer(real1, "<REAL1>", real2, "<REAL2>").Replace
	// The user logs in again in their own terminal, between the pushes: a
	// new file renamed over the old one.
	got := runInPhases(t, cmd, work, mask, func() {
		tmp := filepath.Join(home, ".git-credentials.new")
		write(".git-credentials.new", "https://alice:"+real2+"@"+git.host+"\n")
		if err := os.Rename(tmp, filepath.Join(home, ".git-credentials")); err != nil {
			t.Fatal(err)
		}
		git.accept(real2)
	})
	masked := func() string { return mask(got) }
	if strings.Contains(got, real1) || strings.Contains(got, real2) {
		t.Errorf("a real password is in what the tree printed:\n%s", masked())
	}
	for _, want := range []string{"first-push-ok", "second-push-ok", "other: 403"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q missing:\n%s", want, masked())
		}
	}
	var fake string
	for _, l := range strings.Split(got, "\n") {
		if v, ok := strings.CutPrefix(l, "fill: password="); ok {
			fake = v
		}
	}
	if len(fake) != len(real1) || fake == real1 {
		t.Errorf("git credential fill did not give a fake of the password's shape (%d bytes)", len(fake))
	}
	fileLine := "file: https://alice:" + fake + "@" + git.host
	afterLine := "file after: https://alice:" + fake + "@" + git.host
	if landlock {
		fileLine, afterLine = "file: cat: ", "file after: cat: " // masked
	}
	for _, want := range []string{fileLine, afterLine} {
		if !strings.Contains(got, want) {
			t.Errorf("the tree's ~/.git-credentials: want %q:\n%s", want, masked())
		}
	}
	pws := git.passwords()
	sawNew := false
	for _, pw := range pws {
		switch pw {
		case real1:
		case real2:
			sawNew = true
		default:
			t.Errorf("the stand-in got a password that is not the real one (%d bytes)", len(pw))
		}
	}
	if !sawNew {
		t.Errorf("after the user's new login, no request carried the new password upstream (%d requests)", len(pws))
	}
	omu.Lock()
	if otherHits != 0 {
		t.Errorf("the other host got %d requests with the fake", otherHits)
	}
	omu.Unlock()
}

// TestExplainLogins: explain lists each credential file envsieve
// understands with what the tree would see (fake, masked, passed) and the
// hosts its fakes are bound to, never a value.
func TestExplainLogins(t *testing.T) {
	exe, home := unprivilegedInstall(t)
	real := "Pw-" + strings.Repeat("Ex9p", 6)
	os.WriteFile(filepath.Join(home, ".git-credentials"), []byte("https://alice:"+real+"@git.example.com\n"), 0o600)
	os.WriteFile(filepath.Join(home, ".netrc"), []byte("default password "+real+"\n"), 0o600)
	if os.Getuid() == 0 {
		filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
	}
	explain := func(args ...string) string {
		cmd := exec.Command(exe, append(append([]string{"explain"}, args...), "--", "true")...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("explain %v: %v\n%s", args, err, strings.ReplaceAll(string(out), real, "<REAL>"))
		}
		if strings.Contains(string(out), real) {
			t.Errorf("explain printed a real value")
		}
		return string(out)
	}
	sealed := explain("--seal")
	for _, want := range []string{"login:   " + home + "/.git-credentials fake, bound to git.example.com",
		"login:   " + home + "/.netrc masked ("} {
		if !strings.Contains(sealed, want) {
			t.Errorf("explain --seal: %q missing:\n%s", want, sealed)
		}
	}
	if open := explain(); !strings.Contains(open, "login:   "+home+"/.git-credentials passed") {
		t.Errorf("explain unsealed: the file is not passed:\n%s", open)
	}
}

// TestDaemonLoginFile: a sealed daemon session's command (sealed by
// Landlock, the daemon being its parent) clones over https with the
// user's ~/.git-credentials through the daemon's broker: the file is
// masked, git's credential helper of envsieve's answers the fake, and
// the stand-in gets the real password.
func TestDaemonLoginFile(t *testing.T) {
	t.Parallel()
	exe, home := unprivilegedInstall(t)
	dir := filepath.Dir(exe)
	real := "Pw-" + strings.Repeat("Dm3k", 6)
	git := newGitStandIn(t, real)
	os.WriteFile(filepath.Join(home, ".git-credentials"), []byte("https://alice:"+real+"@"+git.host+"\n"), 0o600)
	os.WriteFile(filepath.Join(home, "company-ca.pem"), git.caPEM, 0o600)
	os.Mkdir(filepath.Join(home, "work"), 0o700)
	if os.Getuid() == 0 {
		filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
	}
	pol := writePolicy(t, dir, "version: 1\nredact: {enabled: false, entropy: false}\nprofiles:\n  sealed: {seal: on}\n")
	sock := filepath.Join(home, "d.sock")
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "GIT_SSL_CAINFO=" + filepath.Join(home, "company-ca.pem")}
	dErr := startDaemonAs(t, exe, sock, pol, home, env)
	script := `cd "$HOME/work"
echo "file: $(cat "$HOME/.git-credentials" 2>&1)"
printf 'protocol=https\nhost=` + git.host + `\n\n' | git credential fill | sed 's/^/fill: /'
cd "$HOME/.cache" && git clone -q ` + git.url + `/remote.git repo && echo clone-ok`
	c := exec.Command(exe, "client", "run", "--socket", sock, "--profile", "sealed", "-c", script)
	c.Env = env
	c.Dir = filepath.Join(home, "work")
	c.SysProcAttr = asUnprivileged()
	b, _ := c.CombinedOutput()
	out := strings.ReplaceAll(string(b), real, "<REAL>")
	if out != string(b) {
		t.Errorf("the real password is in what the session printed")
	}
	for _, want := range []string{"file: cat: ", "fill: password=", "clone-ok"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing:\n%s\ndaemon: %s", want, out, strings.ReplaceAll(dErr.String(), real, "<REAL>"))
		}
	}
	for _, pw := range git.passwords() {
		if pw != real {
			t.Errorf("the stand-in got a password that is not the real one (%d bytes)", len(pw))
		}
	}
}
