package seal

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

func TestDefault(t *testing.T) {
	s := Default("/home/u", "/home/u/.config/envsieve", "/home/u/.local/share/envsieve", []string{"/srv/keys"})
	for _, want := range []string{"/home/u/.aws/credentials", "/home/u/.config/gh/hosts.yml", "/home/u/.ssh/id_ed25519",
		"/home/u/.config/envsieve/secrets.age", "/home/u/.local/share/envsieve", "/srv/keys",
		// The wider list (issue 25): git's XDG store, Vault, databases,
		// rclone, Maven, 1Password, the keyring, browser sessions.
		"/home/u/.config/git/credentials", "/home/u/.vault-token", "/home/u/.pgpass", "/home/u/.my.cnf",
		"/home/u/.config/rclone/rclone.conf", "/home/u/.m2/settings.xml", "/home/u/.config/op",
		"/home/u/.local/share/keyrings", "/home/u/.mozilla", "/home/u/.config/google-chrome",
		"/home/u/.config/chromium", "/home/u/.config/BraveSoftware", "/home/u/.config/microsoft-edge",
		"/home/u/.var/app/org.mozilla.firefox", "/home/u/.aws/cli/cache"} {
		found := false
		for _, p := range s.Mask {
			found = found || p == want
		}
		if !found {
			t.Errorf("Default does not mask %s", want)
		}
	}
	if !reflect.DeepEqual(s.ReadOnly, []string{"/home/u/.config/envsieve"}) {
		t.Errorf("ReadOnly = %q", s.ReadOnly)
	}
	if s := Default("", "", "", nil); len(s.Mask)+len(s.ReadOnly) != 0 {
		t.Errorf("Default with nothing known = %+v", s)
	}
}

// TestDefaultAgentLogins: an agent's login file is masked when it exists
// (its mask holds the state dir's top level), and a state dir without one
// is left as it is (its agent, logged in otherwise, keeps writing there).
func TestDefaultAgentLogins(t *testing.T) {
	home := t.TempDir()
	for _, d := range []string{".claude", ".codex", ".gemini"} {
		os.Mkdir(filepath.Join(home, d), 0o700)
	}
	os.WriteFile(filepath.Join(home, ".claude", ".credentials.json"), []byte("{}"), 0o600)
	os.Symlink("/nowhere", filepath.Join(home, ".gemini", "oauth_creds.json")) // a dangling link is masked too
	s := Default(home, "", "", nil)
	for f, want := range map[string]bool{".claude/.credentials.json": true, ".codex/auth.json": false, ".gemini/oauth_creds.json": true} {
		if got := slices.Contains(s.Mask, filepath.Join(home, f)); got != want {
			t.Errorf("%s masked: %v, want %v", f, got, want)
		}
	}
	holds := HoldDirs(s.Mask, home)
	if !slices.Contains(holds, filepath.Join(home, ".claude")) || slices.Contains(holds, filepath.Join(home, ".codex")) {
		t.Errorf("held: %q", holds)
	}
}

// TestCredentialFilesDisjoint: no entry of the list lies beneath another
// (a mask over a mask), and each is a clean path relative to HOME.
func TestCredentialFilesDisjoint(t *testing.T) {
	list := CredentialFiles()
	for i, a := range list {
		if filepath.IsAbs(a) || filepath.Clean(a) != a || strings.HasPrefix(a, "..") {
			t.Errorf("%q is not a clean path below HOME", a)
		}
		for j, b := range list {
			if i != j && (a == b || strings.HasPrefix(b, a+"/")) {
				t.Errorf("%q and %q overlap", a, b)
			}
		}
	}
}

func TestOverlaps(t *testing.T) {
	s := Default("/home/u", "/home/u/.config/envsieve", "/home/u/.local/share/envsieve", nil)
	for path, want := range map[string]bool{
		"/home/u/.codex": false, "/home/u/.config/amp": false, "/home/u/.local/share/opencode": false,
		"/home/u/.config/envsieve": true, "/home/u/.config/envsieve/x": true, "/home/u/.config": true,
		"/home/u/.aws": true, "/home/u/.aws/config": false, "/home/u/.aws/cli": true, "/home/u/.gnupg/sub": true, "/home/u": true,
		"/home/u/.config/envsieve2": false, "/home/u/.ssh/config.d": false, "/home/u/./.aws/": true,
	} {
		if got := s.overlaps(path); got != want {
			t.Errorf("overlaps(%s) = %v, want %v", path, got, want)
		}
	}
}

