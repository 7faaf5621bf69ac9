package launch

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
)

// loginPlan is a sealed plan for home whose broker can run.
func loginPlan(home string) *Plan {
	var w warnings
	return &Plan{host: &Host{Home: home, Report: &w,
		Broker: func(BrokerRequest, func(BrokerEvent)) (BrokerRun, error) { return nil, nil }},
		opt: Options{Seal: true}, sealed: true, ownKey: []byte("0123456789abcdef0123456789abcdef"), Result: &sieve.Result{}}
}

// TestFakeLogins: a credential file package login understands becomes a
// fake in a private directory outside HOME, holding no real value, with
// its credentials and hosts; one it cannot understand stays masked (and
// says why without a value); an unsealed launch fakes nothing.
func TestFakeLogins(t *testing.T) {
	home := t.TempDir()
	real := "s3cr3t-" + strings.Repeat("Pw9", 8)
	os.WriteFile(filepath.Join(home, ".git-credentials"), []byte("https://alice:"+real+"@git.example.com\n"), 0o600)
	os.MkdirAll(filepath.Join(home, ".config/git"), 0o700)
	os.WriteFile(filepath.Join(home, ".config/git/credentials"), []byte("not a URL "+real+"\n"), 0o600)
	l := loginPlan(home)
	lf, err := l.fakeLogins()
	if err != nil {
		t.Fatal(err)
	}
	defer l.removeLogins()
	if len(lf.files) != 1 || lf.files[0].Path != filepath.Join(home, ".git-credentials") {
		t.Fatalf("files = %+v", lf.files)
	}
	src := lf.fake[filepath.Join(home, ".git-credentials")]
	if strings.HasPrefix(src, home) {
		t.Errorf("the fake %s is in HOME", src)
	}
	b, err := os.ReadFile(src)
	if err != nil || strings.Contains(string(b), real) || !strings.Contains(string(b), "https://alice:") {
		t.Errorf("the fake file holds the real value or lost the rest (%v)", err)
	}
	var seen []string
	for _, st := range l.loginStates() {
		seen = append(seen, st.Seen+" "+filepath.Base(st.Path)+" "+strings.Join(st.Hosts, ","))
		if strings.Contains(st.Why, real) {
			t.Errorf("why holds the value")
		}
	}
	if strings.Join(seen, "|") != "fake .git-credentials git.example.com|masked credentials " {
		t.Errorf("states = %q", seen)
	}
	req := BrokerRequest{Secrets: map[string]string{}}
	lf.addLogins(&req)
	if req.Secrets["git-credentials:https://git.example.com"] != real || len(req.Bindings) != 1 ||
		strings.Join(req.Bindings[0].Hosts, ",") != "git.example.com" || len(req.Logins) != 1 {
		t.Errorf("the broker request: %d secrets, bindings %+v", len(req.Secrets), req.Bindings)
	}
	unsealed := loginPlan(home)
	unsealed.opt.Seal, unsealed.sealed = false, false
	if lf, _ := unsealed.fakeLogins(); lf != nil {
		t.Error("an unsealed launch faked a file")
	}
}

// TestGitHelperEnv: git's credential helper for each URL of a faked
// credential store comes after the environment's own GIT_CONFIG_n
// entries; a count git would refuse leaves the environment alone.
func TestGitHelperEnv(t *testing.T) {
	lf := &loginFakes{fake: map[string]string{"/h/.git-credentials": "/tmp/f/0-.git-credentials"},
		files: []LoginFile{{Path: "/h/.git-credentials", Format: "git-credentials",
			Names: []string{"git-credentials:https://b.example", "git-credentials:https://a.example", "git-credentials:https://a.example#3"}}}}
	for _, tt := range []struct {
		name string
		env  []string
		want map[string]string
	}{
		{"none of the user's", nil, map[string]string{"GIT_CONFIG_COUNT": "3",
			"GIT_CONFIG_KEY_0": "credential.https://a.example.helper", "GIT_CONFIG_KEY_1": "credential.https://b.example.helper",
			"GIT_CONFIG_KEY_2": "credentialstore.locktimeoutms", "GIT_CONFIG_VALUE_2": "0"}},
		{"after the user's", []string{"GIT_CONFIG_COUNT=2"}, map[string]string{"GIT_CONFIG_COUNT": "5",
			"GIT_CONFIG_KEY_2": "credential.https://a.example.helper"}},
		{"a count git refuses", []string{"GIT_CONFIG_COUNT=x"}, nil},
		{"a count git refuses", []string{"GIT_CONFIG_COUNT=-1"}, nil},
	} {
		got := lf.gitHelperEnv(tt.env)
		if tt.want == nil && got != nil {
			t.Errorf("%s: %v", tt.name, got)
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", tt.name, k, got[k], v)
			}
		}
	}
	v := lf.gitHelperEnv(nil)["GIT_CONFIG_VALUE_0"]
	if !strings.HasPrefix(v, "!") || !strings.Contains(v, `test "$1" = get`) || !strings.Contains(v, "--file=/tmp/f/0-.git-credentials get") {
		t.Errorf("the helper answers only get, from the fake file: %q", v)
	}
}

