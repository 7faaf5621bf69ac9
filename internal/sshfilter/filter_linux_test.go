//go:build linux

package sshfilter

import (
	"crypto/rand"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/sshtest"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"
)

// world is a user's agent with two keys, two sshd that authorize both,
// and a known_hosts naming both servers.
type world struct {
	dir        string
	allowed    sshtest.Key
	other      sshtest.Key
	userAgent  string
	a, b       *sshtest.Server
	knownHosts string
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{dir: sshtest.Shared(t)}
	w.allowed = sshtest.NewKey(t, w.dir, "allowed-key")
	w.other = sshtest.NewKey(t, w.dir, "other-key")
	w.userAgent = sshtest.Agent(t, w.allowed, w.other)
	w.a = sshtest.Sshd(t, w.dir, w.allowed.Public, w.other.Public)
	w.b = sshtest.Sshd(t, w.dir, w.allowed.Public, w.other.Public)
	w.knownHosts = filepath.Join(w.dir, "known_hosts")
	sshtest.WriteFile(t, w.knownHosts, w.a.KnownHostsLine("127.0.0.1")+"\n"+w.b.KnownHostsLine("127.0.0.1")+"\n")
	return w
}

// events records a filter's events.
type events struct {
	mu  sync.Mutex
	all []Event
}

func (e *events) add(ev Event) { e.mu.Lock(); e.all = append(e.all, ev); e.mu.Unlock() }

func (e *events) refused(reason string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, ev := range e.all {
		if ev.Kind == "ssh-refused" && strings.Contains(ev.Reason, reason) {
			return true
		}
	}
	return false
}

