//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestSeal plays an agent (an unprivileged user) that reads the credential
// files of its user's HOME and envsieve's own store and keys, and rewrites
// the user's policy for later launches. Under --seal none of the files has
// its content, the policy cannot be written, ordinary files of HOME stay
// readable and the working directory writable (TestSealWrites has the
// rest of HOME); without it (the control) all of it works.
// It runs once with the seal made by namespaces, and once by Landlock
// under a seccomp filter that refuses user namespaces.
func TestSeal(t *testing.T) {
	t.Run("namespaces", func(t *testing.T) { testSeal(t, false, false) })
	t.Run("namespaces, the C init", func(t *testing.T) { testSeal(t, false, true) })
	t.Run("landlock", func(t *testing.T) { testSeal(t, true, false) })
}

// testSeal seals by Landlock (namespaces refused) or by namespaces, whose
// init is envsieve itself or, with cInit, envsieve-init beside the shim.
func testSeal(t *testing.T, landlock, cInit bool) {
	exe, home := unprivilegedCopy(t, "envsieve")
	// wrap is what envsieve runs under: the filter, for Landlock.
	var wrap []string
	if landlock {
		noNS := filepath.Join(filepath.Dir(exe), "nouserns")
		copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		wrap = []string{noNS}
	}
	command := func(args ...string) *exec.Cmd {
		argv := append(append(append([]string{}, wrap...), exe), args...)
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "ENVSIEVE_DEBUG=1"}
		if cInit {
			cmd.Env = append(cmd.Env, "ENVSIEVE_SHIM="+shimtest.Lib(t))
		}
		cmd.Dir = filepath.Join(home, "proj")
		cmd.SysProcAttr = asUnprivileged()
		return cmd
	}
	canary := "seal-canary-" + strings.Repeat("4f", 6)
	files := []string{
		".aws/credentials", ".config/gh/hosts.yml", ".ssh/id_ed25519", ".netrc", ".git-credentials",
		".docker/config.json", ".kube/config", ".config/envsieve/secrets.age", ".local/share/envsieve/store.key",
		".local/share/envsieve/redact.key",
		// Of the wider list, and an SSH key found by its content only.
		".config/git/credentials", ".pgpass", ".vault-token", ".mozilla/firefox/p.default/cookies.sqlite", ".ssh/work",
	}
	for _, f := range append(files, "notes.txt", "proj/notes.txt", ".ssh/work.pub", ".config/envsieve/policy.yaml") {
		p := filepath.Join(home, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		body := canary + "\n"
		if f == ".config/envsieve/policy.yaml" {
			body = "version: 1\n"
		}
		if strings.HasSuffix(f, "notes.txt") {
			body = "ordinary\n"
		}
		if f == ".ssh/work" {
			body = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + body
		}
		if f == ".ssh/work.pub" {
			body = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5 ordinary-public-key\n"
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if os.Getuid() == 0 {
		filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
	}
	probe := `cd "$HOME"; for f in ` + strings.Join(files, " ") + `; do cat "$f" 2>/dev/null; done; ` +
		`echo "mode: audit" >> .config/envsieve/policy.yaml 2>/dev/null && echo POLICY-WRITTEN; ` +
		`touch .config/envsieve/new 2>/dev/null && echo CONFIG-WRITTEN; ` +
		`cat notes.txt .ssh/work.pub; echo more >> proj/notes.txt && echo notes-written`
	run := func(args ...string) string {
		cmd := command(append(append([]string{"run", "--no-shim"}, args...), "--", "/bin/sh", "-c", probe)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, strings.ReplaceAll(string(out), canary, "<canary>"))
		}
		return string(out)
	}
	control := run()
	if !strings.Contains(control, canary) || !strings.Contains(control, "POLICY-WRITTEN") {
		t.Fatalf("control: the probe should read the files and write the policy without the seal")
	}
	os.WriteFile(filepath.Join(home, ".config/envsieve/policy.yaml"), []byte("version: 1\n"), 0o600)
	os.Remove(filepath.Join(home, ".config/envsieve/new"))
	got := run("--seal")
	mech := "seal: namespaces;"
	if landlock {
		mech = "seal: landlock;"
	}
	if !strings.Contains(got, mech) {
		t.Errorf("the seal was not made by %q:\n%s", mech, strings.ReplaceAll(got, canary, "<canary>"))
	}
	if ran := strings.Contains(got, "isolate: the init is "); ran != cInit {
		t.Errorf("envsieve-init was the init: %v, want %v:\n%s", ran, cInit, strings.ReplaceAll(got, canary, "<canary>"))
	}
	if n := strings.Count(got, canary); n > 0 {
		t.Errorf("under --seal the probe read %d credential files", n)
	}
	for _, bad := range []string{"POLICY-WRITTEN", "CONFIG-WRITTEN"} {
		if strings.Contains(got, bad) {
			t.Errorf("under --seal: %s", bad)
		}
	}
	if !strings.Contains(got, "ordinary\n") || !strings.Contains(got, "ordinary-public-key") || !strings.Contains(got, "notes-written") {
		t.Errorf("under --seal an ordinary file of HOME is not usable: %q", strings.ReplaceAll(got, canary, "<canary>"))
	}

	// Without a config dir, the tree would make one and plant the policy
	// of every later launch: the sealed launch makes it first.
	plant := func(args ...string) string {
		os.RemoveAll(filepath.Join(home, ".config/envsieve"))
		cmd := command(append(append([]string{"run", "--no-shim"}, args...), "--", "/bin/sh", "-c",
			`mkdir -p "$HOME/.config/envsieve" && echo 'mode: audit' > "$HOME/.config/envsieve/policy.yaml" && echo POLICY-PLANTED`)...)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := plant(); !strings.Contains(out, "POLICY-PLANTED") {
		t.Fatalf("control: unsealed, the tree should plant a policy: %q", out)
	}
	if out := plant("--seal"); strings.Contains(out, "POLICY-PLANTED") {
		t.Errorf("under --seal the tree planted a policy in a config dir that did not exist")
	}
	if fi, err := os.Stat(filepath.Join(home, ".config/envsieve")); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the sealed launch did not make a private config dir: %v", err)
	}
	os.WriteFile(filepath.Join(home, ".config/envsieve/policy.yaml"), []byte("version: 1\n"), 0o600)
	if os.Getuid() == 0 {
		os.Lchown(filepath.Join(home, ".config/envsieve/policy.yaml"), 65534, 65534)
	}

	// The same seal asked for by the policy (a profile's seal: on).
	sealPol := filepath.Join(filepath.Dir(exe), "seal.yaml")
	os.WriteFile(sealPol, []byte("version: 1\nprofiles:\n  agent: {seal: on}\n"), 0o644)
	os.WriteFile(filepath.Join(home, ".config/envsieve/policy.yaml"), []byte("version: 1\n"), 0o600)
	if got := run("--policy", sealPol, "--profile", "agent"); strings.Contains(got, canary) || strings.Contains(got, "POLICY-WRITTEN") {
		t.Errorf("a profile's seal: on did not seal the tree")
	}

	// The policy's own paths: masked besides the built-in list, in HOME
	// ("~/") and outside it.
	own := []string{filepath.Join(home, ".config/myapp/token"), filepath.Join(filepath.Dir(exe), "shared-token")}
	for _, p := range own {
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(canary+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if os.Getuid() == 0 {
			os.Lchown(filepath.Dir(p), 65534, 65534)
			os.Lchown(p, 65534, 65534)
		}
	}
	readOwn := func(pol string) string {
		os.WriteFile(sealPol, []byte(pol), 0o644)
		cmd := command("run", "--no-shim", "--policy", sealPol, "--profile", "agent", "--", "/bin/sh", "-c",
			`cat "$HOME/.config/myapp/token" "$0" 2>/dev/null; cat "$HOME/notes.txt"`, own[1])
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v\n%s", err, strings.ReplaceAll(string(out), canary, "<canary>"))
		}
		return string(out)
	}
	if got := readOwn("version: 1\nprofiles:\n  agent: {seal: on}\n"); strings.Count(got, canary) != 2 {
		t.Fatalf("control: sealed without masks of its own, the tree should read both files")
	}
	got = readOwn("version: 1\nprofiles:\n  agent: {seal: {mode: on, mask: [~/.config/myapp/token, " + own[1] + "]}}\n")
	if n := strings.Count(got, canary); n > 0 || !strings.Contains(got, "ordinary") {
		t.Errorf("the policy's seal.mask: the tree read %d of its files, or not its notes: %q", n, strings.ReplaceAll(got, canary, "<canary>"))
	}

	// A nested envsieve inside the tree asks for a stored secret: the
	// headline attack. A real store first, made as the user.
	for _, f := range []string{".config/envsieve/secrets.age", ".local/share/envsieve/store.key", ".local/share/envsieve/redact.key"} {
		os.Remove(filepath.Join(home, f))
	}
	stored := "stored-twilio-" + strings.Repeat("9c", 6)
	set := command("secrets", "set", "TWILIO_AUTH_TOKEN")
	set.Stdin = strings.NewReader(stored)
	if out, err := set.CombinedOutput(); err != nil {
		t.Fatalf("secrets set: %v\n%s", err, out)
	}
	pol := filepath.Join(filepath.Dir(exe), "store.yaml")
	os.WriteFile(pol, []byte("version: 1\nredact: {enabled: false, entropy: false}\nsecrets:\n  TWILIO_AUTH_TOKEN: {from: store}\n"), 0o644)
	nested := func(args ...string) string {
		inner := exe + " run --no-shim --policy " + pol + " --secret TWILIO_AUTH_TOKEN -- printenv TWILIO_AUTH_TOKEN"
		cmd := command(append(append([]string{"run", "--no-shim"}, args...), "--", "/bin/sh", "-c", inner+"; true")...)
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	// The control is a launch at the top level: the store works. Nested,
	// sealed or not, it does not deliver (TestNestedNarrows has the
	// unsealed cases; here the seal masks the store besides).
	top := command("run", "--no-shim", "--policy", pol, "--secret", "TWILIO_AUTH_TOKEN", "--", "printenv", "TWILIO_AUTH_TOKEN")
	if out, _ := top.CombinedOutput(); !strings.Contains(string(out), stored) {
		t.Fatalf("control: a top-level envsieve should read the store: %q", strings.ReplaceAll(string(out), stored, "<stored>"))
	}
	for _, args := range [][]string{nil, {"--seal"}} {
		if out := nested(args...); strings.Contains(out, stored) || !strings.Contains(out, "TWILIO_AUTH_TOKEN") {
			t.Errorf("%v: a nested envsieve delivered a stored secret, or did not name it: %q", args, strings.ReplaceAll(out, stored, "<stored>"))
		}
	}
	// The store is a source by default too (a policy that names no
	// source): the top level reads it, a nested envsieve still does not.
	os.WriteFile(pol, []byte("version: 1\nredact: {enabled: false, entropy: false}\n"), 0o644)
	top = command("run", "--no-shim", "--policy", pol, "--secret", "TWILIO_AUTH_TOKEN", "--", "printenv", "TWILIO_AUTH_TOKEN")
	if out, _ := top.CombinedOutput(); !strings.Contains(string(out), stored) {
		t.Fatalf("control: a top-level envsieve should read the store by default: %q", strings.ReplaceAll(string(out), stored, "<stored>"))
	}
	for _, args := range [][]string{nil, {"--seal"}} {
		if out := nested(args...); strings.Contains(out, stored) || !strings.Contains(out, "TWILIO_AUTH_TOKEN") {
			t.Errorf("default source, %v: a nested envsieve delivered a stored secret, or did not name it: %q", args, strings.ReplaceAll(out, stored, "<stored>"))
		}
	}
}
