package login

import (
	"bytes"
	"io"
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
)

// The real clients read the fake files as their owners would: each runs
// as nobody, from a directory of its own, and must print the fake.

// clientDir returns a directory nobody can read, holding files (relative
// path to content).
func clientDir(t *testing.T, files map[string]string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "login-client-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	for rel, body := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return os.Chmod(p, 0o755)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return dir
}

// runAsNobody runs argv as nobody in dir with env and returns its stdout,
// trimmed. Its stderr is shown only on failure; the files hold fakes only.
func runAsNobody(t *testing.T, dir string, env []string, argv ...string) string {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + dir}, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", argv[0], err, stderr.Bytes())
	}
	return strings.TrimSpace(stdout.String())
}

// fakeFile fakes in with format and returns the fake file and the fake of
// the credential named name.
func fakeFile(t *testing.T, format, in, name string) (string, string) {
	t.Helper()
	out, creds, err := formats[format].Fake([]byte(in), fakeOf)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range creds {
		if c.Name == name {
			return string(out), fakeOf(c.Name, c.Real)
		}
	}
	t.Fatalf("no credential %q", name)
	return "", ""
}

func TestNetrcPython(t *testing.T) {
	in := "# logins\r\nmachine git.example.com login bob password \"tok en\\\"9Az\"\r\nmacdef init\r\nls\r\n\r\nmachine other.example login c password plainPass77\n"
	for _, name := range []string{"netrc:git.example.com", "netrc:other.example"} {
		out, fake := fakeFile(t, "netrc", in, name)
		host := strings.TrimPrefix(name, "netrc:")
		dir := clientDir(t, map[string]string{"netrc": out})
		got := runAsNobody(t, dir, nil, "/usr/bin/python3", "-c",
			"import netrc,sys; print(netrc.netrc('netrc').authenticators(sys.argv[1])[2])", host)
		if got != fake {
			t.Errorf("%s: python's netrc read %q, want the fake %q", host, got, fake)
		}
	}
}

func TestGhAuthToken(t *testing.T) {
	in := "# gh's hosts\ngithub.com:\n    users:\n        alice:\n            oauth_token: gho_16C7e42F292c6912E7710c838347Ae178B4a\n    git_protocol: https\n    user: alice\n    oauth_token: gho_16C7e42F292c6912E7710c838347Ae178B4a\nghe.example.com:\n    oauth_token: 'ghp_Enterprise0000token'\n    user: bob\n"
	for _, c := range []struct{ host, name string }{{"github.com", "gh:github.com"}, {"ghe.example.com", "gh:ghe.example.com"}} {
		out, fake := fakeFile(t, "gh-hosts", in, c.name)
		dir := clientDir(t, map[string]string{"gh/hosts.yml": out, "gh/config.yml": ""})
		got := runAsNobody(t, dir, []string{"GH_CONFIG_DIR=" + filepath.Join(dir, "gh"), "GH_NO_UPDATE_NOTIFIER=1"},
			"/usr/bin/gh", "auth", "token", "--hostname", c.host)
		if got != fake {
			t.Errorf("%s: gh auth token printed %q, want the fake %q", c.host, got, fake)
		}
	}
}

