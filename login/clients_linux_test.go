package login

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
