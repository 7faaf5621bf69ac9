//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/seal"
)

// verifyReport is what `envsieve verify --json` prints, and its exit status.
type verifyReport struct {
	Leaks    map[string][]string `json:"leaks"`
	Leaked   bool                `json:"leaked"`
	SealHint string              `json:"seal_hint"`
	// LoginFakes are where the probe found fakes of the canary logins.
	LoginFakes []string `json:"login_fakes"`
	// Logins says whether the tree's logins worked against verify's
	// stand-in.
	Logins string `json:"logins"`
	status int
}

// TestVerifyMatrix is the leak matrix of `envsieve verify`, channel by
// channel, as an unprivileged user (nobody when the tests run as root), with
// and without the shim and a rule, sealed by either mechanism or not.
// Unsealed, no canary reaches the child's environment and the launcher's
// own environ is closed, but the stand-in agent's environ, the credential
// files, the store and the policy are open to the tree: verify exits 1.
// Sealed, nothing leaks and verify exits 0. Either way an envsieve nested
// in the tree gets nothing (package nest). No rule's grant leaks through
// the shim's socket or a program the tree named after a rule's, either way.
func TestVerifyMatrix(t *testing.T) {
	exe, home := unprivilegedCopy(t, "envsieve")
	dir := filepath.Dir(exe)
	noNS := filepath.Join(dir, "nouserns")
	copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
	lib := shimtest.Lib(t)
	rules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rules, []byte("version: 1\nrules:\n  - match: {command: gh}\n    allow: [GITHUB_TOKEN]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// docs/agents.md's old recipe: a catch-all rule that only denies.
	catchAll := filepath.Join(dir, "catchall.yaml")
	if err := os.WriteFile(catchAll, []byte("version: 1\nrules:\n  - match: {command: gh}\n    allow: [GITHUB_TOKEN]\n"+
		"  - match: {command: \"*\"}\n    deny: [ANTHROPIC_API_KEY]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// An install with envsieve-daemon beside envsieve: a sealed launch
	// runs a broker, and shows the tree fakes of the canary logins.
	withBroker, brokerHome := unprivilegedInstall(t)
	copyFile(t, noNS, filepath.Join(filepath.Dir(withBroker), "nouserns"))
	audit := filepath.Join(dir, "audit.jsonl")
	verify := func(t *testing.T, wrap, withShim, broker bool, args ...string) verifyReport {
		exe, home, noNS := exe, home, noNS
		if broker {
			exe, home, noNS = withBroker, brokerHome, filepath.Join(filepath.Dir(withBroker), "nouserns")
		}
		argv := append([]string{exe, "verify", "--json"}, args...)
		if wrap {
			argv = append([]string{noNS}, argv...)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
		if withShim {
			cmd.Env = append(cmd.Env, "ENVSIEVE_SHIM="+lib, "ENVSIEVE_AUDIT="+audit)
			os.WriteFile(audit, nil, 0o666)
			os.Chmod(audit, 0o666)
		}
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		out, err := cmd.Output()
		var r verifyReport
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			r.status = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("verify %v: %v\n%s", args, err, out)
		}
		return r
	}
	var files, logins []string
	for _, f := range seal.CredentialFiles() {
		if _, ok := loginCanaries[f]; ok {
			logins = append(logins, "~/"+f)
		} else {
			files = append(files, "~/"+f)
		}
	}
	open := map[string][]string{
		chFiles:  files,
		chLogins: logins,
		chStore:  {"~/.local/share/envsieve/redact.key", "~/.local/share/envsieve/store.key", storedName},
		chPolicy: {"a new file in envsieve", "policy.yaml"},
	}
	withRules := map[string][]string{chRules: {"bash", "cat", "env", "git", "node", "python3", "sh"}}
	for k, v := range open {
		withRules[k] = v
	}
	withAgent := map[string][]string{"/proc/*/environ": canaryNames}
	for k, v := range open {
		withAgent[k] = v
	}
	// Where the tree finds fakes of the canary logins, sealed with a
	// broker: at the real paths (namespaces) or only where the tools'
	// variables name them (Landlock masks the paths), and always through
	// git's credential helper.
	varFakes := []string{"$AWS_SHARED_CREDENTIALS_FILE", "$GH_CONFIG_DIR", "$NPM_CONFIG_USERCONFIG", "git credential fill"}
	nsFakes := append(slices.Clone(logins), varFakes...)
	for _, tc := range []struct {
		name                   string
		wrap, withShim, broker bool
		args                   []string
		want                   map[string][]string
		fakes                  []string
		logins                 string // the start of the logins line
	}{
		{"unsealed", false, false, false, nil, withAgent, nil, "logins: not tried"},
		{"isolated", false, false, false, []string{"--isolate"}, open, nil, "logins: not tried"},
		{"sealed by namespaces", false, false, false, []string{"--seal"}, nil, nil, "logins: not tried"},
		{"sealed by Landlock", true, false, false, []string{"--seal"}, nil, nil, "logins: not tried"},
		{"a built-in agent profile", false, false, false, []string{"--profile", "claude"}, nil, nil, "logins: not tried"},
		{"a built-in agent profile, sealed by Landlock", true, false, false, []string{"--profile", "codex"}, nil, nil, "logins: not tried"},
		// With grants on, the tree is in a scope that cannot read the
		// agent's environ; the rest stays open.
		{"rule and shim, unsealed", false, true, false, []string{"--policy", rules}, open, nil, "logins: not tried"},
		{"rule and shim, sealed by namespaces", false, true, false, []string{"--policy", rules, "--seal"}, nil, nil, "logins: not tried"},
		{"rule and shim, sealed by Landlock", true, true, false, []string{"--policy", rules, "--seal"}, nil, nil, "logins: not tried"},
		// The programs a catch-all matches are the agent's own shell and
		// every tool: unsealed they read everything, sealed nothing.
		{"catch-all rule, unsealed", false, true, false, []string{"--policy", catchAll}, withRules, nil, "logins: not tried"},
		{"catch-all rule, sealed by namespaces", false, true, false, []string{"--policy", catchAll, "--seal"}, nil, nil, "logins: not tried"},
		{"catch-all rule, sealed by Landlock", true, true, false, []string{"--policy", catchAll, "--seal"}, nil, nil, "logins: not tried"},
		// With a broker the sealed tree sees the logins as fakes, and no
		// real value; unsealed it reads the real files.
		{"broker, unsealed", false, false, true, nil, withAgent, nil, "logins: do not work"},
		{"broker, sealed by namespaces", false, false, true, []string{"--seal"}, nil, nsFakes, "logins: work"},
		{"broker, sealed by Landlock", true, false, true, []string{"--seal"}, nil, varFakes, "logins: work"},
		{"broker, catch-all rule, sealed by namespaces", false, true, true, []string{"--policy", catchAll, "--seal"}, nil, nsFakes, "logins: work"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := verify(t, tc.wrap, tc.withShim, tc.broker, tc.args...)
			got := slices.Clone(r.LoginFakes)
			slices.Sort(got)
			want := slices.Clone(tc.fakes)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("the tree saw fakes of the logins at %v, want %v", got, want)
			}
			if !strings.HasPrefix(r.Logins, tc.logins) {
				t.Errorf("%q, want %q...", r.Logins, tc.logins)
			}
			// Both clients, where the tree has them: git through its
			// credential helper, and an AWS request curl signed.
			if _, err := exec.LookPath("curl"); err == nil && tc.logins == "logins: work" &&
				(!strings.Contains(r.Logins, "git over https") || !strings.Contains(r.Logins, "an AWS request")) {
				t.Errorf("%q: a client did not work", r.Logins)
			}
			for _, ch := range probeChannels {
				got := slices.Clone(r.Leaks[ch])
				want := slices.Clone(tc.want[ch])
				slices.Sort(got)
				slices.Sort(want)
				if !slices.Equal(got, want) {
					t.Errorf("%s leaked %v, want %v", ch, got, want)
				}
			}
			if tc.withShim {
				// The attacks reached the launcher, which refused them. (The
				// link to the probe resolves to envsieve, which no rule names.)
				log, err := os.ReadFile(audit)
				if err != nil {
					t.Fatal(err)
				}
				for _, p := range []string{"/work/socket/gh", "/work/copy/gh"} {
					if !regexp.MustCompile(`"msg":"no_grant".*"path":"[^"]*` + p + `"`).Match(log) {
						t.Errorf("the audit log has no no_grant for %s:\n%s", p, log)
					}
				}
			}
			// An unsealed launch that leaks what the seal closes says so,
			// and how to turn the seal on; a sealed one has no such hint.
			if want := len(tc.want) > 0; (r.SealHint != "") != want || (want && !strings.Contains(r.SealHint, "--seal")) {
				t.Errorf("seal hint %q, leaked %v", r.SealHint, want)
			}
			if want := len(tc.want) > 0; r.Leaked != want || r.status != map[bool]int{true: 1, false: 0}[want] {
				t.Errorf("leaked %v, exit %d; want leaked %v", r.Leaked, r.status, want)
			}
		})
	}
}

// TestProbeDetects is the control of TestVerifyMatrix: run outside envsieve
// (the canaries in its own and its parent's environment, a stand-in
// launcher of wire version 1 at ENVSIEVE_SHIM_SOCK that answers an exec
// request with the value, as version 1 did), the probe finds a leak on every
// channel, so a channel that TestVerifyMatrix finds closed is closed.
func TestProbeDetects(t *testing.T) {
	exe := binary(t, "envsieve")
	t.Setenv("HOME", t.TempDir())
	src, name, err := verifyPolicy(cli.NewUI(io.Discard, io.Discard, false), "")
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy.Parse(name, src)
	if err != nil {
		t.Fatal(err)
	}
	canaries, err := newCanaries()
	if err != nil {
		t.Fatal(err)
	}
	w, err := newWorld(src, p, canaries)
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(w.dir)
	defer w.finishStandIn()
	sock := filepath.Join(t.TempDir(), "v1.sock")
	l, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.AcceptUnix()
			if err != nil {
				return
			}
			buf := make([]byte, 4096)
			if n, _ := c.Read(buf); n > 2 && buf[0] == 1 && buf[1] == 'X' {
				c.Write([]byte("\x01R+" + w.in.Canaries["GITHUB_TOKEN"] + "\x00"))
			}
			c.Close()
		}
	}()
	// Outside envsieve a program a catch-all rule would match reads
	// every file.
	w.in.Rules = []string{"*"}
	in, err := json.Marshal(w.in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", `"$@"; exit $?`, "agent", exe, probeArg)
	cmd.Env = append(slices.Clone(w.env), "ENVSIEVE_SHIM_SOCK="+sock)
	// The tools' variables and git's store helper name the real files
	// here: every place the login files channel reads finds a real value.
	home := filepath.Dir(filepath.Dir(w.in.ConfigDir))
	cmd.Env = append(cmd.Env, "NPM_CONFIG_USERCONFIG="+filepath.Join(home, ".npmrc"),
		"GH_CONFIG_DIR="+filepath.Join(home, ".config/gh"), "AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(home, ".aws/credentials"),
		"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=credential.helper", "GIT_CONFIG_VALUE_0=store")
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	var found map[string][]string
	if err := json.Unmarshal(out, &found); err != nil {
		t.Fatalf("probe report: %v\n%s", err, out)
	}
	for _, ch := range probeChannels {
		if len(found[ch]) == 0 {
			t.Errorf("the probe found no leak on %s, which is open here", ch)
		}
	}
	var logins []string
	for rel := range loginCanaries {
		logins = append(logins, "~/"+rel)
	}
	if _, err := exec.LookPath("git"); err == nil {
		logins = append(logins, "git credential fill")
	}
	logins = append(logins, "$NPM_CONFIG_USERCONFIG", "$GH_CONFIG_DIR", "$AWS_SHARED_CREDENTIALS_FILE")
	slices.Sort(logins)
	if got := found[chLogins]; !slices.Equal(got, logins) {
		t.Errorf("login files: found %v, want %v", got, logins)
	}
	if len(found[loginViews]) > 0 {
		t.Errorf("the real files were taken for fakes: %v", found[loginViews])
	}
}