// TestLoginReloader: the broker's hook answers the file's current real
// value: after a rename over the file, after a rewrite in place, and the
// same value while nothing changed; nothing for a name it does not know
// or a file that is gone or unparseable.
func TestLoginReloader(t *testing.T) {
	home := t.TempDir()
	p := filepath.Join(home, ".git-credentials")
	name := "git-credentials:https://git.example.com"
	write := func(pw string) {
		os.WriteFile(p+".new", []byte("https://alice:"+pw+"@git.example.com\n"), 0o600)
		if err := os.Rename(p+".new", p); err != nil {
			t.Fatal(err)
		}
	}
	write("first-password-1")
	reload := LoginReloader([]LoginFile{{Path: p, Format: "git-credentials", Names: []string{name}}})
	check := func(what, want string, wantOK bool) {
		t.Helper()
		got, ok := reload(name)
		if got != want || ok != wantOK {
			t.Errorf("%s: got %d bytes, %v; want %d, %v", what, len(got), ok, len(want), wantOK)
		}
	}
	check("at the start", "first-password-1", true)
	check("unchanged", "first-password-1", true)
	write("second-password-22")
	check("renamed over", "second-password-22", true)
	// Rewritten in place, same size: the times tell.
	time.Sleep(10 * time.Millisecond)
	if err := os.WriteFile(p, []byte("https://alice:third-password-333@git.example.com\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	check("rewritten", "third-password-333", true)
	if _, ok := reload("git-credentials:https://other.example"); ok {
		t.Error("an unknown name answered")
	}
	os.WriteFile(p, []byte("garbage\n"), 0o600)
	check("unparseable", "", false)
	os.Remove(p)
	check("gone", "", false)
}

// BenchmarkFakeLogins: what the fake credential files cost a launch's
// start (a git credential store of three hosts): read, parse, fake, write
// in the runtime directory (a tmpfs: /dev/shm here). Their removal, at
// the end, is not counted.
func BenchmarkFakeLogins(b *testing.B) {
	home := b.TempDir()
	os.WriteFile(filepath.Join(home, ".git-credentials"), []byte("https://alice:"+strings.Repeat("Pw9", 12)+"@git.example.com\n"+
		"https://bob:ghp_"+strings.Repeat("x1Y", 12)+"@github.com\nhttps://u:p4ssw0rd-long-enough@gitlab.example.org:8443\n"), 0o600)
	for b.Loop() {
		l := loginPlan(home)
		l.host.SocketDir = "/dev/shm" // a tmpfs, as $XDG_RUNTIME_DIR is
		if _, err := l.fakeLogins(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		l.removeLogins()
		b.StartTimer()
	}
}

// TestToolVars: a faked file whose tool takes its place from a variable
// gets it: npm's file itself, gh's directory as a copy holding the fake
// hosts.yml and links to the real directory's other entries; a variable
// the user's or the tree's environment sets already is left alone.
func TestToolVars(t *testing.T) {
	home := t.TempDir()
	real := "ghp_" + strings.Repeat("Tv5q", 9)
	os.MkdirAll(filepath.Join(home, ".config/gh"), 0o700)
	os.WriteFile(filepath.Join(home, ".config/gh/hosts.yml"), []byte("github.com:\n    oauth_token: "+real+"\n    user: a\n"), 0o600)
	os.WriteFile(filepath.Join(home, ".config/gh/config.yml"), []byte("version: \"1\"\n"), 0o600)
	os.WriteFile(filepath.Join(home, ".npmrc"), []byte("//registry.npmjs.org/:_authToken=npm_"+strings.Repeat("Np3z", 9)+"\n"), 0o600)
	l := loginPlan(home)
	lf, err := l.fakeLogins()
	if err != nil {
		t.Fatal(err)
	}
	defer l.removeLogins()
	env := lf.toolEnv(nil, nil)
	if env["NPM_CONFIG_USERCONFIG"] != lf.fake[filepath.Join(home, ".npmrc")] {
		t.Errorf("NPM_CONFIG_USERCONFIG = %q", env["NPM_CONFIG_USERCONFIG"])
	}
	dir := env["GH_CONFIG_DIR"]
	hosts, err := os.ReadFile(filepath.Join(dir, "hosts.yml"))
	if err != nil || strings.Contains(string(hosts), real) || !strings.Contains(string(hosts), "oauth_token: ghp_") {
		t.Errorf("GH_CONFIG_DIR's hosts.yml is not the fake (%v)", err)
	}
	if target, err := os.Readlink(filepath.Join(dir, "config.yml")); err != nil || target != filepath.Join(home, ".config/gh/config.yml") {
		t.Errorf("GH_CONFIG_DIR's config.yml is not a link to the real one: %q, %v", target, err)
	}
	got := lf.toolEnv([]string{"NPM_CONFIG_USERCONFIG=/elsewhere"}, []string{"GH_CONFIG_DIR=/mine"})
	if len(got) != 0 {
		t.Errorf("a variable the user set was replaced: %v", got)
	}
}

// TestLoginBrokerFails: a sealed launch that has only credential files to
// fake, whose broker cannot start, goes on with the files masked (and a
// warning), its fake files removed; nothing in its seal shows a fake.
func TestLoginBrokerFails(t *testing.T) {
	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".git-credentials"), []byte("https://alice:pw-"+strings.Repeat("Bf4", 8)+"@git.example.com\n"), 0o600)
	pol, err := policy.Default()
	if err != nil {
		t.Fatal(err)
	}
	var w warnings
	l := &Plan{host: &Host{Home: home, Report: &w, SocketDir: t.TempDir(),
		Broker: func(BrokerRequest, func(BrokerEvent)) (BrokerRun, error) { return nil, errors.New("no broker today") }},
		opt: Options{Seal: true, Policy: pol}, sealed: true, ownKey: []byte("0123456789abcdef0123456789abcdef"), Result: &sieve.Result{}}
	if err := l.startBroker(); err != nil {
		t.Fatalf("StartBroker: %v", err)
	}
	if len(w) != 1 || !strings.Contains(w[0], "stay masked") {
		t.Errorf("warnings = %q", w)
	}
	if entries, _ := os.ReadDir(l.host.SocketDir); len(entries) != 0 {
		t.Errorf("the fake files were left behind: %v", entries)
	}
	spec, err := l.sealSpec()
	if err != nil || len(spec.Fake) != 0 || !slices.Contains(spec.Mask, filepath.Join(home, ".git-credentials")) {
		t.Errorf("the seal: fakes %v, err %v", spec.Fake, err)
	}
}

// TestFakeLoginsKeyAtFirstFake: the key of the fakes is read at the first
// fake only. A HOME whose login file holds no credential launches without
// it (where it cannot be read, nothing needs it); one with a credential
// fails when the key cannot be read, and keeps no fakes.
func TestFakeLoginsKeyAtFirstFake(t *testing.T) {
	keyErr := errors.New("the key cannot be read")
	failing := func() ([]byte, error) { return nil, keyErr }

	home := t.TempDir()
	os.WriteFile(filepath.Join(home, ".npmrc"), []byte("fund=false\n"), 0o600)
	l := loginPlan(home)
	l.host.Key = failing
	lf, err := l.fakeLogins()
	if err != nil {
		t.Fatalf("no credential to fake, and the key was read: %v", err)
	}
	if len(lf.files) != 0 {
		t.Errorf("files = %+v", lf.files)
	}

	home = t.TempDir()
	real := "s3cr3t-" + strings.Repeat("Kq7", 8)
	os.WriteFile(filepath.Join(home, ".git-credentials"), []byte("https://alice:"+real+"@git.example.com\n"), 0o600)
	l = loginPlan(home)
	l.host.Key = failing
	if _, err := l.fakeLogins(); !errors.Is(err, keyErr) {
		t.Fatalf("a credential faked without its key: %v", err)
	}
	if l.logins != nil {
		t.Errorf("the failed fakes were kept: %+v", l.logins)
	}
}