func TestEncodeDecode(t *testing.T) {
	s := Default("/home/u", "/c", "/d", nil)
	s.ReadOnly = append(s.ReadOnly, "/home/u")
	s.Write = []string{"/home/u/proj", "/home/u/.cache"}
	s.Hold = HoldDirs(s.Mask, "/home/u")
	s.Fake = map[string]string{"/home/u/.git-credentials": "/tmp/envsieve-fakes-1/git-credentials"}
	text, err := s.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := Decode(text)
	if err != nil || !reflect.DeepEqual(got, s) {
		t.Fatalf("Decode(Encode(s)) = %+v, %v", got, err)
	}
	if !strings.Contains(text, "s /tmp/envsieve-fakes-1/git-credentials\nm /home/u/.git-credentials\n") {
		t.Errorf("a fake is not written before its mask:\n%s", text)
	}
	for _, bad := range []Spec{{Mask: []string{"relative"}}, {Mask: []string{"/a\nr /etc"}}, {ReadOnly: []string{"/a\x00"}},
		{Mask: []string{"/a"}, Fake: map[string]string{"/b": "/src"}}, {Mask: []string{"/a"}, Fake: map[string]string{"/a": "src"}}} {
		if _, err := bad.Encode(); err == nil {
			t.Errorf("Encode(%q) gave no error", bad)
		}
	}
	for _, bad := range []string{"x /a\n", "m relative\n", "m\n", "/a\n", "m /a\x00b\n", "w relative\n", "w  /a\n",
		"s /src\n", "s /src\nr /a\n", "s /src\ns /src\nm /a\n", "s relative\nm /a\n"} {
		if _, err := Decode(bad); err == nil {
			t.Errorf("Decode(%q) gave no error", bad)
		}
	}
}

// TestBinds: the read-only and write paths are bound the deepest first,
// and at the same path the write path first, so that read-only wins.
func TestBinds(t *testing.T) {
	s := Spec{ReadOnly: []string{"/home/u", "/home/u/.config/envsieve", "/home/u/x"},
		Write: []string{"/home/u/.config", "/home/u/x/", "/home/u/proj"}}
	want := []bind{{"/home/u/.config/envsieve", false}, {"/home/u/.config", true}, {"/home/u/proj", true},
		{"/home/u/x", true}, {"/home/u/x", false}, {"/home/u", false}}
	if got := binds(s); !reflect.DeepEqual(got, want) {
		t.Errorf("binds = %v, want %v", got, want)
	}
}

// FuzzDecode: Decode never panics, and what it accepts encodes back to
// lines it accepts again, with the same paths.
func FuzzDecode(f *testing.F) {
	f.Add("m /home/u/.aws/credentials\nr /home/u/.config/envsieve\n")
	f.Add("m /a\n\nr /b")
	f.Add("r /home/u\nw /home/u/proj\nh /home/u\n")
	f.Add("s /tmp/f/netrc\nm /home/u/.netrc\nh /home/u\n")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := Decode(text)
		if err != nil {
			return
		}
		again, err := s.Encode()
		if err != nil {
			t.Fatalf("Encode of a decoded spec: %v", err)
		}
		s2, err := Decode(again)
		if err != nil || !reflect.DeepEqual(s, s2) {
			t.Fatalf("round trip: %+v, %v", s2, err)
		}
	})
}

// TestHoldDirs: the directories held are HOME and each one between it and
// a masked path beneath it, the shallowest first; a mask outside HOME adds
// none.
func TestHoldDirs(t *testing.T) {
	got := HoldDirs([]string{"/home/u/.aws/credentials", "/home/u/.netrc", "/home/u/.config/gh/hosts.yml",
		"/home/u/.config/gcloud", "/etc/app/key", "/home/u2/x"}, "/home/u/")
	want := []string{"/home/u", "/home/u/.aws", "/home/u/.config", "/home/u/.config/gh"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("HoldDirs = %q, want %q", got, want)
	}
	if got := HoldDirs([]string{"/a/b"}, "/"); len(got) != 0 {
		t.Errorf("HoldDirs under / = %q", got)
	}
}
