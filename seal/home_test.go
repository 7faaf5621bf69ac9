//go:build unix

package seal

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// armoured is test data shaped as a private key of each armour; it is no
// key at all.
func armoured(begin string) string {
	return begin + "\n" + strings.Repeat("QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo=", 4) + "\n"
}

// keygen makes a real key with ssh-keygen when it is installed (format
// "" for OpenSSH's own, "PEM" for PKCS#1), and writes armoured test data
// otherwise.
func keygen(t *testing.T, path, typ, format string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("ssh-keygen"); err == nil {
		args := []string{"-q", "-t", typ, "-N", "", "-C", "test", "-f", path}
		if format != "" {
			args = append(args, "-m", format)
		}
		if out, err := exec.Command("ssh-keygen", args...).CombinedOutput(); err != nil {
			t.Fatalf("ssh-keygen: %v: %s", err, out)
		}
		return
	}
	begin := "-----BEGIN OPENSSH PRIVATE KEY-----"
	if format == "PEM" {
		begin = "-----BEGIN RSA PRIVATE KEY-----"
	}
	write(t, path, armoured(begin))
	write(t, path+".pub", "ssh-"+typ+" AAAAC3NzaC1lZDI1NTE5AAAAIBLAHBLAHBLAH test\n")
}

func write(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSSHPrivateKeys: keys of any name in ~/.ssh are found by their
// content and masked by Default; public keys, known_hosts, config and
// what lies beyond the bounds are not; nothing hangs on a FIFO.
func TestSSHPrivateKeys(t *testing.T) {
	home := t.TempDir()
	ssh := filepath.Join(home, ".ssh")
	outside := t.TempDir()
	keygen(t, filepath.Join(ssh, "work"), "ed25519", "")
	keygen(t, filepath.Join(ssh, "github_deploy"), "rsa", "PEM")
	keygen(t, filepath.Join(ssh, "id_ed25519"), "ed25519", "") // on the list by name too
	keygen(t, filepath.Join(outside, "linked"), "ed25519", "")
	for name, text := range map[string]string{
		"keys/deploy":     armoured("-----BEGIN EC PRIVATE KEY-----"),
		"client.pem":      "\n\n" + armoured("-----BEGIN PRIVATE KEY-----"),
		"legacy":          armoured("-----BEGIN DSA PRIVATE KEY-----"),
		"vault.key":       armoured("-----BEGIN ENCRYPTED PRIVATE KEY-----"),
		"export.ssh2":     armoured("---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----"),
		"putty.ppk":       "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\n",
		"misnamed.pub":    armoured("-----BEGIN OPENSSH PRIVATE KEY-----"),
		"a/b/too-deep":    armoured("-----BEGIN OPENSSH PRIVATE KEY-----"),
		"known_hosts":     "github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl\n",
		"authorized_keys": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBLAH me\n",
		"config":          "Host *\n  IdentityFile ~/.ssh/work\n",
		"notes":           "a note that mentions -----BEGIN OPENSSH PRIVATE KEY----- later\n",
		"cert.pem":        armoured("-----BEGIN CERTIFICATE-----"),
		"keys/deploy.pub": "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ deploy\n",
		"empty":           "",
	} {
		write(t, filepath.Join(ssh, name), text)
	}
	if err := os.Symlink(filepath.Join(outside, "linked"), filepath.Join(ssh, "linked")); err != nil {
		t.Fatal(err)
	}
	// A directory reached by a link is not entered.
	write(t, filepath.Join(outside, "dir", "key"), armoured("-----BEGIN OPENSSH PRIVATE KEY-----"))
	if err := os.Symlink(filepath.Join(outside, "dir"), filepath.Join(ssh, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ssh, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}

	got := sshPrivateKeys(home)
	var want []string
	for _, n := range []string{"client.pem", "export.ssh2", "github_deploy", "id_ed25519", "keys/deploy", "legacy",
		"linked", "misnamed.pub", "putty.ppk", "vault.key", "work"} {
		want = append(want, filepath.Join(ssh, n))
	}
	if !slices.Equal(got, want) {
		t.Errorf("sshPrivateKeys:\n got %q\nwant %q", got, want)
	}

	s := Default(home, "", "", nil)
	for _, p := range want {
		if !slices.Contains(s.Mask, p) {
			t.Errorf("Default does not mask %s", p)
		}
	}
	for _, n := range []string{"work.pub", "github_deploy.pub", "known_hosts", "authorized_keys", "config", "notes",
		"cert.pem", "keys/deploy.pub", "a/b/too-deep", "linkdir/key", "fifo", "empty"} {
		if p := filepath.Join(ssh, n); slices.Contains(s.Mask, p) {
			t.Errorf("Default masks %s", p)
		}
	}
	seen := map[string]bool{}
	for _, p := range s.Mask {
		if seen[p] {
			t.Errorf("Default masks %s twice", p)
		}
		seen[p] = true
	}
}

// TestSSHPrivateKeysBounded: the walk stops after its budget of entries,
// and a HOME without .ssh gives nothing.
func TestSSHPrivateKeysBounded(t *testing.T) {
	home := t.TempDir()
	if got := sshPrivateKeys(home); len(got) != 0 {
		t.Errorf("no .ssh: %q", got)
	}
	if got := sshPrivateKeys(""); len(got) != 0 {
		t.Errorf("no HOME: %q", got)
	}
	for i := 0; i < sshMaxEntries+50; i++ {
		write(t, filepath.Join(home, ".ssh", "k", fmt.Sprintf("f%04d", i)), armoured("-----BEGIN OPENSSH PRIVATE KEY-----"))
	}
	if got := sshPrivateKeys(home); len(got) == 0 || len(got) >= sshMaxEntries {
		t.Errorf("found %d keys, want fewer than %d and some", len(got), sshMaxEntries)
	}
}

func TestIsPrivateKey(t *testing.T) {
	for head, want := range map[string]bool{
		"-----BEGIN OPENSSH PRIVATE KEY-----\n":   true,
		"\ufeff-----BEGIN RSA PRIVATE KEY-----\n": true,
		"  \r\n-----BEGIN EC PRIVATE KEY-----":    true,
		"-----BEGIN PUBLIC KEY-----\n":            false,
		"ssh-ed25519 AAAA":                        false,
		"x-----BEGIN OPENSSH PRIVATE KEY-----":    false,
		"-----BEGIN OPENSSH PRIVATE KEY":          false,
		"PuTTY-User-Key-File-2: ssh-rsa\n":        true,
		"":                                        false,
	} {
		if got := isPrivateKey([]byte(head)); got != want {
			t.Errorf("isPrivateKey(%q) = %v, want %v", head, got, want)
		}
	}
}