func TestSealHint(t *testing.T) {
	leaks := map[string][]string{chFiles: {"~/.aws/credentials", "~/.netrc"}, "environ": {"GITHUB_TOKEN"}}
	envOnly := map[string][]string{"environ": {"GITHUB_TOKEN"}}
	for _, tc := range []struct {
		name   string
		found  map[string][]string
		sealed bool
		o      verifyOptions
		want   []string // parts of the hint; nil for none
	}{
		{"unsealed, files leak", leaks, false, verifyOptions{}, []string{"2 of these leaks (credential files)", "run with --seal", "'envsieve verify --seal'"}},
		{"with a profile", leaks, false, verifyOptions{profile: "mine"}, []string{"'envsieve verify --profile mine --seal'", "seal: on"}},
		{"sealed already", leaks, true, verifyOptions{seal: true}, nil},
		{"no channel the seal closes", envOnly, false, verifyOptions{}, nil},
		{"nothing leaked", nil, false, verifyOptions{}, nil},
	} {
		got := sealHint(probeChannels, tc.found, tc.sealed, &tc.o)
		if (got == "") != (tc.want == nil) {
			t.Errorf("%s: hint %q", tc.name, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: hint %q lacks %q", tc.name, got, w)
			}
		}
	}
}

func TestLoginsWork(t *testing.T) {
	git, aws := loginCanaryHost("git"), awsCanaryHost
	both := []string{"aws", "git"}
	for _, tc := range []struct {
		name  string
		seen  []standInSeen
		tried []string
		why   error
		want  []string
	}{
		{"the real values came", []standInSeen{{git, "none"}, {git, "real"}, {aws, "real"}}, both, nil, []string{"logins: work (git over https", "; an AWS request"}},
		{"git only", []standInSeen{{git, "none"}, {git, "real"}}, []string{"git"}, nil, []string{"logins: work (git over https", "aws not tried (no curl"}},
		{"the fakes came", []standInSeen{{git, "none"}, {git, "other"}, {aws, "other"}}, both, nil,
			[]string{"logins: do not work (git: the stand-in got a credential that is not the real one; aws: the stand-in got a credential"}},
		{"aws not re-signed", []standInSeen{{git, "real"}, {aws, "other"}}, both, nil, []string{"logins: do not work (aws: the stand-in got a credential"}},
		{"no login came", []standInSeen{{git, "none"}}, []string{"git"}, nil, []string{"logins: do not work (git: the stand-in got no login"}},
		{"the real password, to another host", []standInSeen{{"other.invalid", "real"}}, []string{"git"}, nil, []string{"logins: do not work (git: no request"}},
		{"nothing tried", nil, nil, nil, []string{"logins: not tried (git not tried (no git in the tree); aws not tried"}},
		{"no stand-in", nil, both, errors.New("envsieve-daemon is not installed"), []string{"logins: not tried (envsieve-daemon"}},
	} {
		got := loginsWork(tc.seen, tc.tried, tc.why)
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("%s: %q, want %q", tc.name, got, w)
			}
		}
	}
}
