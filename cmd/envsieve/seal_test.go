//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSeal plays an agent (an unprivileged user) that reads the credential
// files of its user's HOME and envsieve's own store and keys, and rewrites
// the user's policy for later launches. Under --seal none of the files has
// its content, the policy cannot be written, and ordinary files of HOME
// stay readable and writable; without it (the control) all of it works.
func TestSeal(t *testing.T) {
	exe, home := unprivilegedCopy(t, "envsieve")
	canary := "seal-canary-" + strings.Repeat("4f", 6)
	files := []string{
		".aws/credentials", ".config/gh/hosts.yml", ".ssh/id_ed25519", ".netrc", ".git-credentials",
		".docker/config.json", ".kube/config", ".config/envsieve/secrets.age", ".local/share/envsieve/store.key",
		".local/share/envsieve/redact.key",
	}
	for _, f := range append(files, "notes.txt", ".config/envsieve/policy.yaml") {
		p := filepath.Join(home, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		body := canary + "\n"
		if f == ".config/envsieve/policy.yaml" {
			body = "version: 1\n"
		}
		if f == "notes.txt" {
			body = "ordinary\n"
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
		`cat notes.txt; echo more >> notes.txt && echo notes-written`
	run := func(args ...string) string {
		cmd := exec.Command(exe, append(append([]string{"run", "--no-shim"}, args...), "--", "/bin/sh", "-c", probe)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
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
	got := run("--seal")
	if n := strings.Count(got, canary); n > 0 {
		t.Errorf("under --seal the probe read %d credential files", n)
	}
	for _, bad := range []string{"POLICY-WRITTEN", "CONFIG-WRITTEN"} {
		if strings.Contains(got, bad) {
			t.Errorf("under --seal: %s", bad)
		}
	}
	if !strings.Contains(got, "ordinary") || !strings.Contains(got, "notes-written") {
		t.Errorf("under --seal an ordinary file of HOME is not usable: %q", strings.ReplaceAll(got, canary, "<canary>"))
	}

	// The same seal asked for by the policy (a profile's seal: on).
	sealPol := filepath.Join(filepath.Dir(exe), "seal.yaml")
	os.WriteFile(sealPol, []byte("version: 1\nprofiles:\n  agent: {seal: on}\n"), 0o644)
	os.WriteFile(filepath.Join(home, ".config/envsieve/policy.yaml"), []byte("version: 1\n"), 0o600)
	if got := run("--policy", sealPol, "--profile", "agent"); strings.Contains(got, canary) || strings.Contains(got, "POLICY-WRITTEN") {
		t.Errorf("a profile's seal: on did not seal the tree")
	}

	// A nested envsieve inside the tree asks for a stored secret: the
	// headline attack. A real store first, made as the user.
	for _, f := range []string{".config/envsieve/secrets.age", ".local/share/envsieve/store.key", ".local/share/envsieve/redact.key"} {
		os.Remove(filepath.Join(home, f))
	}
	stored := "stored-twilio-" + strings.Repeat("9c", 6)
	set := exec.Command(exe, "secrets", "set", "TWILIO_AUTH_TOKEN")
	set.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
	set.Stdin = strings.NewReader(stored)
	set.SysProcAttr = asUnprivileged()
	if out, err := set.CombinedOutput(); err != nil {
		t.Fatalf("secrets set: %v\n%s", err, out)
	}
	pol := filepath.Join(filepath.Dir(exe), "store.yaml")
	os.WriteFile(pol, []byte("version: 1\nredact: {enabled: false, entropy: false}\nsecrets:\n  TWILIO_AUTH_TOKEN: {from: store}\n"), 0o644)
	nested := func(args ...string) string {
		inner := exe + " run --no-shim --policy " + pol + " --secret TWILIO_AUTH_TOKEN -- printenv TWILIO_AUTH_TOKEN"
		cmd := exec.Command(exe, append(append([]string{"run", "--no-shim"}, args...), "--", "/bin/sh", "-c", inner+"; true")...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	if out := nested(); !strings.Contains(out, stored) {
		t.Fatalf("control: a nested envsieve should read the store without the seal: %q", out)
	}
	if out := nested("--seal"); strings.Contains(out, stored) {
		t.Errorf("under --seal a nested envsieve delivered a stored secret")
	}
}