// filter starts a filter of w's user agent allowing the first key for
// the first server, and returns its socket, which the unprivileged user
// can reach.
func (w *world) filter(t *testing.T, knownHosts string) (string, *events) {
	t.Helper()
	ev := &events{}
	f, err := New(Config{Upstream: w.userAgent, Keys: []string{fingerprint(t, w.allowed.Public)},
		Hosts: []string{"127.0.0.1:" + strconv.Itoa(w.a.Port)}, KnownHosts: []string{knownHosts}, Event: ev.add,
		UIDs: []int{os.Getuid(), sshtest.UID}})
	if err != nil {
		t.Fatal(err)
	}
	sock, err := f.Listen(sshtest.Private(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	// The tests' launcher is root; the tree's user reaches the socket
	// through its own private directory.
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	return sock, ev
}

func fingerprint(t *testing.T, line string) string {
	t.Helper()
	k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return ssh.FingerprintSHA256(k)
}

// TestRealClients: the tree's ssh (unprivileged) reaches the allowed
// server through the filter, not the other one; ssh-add -L lists only
// the allowed key; ssh-add -D is refused and the user's agent keeps its
// keys. Known hosts plain and hashed (ssh-keygen -H).
func TestRealClients(t *testing.T) {
	w := newWorld(t)
	hashed := filepath.Join(w.dir, "known_hosts_hashed")
	sshtest.WriteFile(t, hashed, w.a.KnownHostsLine("127.0.0.1")+"\n"+w.b.KnownHostsLine("127.0.0.1")+"\n")
	if out, err := exec.Command("ssh-keygen", "-q", "-H", "-f", hashed).CombinedOutput(); err != nil {
		t.Fatalf("ssh-keygen -H: %v: %s", err, out)
	}
	if b, _ := os.ReadFile(hashed); !strings.HasPrefix(string(b), "|1|") {
		t.Fatalf("known_hosts not hashed: %s", b)
	}
	for _, tc := range []struct{ name, knownHosts string }{{"plain", w.knownHosts}, {"hashed", hashed}} {
		t.Run(tc.name, func(t *testing.T) {
			sock, ev := w.filter(t, tc.knownHosts)
			before := strings.Count(w.a.Log(), "Accepted publickey")
			out, err := sshtest.SSH(sock, w.knownHosts, w.a.Port, "true").CombinedOutput()
			if strings.Count(w.a.Log(), "Accepted publickey") != before+1 {
				t.Fatalf("ssh to the allowed server did not log in (%v): %s\nsshd: %s", err, out, w.a.Log())
			}
			out, err = sshtest.SSH(sock, w.knownHosts, w.b.Port, "true").CombinedOutput()
			if w.b.Accepted() {
				t.Fatalf("ssh to the other server logged in: %s", out)
			}
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 255 {
				t.Errorf("ssh to the other server: %v, want exit 255: %s", err, out)
			}
			if !ev.refused("is not of an allowed host") {
				t.Errorf("no refusal event for the other server: %+v", ev.all)
			}
			list := exec.Command("ssh-add", "-L")
			list.Env = []string{"PATH=/usr/bin:/bin", "SSH_AUTH_SOCK=" + sock}
			list.SysProcAttr = sshtest.AsUnprivileged()
			got, err := list.Output()
			if err != nil || strings.TrimSpace(string(got)) != w.allowed.Public {
				t.Errorf("ssh-add -L through the filter = %q (%v), want only the allowed key", got, err)
			}
			del := exec.Command("ssh-add", "-D")
			del.Env = list.Env
			del.SysProcAttr = sshtest.AsUnprivileged()
			if out, err := del.CombinedOutput(); err == nil {
				t.Errorf("ssh-add -D succeeded: %s", out)
			}
			if !ev.refused("removing every key") {
				t.Errorf("no refusal event for ssh-add -D: %+v", ev.all)
			}
			if keys := userKeys(t, w.userAgent); len(keys) != 2 {
				t.Errorf("the user's agent holds %d keys after ssh-add -D, want 2", len(keys))
			}
		})
	}
}

func userKeys(t *testing.T, sock string) []*agent.Key {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	keys, err := agent.NewClient(c).List()
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// rawClient is an agent client of the filter's socket as the tree's
// hostile code would be: it speaks the protocol itself.
func rawClient(t *testing.T, sock string) agent.ExtendedAgent {
	t.Helper()
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return agent.NewClient(c)
}

func hostSigner(t *testing.T, w *world, s *sshtest.Server) ssh.Signer {
	t.Helper()
	// The server's host key file is in the sshd's directory.
	matches, _ := filepath.Glob(filepath.Join(w.dir, "sshd-*", "host_ed25519.pub"))
	for _, m := range matches {
		pub, _ := os.ReadFile(m)
		if strings.HasPrefix(string(pub), s.HostKey) {
			b, err := os.ReadFile(strings.TrimSuffix(m, ".pub"))
			if err != nil {
				t.Fatal(err)
			}
			k, err := ssh.ParsePrivateKey(b)
			if err != nil {
				t.Fatal(err)
			}
			return k
		}
	}
	t.Fatal("no host key")
	return nil
}

func publicKey(t *testing.T, line string) ssh.PublicKey {
	t.Helper()
	k, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestRawClients: what the tree's own code could send instead of ssh.
// Each attack is refused with its reason; the honest sequence, last,
// signs (so that every refusal above can fail).
func TestRawClients(t *testing.T) {
	w := newWorld(t)
	sock, ev := w.filter(t, w.knownHosts)
	hostA := hostSigner(t, w, w.a)
	hostB := hostSigner(t, w, w.b)
	_, forger, _ := ed25519Signer(t)
	allowed := publicKey(t, w.allowed.Public)
	other := publicKey(t, w.other.Public)
	sid := make([]byte, 32)
	rand.Read(sid)
	sign := func(s ssh.Signer, data []byte) *ssh.Signature {
		sig, err := s.Sign(rand.Reader, data)
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	for _, tc := range []struct {
		name   string
		bind   []byte // nil: no bind
		key    ssh.PublicKey
		data   []byte
		reason string // "" signs
	}{
		{"no session-bind", nil, allowed, userauth(sid, allowed, methodPublickey, nil), "did not bind"},
		{"forged bind signature", bindMsg(hostA.PublicKey(), sid, sign(forger, sid), false), allowed,
			userauth(sid, allowed, methodPublickey, nil), "signature the host key did not make"},
		{"bind signed over another session", bindMsg(hostA.PublicKey(), sid, sign(hostA, []byte("another")), false), allowed,
			userauth(sid, allowed, methodPublickey, nil), "signature the host key did not make"},
		{"forwarding bind", bindMsg(hostA.PublicKey(), sid, sign(hostA, sid), true), allowed,
			userauth(sid, allowed, methodPublickey, nil), "forwarded agent"},
		{"host not allowed", bindMsg(hostB.PublicKey(), sid, sign(hostB, sid), false), allowed,
			userauth(sid, allowed, methodPublickey, nil), "not of an allowed host"},
		{"host key unknown", bindMsg(forger.PublicKey(), sid, sign(forger, sid), false), allowed,
			userauth(sid, allowed, methodPublickey, nil), "in no known_hosts"},
		{"key not allowed", bindMsg(hostA.PublicKey(), sid, sign(hostA, sid), false), other,
			userauth(sid, other, methodPublickey, nil), "key not allowed"},
		{"another session", bindMsg(hostA.PublicKey(), sid, sign(hostA, sid), false), allowed,
			userauth([]byte("another session id"), allowed, methodPublickey, nil), "another session"},
		{"not a userauth request", bindMsg(hostA.PublicKey(), sid, sign(hostA, sid), false), allowed,
			[]byte("SSHSIG arbitrary data"), "not an ssh userauth request"},
		{"hostbound for another host", bindMsg(hostA.PublicKey(), sid, sign(hostA, sid), false), allowed,
			userauth(sid, allowed, methodHostbound, hostB.PublicKey().Marshal()), "another host key"},
		{"honest publickey", bindMsg(hostA.PublicKey(), sid, sign(hostA, sid), false), allowed,
			userauth(sid, allowed, methodPublickey, nil), ""},
		{"honest hostbound", bindMsg(hostA.PublicKey(), sid, sign(hostA, sid), false), allowed,
			userauth(sid, allowed, methodHostbound, hostA.PublicKey().Marshal()), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := rawClient(t, sock)
			if tc.bind != nil {
				_, _ = c.Extension("session-bind@openssh.com", tc.bind)
			}
			sig, err := c.Sign(tc.key, tc.data)
			if tc.reason == "" {
				if err != nil {
					t.Fatalf("honest request refused: %v: %+v", err, ev.all)
				}
				if err := tc.key.Verify(tc.data, sig); err != nil {
					t.Fatalf("signature does not verify: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("signed")
			}
			if !ev.refused(tc.reason) {
				t.Errorf("no refusal %q: %+v", tc.reason, ev.all)
			}
		})
	}
	c := rawClient(t, sock)
	if err := c.Add(agent.AddedKey{PrivateKey: ed25519Key(t)}); err == nil || !ev.refused("adding a key") {
		t.Error("adding a key was not refused")
	}
	if err := c.Lock([]byte("x")); err == nil || !ev.refused("locking") {
		t.Error("locking was not refused")
	}
	if err := c.Remove(allowed); err == nil || !ev.refused("removing a key") {
		t.Error("removing a key was not refused")
	}
	if _, err := c.Extension("query", nil); err == nil || !ev.refused(`extension "query"`) {
		t.Error("the query extension was not refused")
	}
	if n := len(userKeys(t, w.userAgent)); n != 2 {
		t.Errorf("user's agent holds %d keys, want 2", n)
	}
}

// BenchmarkSign: one userauth signature by the user's ssh-agent, direct
// and through the filter (bound connection, key allowed by fingerprint).
func BenchmarkSign(b *testing.B) {
	dir := b.TempDir()
	k := benchKey(b, dir)
	userAgent := benchAgent(b, dir, k)
	_, host, _ := ed25519Signer(b)
	kh := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(kh, []byte("bench.example "+string(ssh.MarshalAuthorizedKey(host.PublicKey()))), 0o644); err != nil {
		b.Fatal(err)
	}
	pub := publicKeyB(b, k)
	f, err := New(Config{Upstream: userAgent, Keys: []string{ssh.FingerprintSHA256(pub)}, Hosts: []string{"bench.example"}, KnownHosts: []string{kh}, UIDs: []int{os.Getuid()}})
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sock, err := f.Listen(dir)
	if err != nil {
		b.Fatal(err)
	}
	sid := make([]byte, 32)
	rand.Read(sid)
	data := userauth(sid, pub, methodPublickey, nil)
	for _, bc := range []struct{ name, sock string }{{"direct", userAgent}, {"filter", sock}} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := net.Dial("unix", bc.sock)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			a := agent.NewClient(c)
			sig, _ := host.Sign(rand.Reader, sid)
			if _, err := a.Extension("session-bind@openssh.com", bindMsg(host.PublicKey(), sid, sig, false)); err != nil && bc.name == "filter" {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := a.Sign(pub, data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func benchKey(b *testing.B, dir string) string {
	p := filepath.Join(dir, "key")
	if out, err := exec.Command("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", p).CombinedOutput(); err != nil {
		b.Fatalf("%v: %s", err, out)
	}
	return p
}

func benchAgent(b *testing.B, dir, key string) string {
	sock := filepath.Join(dir, "user.sock")
	cmd := exec.Command("ssh-agent", "-D", "-a", sock)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for i := 0; ; i++ {
		add := exec.Command("ssh-add", "-q", key)
		add.Env = []string{"PATH=/usr/bin:/bin", "SSH_AUTH_SOCK=" + sock}
		out, err := add.CombinedOutput()
		if err == nil {
			break
		}
		if i > 100 {
			b.Fatalf("ssh-add: %v: %s", err, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return sock
}

func publicKeyB(b *testing.B, key string) ssh.PublicKey {
	pub, err := os.ReadFile(key + ".pub")
	if err != nil {
		b.Fatal(err)
	}
	k, _, _, _, err := ssh.ParseAuthorizedKey(pub)
	if err != nil {
		b.Fatal(err)
	}
	return k
}

// TestKnownHostsReadOnce: a host key the tree writes into known_hosts
// during the launch, for an allowed name, is not trusted: the filter read
// the file when it started.
func TestKnownHostsReadOnce(t *testing.T) {
	w := newWorld(t)
	kh := filepath.Join(w.dir, "known_hosts_once")
	sshtest.WriteFile(t, kh, w.a.KnownHostsLine("127.0.0.1")+"\n")
	ev := &events{}
	f, err := New(Config{Upstream: w.userAgent, Hosts: []string{"github.com"}, KnownHosts: []string{kh}, Event: ev.add, UIDs: []int{os.Getuid()}})
	if err != nil {
		t.Fatal(err)
	}
	sock, err := f.Listen(sshtest.Private(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	hostB := hostSigner(t, w, w.b)
	// The tree names the other server github.com.
	sshtest.WriteFile(t, kh, w.a.KnownHostsLine("127.0.0.1")+"\ngithub.com "+w.b.HostKey+"\n")
	sid := []byte("a session identifier of 32 bytes")
	sig, err := hostB.Sign(rand.Reader, sid)
	if err != nil {
		t.Fatal(err)
	}
	c := rawClient(t, sock)
	_, _ = c.Extension("session-bind@openssh.com", bindMsg(hostB.PublicKey(), sid, sig, false))
	allowed := publicKey(t, w.allowed.Public)
	if _, err := c.Sign(allowed, userauth(sid, allowed, methodPublickey, nil)); err == nil {
		t.Fatal("signed for a host key written into known_hosts after the start")
	}
	if !ev.refused("in no known_hosts") {
		t.Errorf("no refusal: %+v", ev.all)
	}
	// The control: a filter started now trusts it.
	g, err := New(Config{Upstream: w.userAgent, Hosts: []string{"github.com"}, KnownHosts: []string{kh}, UIDs: []int{os.Getuid()}})
	if err != nil {
		t.Fatal(err)
	}
	if h, why := g.hostFor(hostB.PublicKey().Marshal()); h != "github.com" {
		t.Errorf("a filter started after the write does not trust it: %s", why)
	}
}

// TestPeerUID: a connection of a user the filter does not serve (the
// socket reachable all the same: mode 0666) is closed unanswered and
// reported; the filter's own users are served.
func TestPeerUID(t *testing.T) {
	w := newWorld(t)
	ev := &events{}
	f, err := New(Config{Upstream: w.userAgent, Hosts: []string{"github.com"}, Event: ev.add, UIDs: []int{os.Getuid()}})
	if err != nil {
		t.Fatal(err)
	}
	sock, err := f.Listen(sshtest.Private(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := os.Chmod(sock, 0o666); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Dir(sock), 0o755)
	if keys, err := rawClient(t, sock).List(); err != nil || len(keys) != 2 {
		t.Fatalf("the filter's own user: %d keys, %v", len(keys), err)
	}
	list := exec.Command("ssh-add", "-L")
	list.Env = []string{"PATH=/usr/bin:/bin", "SSH_AUTH_SOCK=" + sock}
	list.SysProcAttr = sshtest.AsUnprivileged()
	if out, err := list.CombinedOutput(); err == nil || strings.Contains(string(out), "ssh-ed25519") {
		t.Errorf("another user listed keys through the filter (%v): %s", err, out)
	}
	if !ev.refused("peer uid " + strconv.Itoa(sshtest.UID)) {
		t.Errorf("no refusal event for the other user: %+v", ev.all)
	}
	if _, err := New(Config{Upstream: w.userAgent}); err == nil {
		t.Error("a filter that serves no user: no error")
	}
}

// TestIPv6KnownHosts: known_hosts entries of IPv6 addresses, "[addr]:port"
// in a long spelling and a bare one (port 22), decide a bind as names do:
// a policy host "[::1]:PORT" allows the first server's host key there and
// not the second's (port 22); "::1" allows both.
func TestIPv6KnownHosts(t *testing.T) {
	w := newWorld(t)
	kh := filepath.Join(w.dir, "known_hosts_v6")
	sshtest.WriteFile(t, kh, "[0:0:0:0:0:0:0:1]:"+strconv.Itoa(w.a.Port)+" "+w.a.HostKey+"\n::1 "+w.b.HostKey+"\n")
	hostA, hostB := hostSigner(t, w, w.a), hostSigner(t, w, w.b)
	allowed := publicKey(t, w.allowed.Public)
	sid := make([]byte, 32)
	rand.Read(sid)
	signWith := func(host ssh.Signer, hosts []string) (*events, error) {
		ev := &events{}
		f, err := New(Config{Upstream: w.userAgent, Hosts: hosts, KnownHosts: []string{kh}, Event: ev.add, UIDs: []int{os.Getuid()}})
		if err != nil {
			t.Fatal(err)
		}
		sock, err := f.Listen(sshtest.Private(t))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		c := rawClient(t, sock)
		bsig, err := host.Sign(rand.Reader, sid)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.Extension("session-bind@openssh.com", bindMsg(host.PublicKey(), sid, bsig, false))
		_, err = c.Sign(allowed, userauth(sid, allowed, methodPublickey, nil))
		return ev, err
	}
	port := "[::1]:" + strconv.Itoa(w.a.Port)
	if ev, err := signWith(hostA, []string{port}); err != nil {
		t.Errorf("the server at %s: %v %+v", port, err, ev.all)
	}
	if ev, err := signWith(hostB, []string{port}); err == nil || !ev.refused("not of an allowed host") {
		t.Errorf("the server on ::1 port 22 for %s: %v %+v", port, err, ev.all)
	}
	for _, h := range []ssh.Signer{hostA, hostB} {
		if ev, err := signWith(h, []string{"::1"}); err != nil {
			t.Errorf("::1 on any port: %v %+v", err, ev.all)
		}
	}
}