// TestNpmPing: npm reads the fake .npmrc and sends the fake, in the
// form the broker swaps (Bearer, or Basic of user:fake), to a registry on
// loopback.
func TestNpmPing(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"username":"alice"}`)
	}))
	defer srv.Close()
	hostport := strings.TrimPrefix(srv.URL, "http://")
	for _, c := range []struct{ line, name, want string }{
		{"//" + hostport + "/:_authToken = \"npm_tokCorp12345\"", "npmrc://" + hostport + "/:_authToken", "Bearer "},
		{"//" + hostport + "/:_auth=" + b64("alice:Secr3tPassw0rd"), "npmrc://" + hostport + "/:_auth", "Basic "},
	} {
		in := "; mine\r\nregistry=" + srv.URL + "/\r\n" + c.line + "\r\n"
		out, fake := fakeFile(t, "npmrc", in, c.name)
		want := c.want + fake
		if c.want == "Basic " {
			want = c.want + b64("alice:"+fake)
		}
		dir := clientDir(t, map[string]string{"npmrc": out})
		if err := os.Mkdir(filepath.Join(dir, "cache"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(filepath.Join(dir, "cache"), 65534, 65534); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got = nil
		mu.Unlock()
		user := runAsNobody(t, dir, []string{"npm_config_cache=" + filepath.Join(dir, "cache"), "npm_config_update_notifier=false", "npm_config_logs_max=0"},
			"/usr/bin/npm", "ping", "--userconfig", filepath.Join(dir, "npmrc"))
		mu.Lock()
		if len(got) == 0 || got[0] != want {
			t.Errorf("%s: npm sent %q (printed %q), want %q", c.name, got, user, want)
		}
		mu.Unlock()
	}
}

// TestPypircConfigparser: the reader twine and distutils use reads the
// fake .pypirc to the fakes.
func TestPypircConfigparser(t *testing.T) {
	in := "[distutils]\nindex-servers =\n    pypi\n    corp\n\n[pypi]\n  username: __token__\n  password: pypi-AgEIcHlwaS5vcmcCJDAwMDAw\n[corp]\nrepository = https://pypi.corp.example/\nPassword = hunter2hunter2 # not a comment\r\n"
	for _, section := range []string{"pypi", "corp"} {
		out, fake := fakeFile(t, "pypirc", in, "pypirc:"+section)
		dir := clientDir(t, map[string]string{"pypirc": out})
		got := runAsNobody(t, dir, nil, "/usr/bin/python3", "-c",
			"import configparser,sys; p=configparser.RawConfigParser(); p.read('pypirc'); print(p.get(sys.argv[1], 'password'))", section)
		if got != fake {
			t.Errorf("%s: configparser read %q, want the fake %q", section, got, fake)
		}
	}
}

// TestCargoTomllib: a TOML reader (python's tomllib) reads the fake
// credentials.toml to the fake.
func TestCargoTomllib(t *testing.T) {
	in := "# cargo\r\n[registry] # crates\r\n  token = 'cio-lit/9876' # mine\r\n  other = [1, \"a]\", {x = 1}]\r\n[net]\r\nretry = 3\r\n"
	out, fake := fakeFile(t, "cargo-credentials", in, "cargo:crates.io")
	dir := clientDir(t, map[string]string{"credentials.toml": out})
	got := runAsNobody(t, dir, nil, "/usr/bin/python3", "-c",
		"import tomllib; print(tomllib.load(open('credentials.toml','rb'))['registry']['token'])")
	if got != fake {
		t.Errorf("tomllib read %q, want the fake %q", got, fake)
	}
}

// TestNetrcCurl: curl reads the fake .netrc (a quoted password included)
// and sends the fake, in Basic auth, to the machine's stand-in.
func TestNetrcCurl(t *testing.T) {
	var mu sync.Mutex
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = r.Header.Get("Authorization")
		mu.Unlock()
	}))
	defer srv.Close()
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(srv.URL, "http://"))
	in := "# logins\nmachine other.example login x password plainPass77\nmachine localhost\n  login bob\n  password \"tok en\\\"9Az\"\n"
	out, fake := fakeFile(t, "netrc", in, "netrc:localhost")
	dir := clientDir(t, map[string]string{"netrc": out})
	runAsNobody(t, dir, nil, "/usr/bin/curl", "-sS", "--fail", "--netrc-file", filepath.Join(dir, "netrc"), "http://localhost:"+port+"/")
	mu.Lock()
	defer mu.Unlock()
	if want := "Basic " + b64("bob:"+fake); got != want {
		t.Errorf("curl sent %q, want %q", got, want)
	}
}
