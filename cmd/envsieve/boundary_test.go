//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// boundaryHome fills home with credential files holding canary and a
// user policy, owned by the unprivileged user, and returns the relative
// paths of the credential files.
func boundaryHome(t *testing.T, home, canary string) []string {
	t.Helper()
	files := []string{".aws/credentials", ".config/gh/hosts.yml", ".git-credentials", ".config/envsieve/secrets.age"}
	for _, f := range append(files, ".config/envsieve/policy.yaml") {
		p := filepath.Join(home, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		body := canary + "\n"
		if strings.HasSuffix(f, "policy.yaml") {
			body = "version: 1\n"
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if os.Getuid() == 0 {
		filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
	}
	return files
}

// TestRuleBoundary plays an agent (an unprivileged user) under a sealed
// launch whose policy has rules: docs/agents.md's old catch-all recipe (a
// rule for every command that only denies a key) and a rule that grants a
// token to gh. Before, every program a rule matched was started by the
// launcher outside the seal: the catch-all put the agent's whole shell
// there, and gh could read every credential file and rewrite the policy.
// Now a program started for a rule is inside the same seal, and a rule
// that only denies is applied in the calling process, with no start
// request at all. Both mechanisms; the control is the same probe unsealed.
func TestRuleBoundary(t *testing.T) {
	t.Run("namespaces", func(t *testing.T) { testRuleBoundary(t, false) })
	t.Run("landlock", func(t *testing.T) { testRuleBoundary(t, true) })
}

func testRuleBoundary(t *testing.T, landlock bool) {
	exe, home := unprivilegedCopy(t, "envsieve")
	dir := filepath.Dir(exe)
	canary := "boundary-canary-" + strings.Repeat("3e", 6)
	files := boundaryHome(t, home, canary)
	// gh, root-owned in a root-owned directory: a program a rule may
	// grant to. It says whether it got the token, then does what a
	// hostile alias of gh's would.
	probe := `cd "$HOME"; for f in ` + strings.Join(files, " ") + `; do cat "$f" 2>/dev/null; done; ` +
		`echo "mode: audit" >> .config/envsieve/policy.yaml 2>/dev/null && echo POLICY-WRITTEN-BY-$0`
	sys := sysDir(t, dir, map[string]string{"gh": "#!/bin/sh\necho \"gh: token-length=${#GITHUB_TOKEN}\"\n" + probe + "\n"})
	pol := writePolicy(t, dir, "version: 1\nredact: {enabled: false, entropy: false}\nrules:\n"+
		"  - name: gh\n    match: {command: gh}\n    allow: [GITHUB_TOKEN]\n"+
		"  - name: everything\n    match: {command: \"*\"}\n    deny: [ANTHROPIC_API_KEY]\n")
	var wrap []string
	if landlock {
		noNS := filepath.Join(dir, "nouserns")
		copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		wrap = []string{noNS}
	}
	token := "tok-for-gh-only-" + strings.Repeat("b7", 8)
	apiKey := "sk-ant-api03-" + strings.Repeat("Qw", 12)
	alog := filepath.Join(home, "audit.jsonl")
	run := func(seal bool, script string) string {
		t.Helper()
		args := append(append([]string{}, wrap...), exe, "run", "--policy", pol, "--audit", alog)
		if seal {
			args = append(args, "--seal")
		}
		args = append(args, "--", "bash", "-c", script)
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Env = []string{"PATH=" + sys + ":/usr/bin:/bin", "HOME=" + home, "GITHUB_TOKEN=" + token,
			"ANTHROPIC_API_KEY=" + apiKey, "ENVSIEVE_SHIM=" + shimtest.Lib(t), "ENVSIEVE_DEBUG=1"}
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		out, _ := cmd.CombinedOutput()
		os.WriteFile(filepath.Join(home, ".config/envsieve/policy.yaml"), []byte("version: 1\n"), 0o600)
		return strings.NewReplacer(canary, "<canary>", token, "<token>", apiKey, "<api-key>").Replace(string(out))
	}
	// The agent's shell runs a shell (matched by the catch-all) that
	// reads the files and writes the policy, then gh, then a shell that
	// prints the denied key.
	script := `sh -c '` + strings.ReplaceAll(probe, "'", `'\''`) + `'; gh; sh -c 'echo "api-key-length=${#ANTHROPIC_API_KEY}"'; ` +
		`python3 -c 'import subprocess; subprocess.run(["sh", "-c", "echo py-api-key-length=${#ANTHROPIC_API_KEY}"])'; ` +
		`node -e 'process.stdout.write(require("child_process").execFileSync("sh", ["-c", "echo node-api-key-length=${#ANTHROPIC_API_KEY}"]).toString())'`
	control := run(false, script)
	if !strings.Contains(control, "<canary>") || !strings.Contains(control, "POLICY-WRITTEN-BY-sh") {
		t.Fatalf("control: unsealed, the probe should read the files and write the policy:\n%s", control)
	}
	os.Remove(alog)
	got := run(true, script)
	if n := strings.Count(got, "<canary>"); n > 0 {
		t.Errorf("sealed: the programs the rules matched read %d credential files:\n%s", n, got)
	}
	for _, who := range []string{"sh", "gh"} {
		if strings.Contains(got, "POLICY-WRITTEN-BY-"+who) {
			t.Errorf("sealed: %s, matched by a rule, rewrote the policy:\n%s", who, got)
		}
	}
	if !strings.Contains(got, "gh: token-length="+strconv.Itoa(len(token))) {
		t.Errorf("sealed: gh did not get its grant:\n%s", got)
	}
	if !strings.Contains(got, "\napi-key-length=0") || !strings.Contains(got, "py-api-key-length=0") ||
		!strings.Contains(got, "node-api-key-length=0") || strings.Contains(got, "<api-key>") {
		t.Errorf("the catch-all's deny did not hold in the shell it matched:\n%s", got)
	}
	// The catch-all is applied in place: no start request for sh or bash
	// reached the launcher (no grant and no decline logged for them).
	log, _ := os.ReadFile(alog)
	for _, line := range strings.Split(string(log), "\n") {
		if (strings.Contains(line, `"msg":"grant"`) || strings.Contains(line, `"msg":"no_grant"`)) && strings.Contains(line, `/sh"`) {
			t.Errorf("a deny-only rule took a launcher hop: %s", line)
		}
	}
}

// TestGrantNotSteered plays an agent that cannot read gh's token but can
// set gh's environment: it points XDG_CONFIG_HOME at a config of its own
// (gh's http_unix_socket to a listener of its own), and HTTPS_PROXY and
// SSL_CERT_FILE at its own proxy and CA, then runs exactly the command a
// rule pins (`gh pr list`, args_exact). The granted gh starts with the
// launch's values of those keys, never the caller's; the caller's
// terminal keys and the keys the rule passes (pass:) still reach it.
func TestGrantNotSteered(t *testing.T) {
	exe, home := unprivilegedCopy(t, "envsieve")
	dir := filepath.Dir(exe)
	gh := "#!/bin/sh\necho \"gh: token-length=${#GITHUB_TOKEN} xdg=${XDG_CONFIG_HOME:-unset} proxy=${HTTPS_PROXY:-unset} cert=${SSL_CERT_FILE:-unset} gitcfg=${GIT_CONFIG_COUNT:-unset} term=${TERM:-unset} cols=${COLUMNS:-unset} mydir=${MYTOOL_DIR:-unset}\"\n"
	sys := sysDir(t, dir, map[string]string{"gh": gh})
	pol := writePolicy(t, dir, "version: 1\nredact: {enabled: false, entropy: false}\ngroups: [proxy, tls]\nrules:\n"+
		"  - name: gh-pr-list\n    match: {command: gh, args: [pr, list], args_exact: true}\n    allow: [GITHUB_TOKEN, MYTOOL_DIR]\n    pass: [MYTOOL_DIR]\n")
	token := "tok-for-gh-only-" + strings.Repeat("c4", 8)
	cmd := exec.Command(exe, "run", "--policy", pol, "--", "bash", "-c",
		`XDG_CONFIG_HOME=/tmp/evil HTTPS_PROXY=http://127.0.0.1:9 SSL_CERT_FILE=/tmp/evil.pem GIT_CONFIG_COUNT=1 TERM=caller-term COLUMNS=91 MYTOOL_DIR=/caller/dir gh pr list`)
	cmd.Env = []string{"PATH=" + sys + ":/usr/bin:/bin", "HOME=" + home, "GITHUB_TOKEN=" + token, "TERM=xterm",
		"HTTPS_PROXY=http://proxy.corp:3128", "MYTOOL_DIR=/launch/dir", "ENVSIEVE_SHIM=" + shimtest.Lib(t)}
	cmd.Dir = home
	cmd.SysProcAttr = asUnprivileged()
	out, _ := cmd.CombinedOutput()
	got := strings.ReplaceAll(string(out), token, "<token>")
	want := "gh: token-length=" + strconv.Itoa(len(token)) + " xdg=unset proxy=http://proxy.corp:3128 cert=unset gitcfg=unset term=caller-term cols=91 mydir=/caller/dir"
	if !strings.Contains(got, want) {
		t.Errorf("the granted gh's environment:\n got %s\nwant %s", strings.TrimSpace(got), want)
	}
}

// TestShSealed: `envsieve sh`, an agent's SHELL, seals by default. As an
// unprivileged user, a command through it cannot read a credential file
// or rewrite the policy; with --no-seal (the control) it can.
func TestShSealed(t *testing.T) {
	exe, home := unprivilegedCopy(t, "envsieve")
	canary := "sh-canary-" + strings.Repeat("5d", 6)
	boundaryHome(t, home, canary)
	probe := `cat "$HOME/.aws/credentials" "$HOME/.git-credentials" 2>/dev/null; echo "mode: audit" >> "$HOME/.config/envsieve/policy.yaml" 2>/dev/null && echo POLICY-WRITTEN; echo done`
	sh := func(args ...string) string {
		cmd := exec.Command(exe, append(append([]string{"sh"}, args...), "-c", probe)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "ENVSIEVE_SHIM=" + shimtest.Lib(t)}
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		out, err := cmd.CombinedOutput()
		os.WriteFile(filepath.Join(home, ".config/envsieve/policy.yaml"), []byte("version: 1\n"), 0o600)
		got := strings.ReplaceAll(string(out), canary, "<canary>")
		if err != nil || !strings.Contains(got, "done") {
			t.Fatalf("sh %v: %v\n%s", args, err, got)
		}
		return got
	}
	if got := sh("--no-seal"); !strings.Contains(got, "<canary>") || !strings.Contains(got, "POLICY-WRITTEN") {
		t.Fatalf("control: sh --no-seal should read the files and write the policy:\n%s", got)
	}
	if got := sh(); strings.Contains(got, "<canary>") || strings.Contains(got, "POLICY-WRITTEN") {
		t.Errorf("envsieve sh is not sealed by default:\n%s", got)
	}
}

// TestDaemonSealed: a command of a daemon session whose profile asks for
// the seal is sealed as one of `envsieve run` is (by Landlock, the daemon
// being its parent), and so is a program a rule grants to in it: as an
// unprivileged user, neither reads a credential file nor writes the
// policy. The control is a session of a profile without the seal.
func TestDaemonSealed(t *testing.T) {
	t.Parallel()
	exe, home := unprivilegedInstall(t)
	dir := filepath.Dir(exe)
	canary := "daemon-canary-" + strings.Repeat("6a", 6)
	files := boundaryHome(t, home, canary)
	probe := `cd "$HOME"; cat ` + strings.Join(files, " ") + ` 2>/dev/null; echo "mode: audit" >> .config/envsieve/policy.yaml 2>/dev/null && echo POLICY-WRITTEN-BY-$0; echo done`
	sys := sysDir(t, dir, map[string]string{"gh": "#!/bin/sh\necho \"gh: token-length=${#GITHUB_TOKEN}\"\n" + probe + "\n"})
	pol := writePolicy(t, dir, "version: 1\nredact: {enabled: false, entropy: false}\nprofiles:\n  sealed: {seal: on}\n  open: {}\n"+
		"rules:\n  - name: gh\n    match: {command: gh}\n    allow: [GITHUB_TOKEN]\n")
	token := "tok-daemon-seal-" + strings.Repeat("2f", 6)
	sock := filepath.Join(home, "d.sock")
	env := []string{"PATH=" + sys + ":/usr/bin:/bin", "HOME=" + home, "ENVSIEVE_SHIM=" + shimtest.Lib(t)}
	dErr := startDaemonAs(t, exe, sock, pol, home, env)
	run := func(profile string) string {
		t.Helper()
		c := exec.Command(exe, "client", "run", "--socket", sock, "--profile", profile, "-c", probe+"; gh")
		c.Env = append(append([]string{}, env...), "GITHUB_TOKEN="+token)
		c.Dir = home
		c.SysProcAttr = asUnprivileged()
		out, _ := c.CombinedOutput()
		os.WriteFile(filepath.Join(home, ".config/envsieve/policy.yaml"), []byte("version: 1\n"), 0o600)
		return strings.NewReplacer(canary, "<canary>", token, "<token>").Replace(string(out))
	}
	if got := run("open"); !strings.Contains(got, "<canary>") || !strings.Contains(got, "POLICY-WRITTEN") {
		t.Fatalf("control: an unsealed session's command should read the files and write the policy:\n%s\ndaemon: %s", got, dErr.String())
	}
	got := run("sealed")
	if strings.Contains(got, "<canary>") || strings.Contains(got, "POLICY-WRITTEN") {
		t.Errorf("a sealed session's command, or the gh a rule granted to in it, read a credential file or wrote the policy:\n%s", got)
	}
	if !strings.Contains(got, "gh: token-length="+strconv.Itoa(len(token))) {
		t.Errorf("gh did not get its grant in the sealed session:\n%s\ndaemon: %s", got, dErr.String())
	}
}

// TestDoctorSeal: doctor says what a sealed launch would do here, and,
// for a HOME the user cannot write (Nix, read-only containers), that what
// exists is sealed and nothing needs creating; the control is a writable
// HOME.
func TestDoctorSeal(t *testing.T) {
	exe, home := unprivilegedCopy(t, "envsieve")
	doctor := func() string {
		cmd := exec.Command(exe, "doctor")
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
		cmd.Dir = "/"
		cmd.SysProcAttr = asUnprivileged()
		out, _ := cmd.CombinedOutput()
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 1 && f[1] == "seal" {
				return line
			}
		}
		t.Fatalf("doctor has no seal check:\n%s", out)
		return ""
	}
	if got := doctor(); !strings.Contains(got, "a sealed launch here is sealed by") || strings.Contains(got, "not writable") {
		t.Errorf("writable HOME: %q", got)
	}
	if err := os.Chmod(home, 0o555); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(home, 0o700)
	if got := doctor(); !strings.Contains(got, "HOME is not writable: what exists is sealed") {
		t.Errorf("read-only HOME: %q", got)
	}
}
