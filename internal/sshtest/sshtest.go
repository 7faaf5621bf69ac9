//go:build linux

// Package sshtest starts real OpenSSH programs for tests: an ssh-agent
// holding fresh keys, and unprivileged sshd servers on loopback that
// authorize them. It is for tests only.
package sshtest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// UID and GID are the unprivileged user the servers and the tree's
// clients run as when the tests run as root.
const UID, GID = 65534, 65534

// Key is a key pair made with ssh-keygen.
type Key struct {
	Path    string // the private key
	Public  string // the authorized_keys line
	Comment string
}

// NewKey makes an ed25519 key in dir.
func NewKey(t *testing.T, dir, comment string) Key {
	t.Helper()
	p := filepath.Join(dir, comment)
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", p)
	pub, err := os.ReadFile(p + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return Key{Path: p, Public: strings.TrimSpace(string(pub)), Comment: comment}
}

// Agent starts ssh-agent, as the unprivileged user (the user whose agent
// it is), on a socket in a private directory of that user's, and adds the
// keys; it stops with the test.
func Agent(t *testing.T, keys ...Key) string {
	t.Helper()
	sock := filepath.Join(Private(t), "user-agent.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = AsUnprivileged()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	waitSocket(t, "unix", sock)
	for _, k := range keys {
		add := exec.Command("ssh-add", "-q", k.Path)
		add.Env = []string{"PATH=/usr/bin:/bin", "SSH_AUTH_SOCK=" + sock}
		if out, err := add.CombinedOutput(); err != nil {
			t.Fatalf("ssh-add: %v: %s", err, out)
		}
	}
	return sock
}

// Server is a running sshd.
type Server struct {
	Port    int
	HostKey string // the host's public key line (type and base64)
	User    string // the account a client logs in to
	log     *syncBuffer
}

// Log returns what sshd logged so far.
func (s *Server) Log() string { return s.log.String() }

// Accepted reports whether sshd logged a public-key login.
func (s *Server) Accepted() bool { return strings.Contains(s.Log(), "Accepted publickey") }

// KnownHostsLine is the server's known_hosts line under name.
func (s *Server) KnownHostsLine(name string) string {
	return fmt.Sprintf("[%s]:%d %s", name, s.Port, s.HostKey)
}

// Sshd starts an sshd as the unprivileged user (when root) on a loopback
// port, with its own host key, authorizing the public keys. Its account's
// shell (nologin when root) ends every session: logins only.
func Sshd(t *testing.T, dir string, authorized ...string) *Server {
	t.Helper()
	return sshd(t, dir, false, authorized)
}

// ShellSshd is Sshd whose logins run commands (git-upload-pack for a
// clone): when the tests run as root it runs as root, in a mount
// namespace of its own whose /run is a fresh tmpfs holding the privilege
// separation directory (so nothing outside the test changes), and logs
// clients in to root by key only; otherwise it runs as, and logs in to,
// the caller.
func ShellSshd(t *testing.T, dir string, authorized ...string) *Server {
	t.Helper()
	return sshd(t, dir, os.Getuid() == 0, authorized)
}

func sshd(t *testing.T, dir string, root bool, authorized []string) *Server {
	t.Helper()
	d, err := os.MkdirTemp(dir, "sshd-")
	if err != nil {
		t.Fatal(err)
	}
	hk := filepath.Join(d, "host_ed25519")
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", hk)
	auth := filepath.Join(d, "authorized_keys")
	write(t, auth, strings.Join(authorized, "\n")+"\n")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cfg := filepath.Join(d, "sshd_config")
	write(t, cfg, fmt.Sprintf(`Port %d
ListenAddress 127.0.0.1
HostKey %s
AuthorizedKeysFile %s
PidFile none
PermitRootLogin prohibit-password
UsePAM yes
StrictModes no
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
LogLevel VERBOSE
`, port, hk, auth))
	log := &syncBuffer{}
	var cmd *exec.Cmd
	user := userName()
	if root {
		// UsePAM stays yes: root's password is locked, which sshd
		// without PAM refuses even for a key login.
		cmd = exec.Command("/bin/sh", "-c",
			`mount -t tmpfs -o mode=0755 envsieve-sshtest /run && mkdir -m 0755 /run/sshd && exec /usr/sbin/sshd "$@"`,
			"sh", "-D", "-e", "-f", cfg)
		// Go makes the new mount namespace private before the exec.
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
		user = "root"
	} else {
		chownTree(t, d)
		cmd = exec.Command("/usr/sbin/sshd", "-D", "-e", "-f", cfg)
		cmd.SysProcAttr = AsUnprivileged()
	}
	cmd.Env = []string{"PATH=/usr/bin:/bin:/usr/sbin"}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd did not listen: %s", log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	pub, err := os.ReadFile(hk + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(pub))
	return &Server{Port: port, HostKey: f[0] + " " + f[1], User: user, log: log}
}

// SSH returns an ssh command, as the unprivileged user, to the server
// with the agent socket, known_hosts file and command given.
func SSH(sock, knownHosts string, port int, command ...string) *exec.Cmd {
	args := []string{"-F", "/dev/null", "-p", strconv.Itoa(port),
		"-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
		"-o", "UserKnownHostsFile=" + knownHosts, "-o", "GlobalKnownHostsFile=/dev/null",
		"-o", "IdentitiesOnly=no", "-o", "ConnectTimeout=5",
		"-l", userName(), "127.0.0.1"}
	cmd := exec.Command("ssh", append(args, command...)...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "SSH_AUTH_SOCK=" + sock, "HOME=/nonexistent"}
	cmd.SysProcAttr = AsUnprivileged()
	return cmd
}

func userName() string {
	if os.Getuid() == 0 {
		return "nobody"
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "nobody"
}

// AsUnprivileged is the credential of the unprivileged user when the
// tests run as root, else nil (the caller itself).
func AsUnprivileged() *syscall.SysProcAttr {
	if os.Getuid() != 0 {
		return nil
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: UID, Gid: GID}}
}

// Private makes a directory only the unprivileged user reaches.
func Private(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "sshtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	chownTree(t, d)
	return d
}

// Shared makes a directory everyone can read (for the servers and the
// client's known_hosts).
func Shared(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "sshtest-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	if err := os.Chmod(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func chownTree(t *testing.T, d string) {
	t.Helper()
	if os.Getuid() != 0 {
		return
	}
	err := filepath.Walk(d, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, UID, GID)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// WriteFile writes a world-readable file.
func WriteFile(t *testing.T, p, s string) { write(t, p, s) }

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v: %s", name, err, out)
	}
}

func waitSocket(t *testing.T, network, addr string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.Dial(network, addr)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not listen", addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// BareRepo makes a bare git repository name in dir with one commit that
// holds file with content, and returns its absolute path.
func BareRepo(t *testing.T, dir, name, file, content string) string {
	t.Helper()
	src := filepath.Join(dir, name+".src")
	bare := filepath.Join(dir, name)
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.invalid",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.invalid"}
	for _, args := range [][]string{
		{"init", "-q", src},
		{"-C", src, "add", file},
		{"-C", src, "commit", "-q", "-m", "test"},
		{"clone", "-q", "--bare", src, bare},
	} {
		if args[0] == "-C" && args[2] == "add" {
			write(t, filepath.Join(src, file), content)
		}
		cmd := exec.Command("git", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
	return bare
}
