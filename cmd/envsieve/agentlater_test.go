//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestAgentLoginLater: an agent used with an API key has no login file in
// its state dir when the launch starts; the user then logs in from their
// own terminal during the session. A hostile command of the sealed
// `envsieve run --profile NAME`, run as an unprivileged user, reads the
// new file at its real path, where the agent reads it, and everything in
// the state dir, by both seal mechanisms: it finds nothing of it. The
// agent still writes its state (Claude Code's ~/.claude.json, which it
// rewrites by a temporary file and a rename, issue 25), and that persists.
func TestAgentLoginLater(t *testing.T) {
	for _, ag := range agentLogins {
		if ag.name != "" {
			continue
		}
		for _, mech := range []string{"namespaces", "c-init", "landlock"} {
			t.Run(ag.profile+"/"+mech, func(t *testing.T) { testAgentLoginLater(t, ag, mech, false) })
		}
		// --no-broker: no fake, the agent is not logged in in the tree,
		// and a login made outside during the session does not show either.
		for _, mech := range []string{"namespaces", "landlock"} {
			t.Run(ag.profile+"/"+mech+"/no-broker", func(t *testing.T) { testAgentLoginLater(t, ag, mech, true) })
		}
	}
}

func testAgentLoginLater(t *testing.T, ag agentLogin, mech string, noBroker bool) {
	exe, home := unprivilegedInstall(t)
	tag := strings.ToUpper(ag.profile[:1]) + ag.profile[1:2]
	reals := []string{"acc1" + strings.Repeat(tag+"L1", 20), "ref1" + strings.Repeat(tag+"L2", 20), "sig1" + strings.Repeat(tag+"L3", 20)}
	mask := func(s string) string {
		for _, r := range reals {
			s = strings.ReplaceAll(s, r, "<REAL>")
		}
		return s
	}
	realFile := filepath.Join(home, ag.rel)
	stateDir := filepath.Dir(realFile)
	writeOwned(t, filepath.Join(stateDir, "settings.json"), "{}")
	if ag.profile == "claude" {
		writeOwned(t, filepath.Join(home, ".claude.json"), `{"numStartups":1}`)
	}
	phases := phaseDir(t) // not under HOME, which the seal keeps read-only
	sd := `"$HOME/` + filepath.Dir(ag.rel) + `"`
	script := `d=$(dirname ` + ag.agentPath + `)
echo "before: $(cat "$HOME/` + ag.rel + `" ` + ag.agentPath + ` 2>&1)"
`
	if ag.profile == "claude" {
		// Claude Code keeps .claude.json in CLAUDE_CONFIG_DIR once set,
		// else in HOME; it replaces it by rename.
		script += `c="${CLAUDE_CONFIG_DIR:-$HOME}"
printf '{"numStartups":2}' > "$c/.claude.json.tmp" && mv "$c/.claude.json.tmp" "$c/.claude.json" && echo config-written
`
	}
	script += `touch ` + phases + `/one
while [ ! -e ` + phases + `/two ]; do sleep 0.05; done
echo "real: $(cat "$HOME/` + ag.rel + `" 2>&1)"
echo "agent: $(cat ` + ag.agentPath + ` 2>&1)"
echo "all: $(cat ` + sd + `/* ` + sd + `/.[!.]* "$d"/* "$d"/.[!.]* 2>&1)"
echo "list: $(ls -a ` + sd + ` "$d" 2>&1)"
echo ran
`
	argv := []string{exe, "run", "--profile", ag.profile, "--", "/bin/sh", "-c", script}
	if noBroker {
		argv = slices.Insert(argv, 4, "--no-broker")
	}
	if mech == "landlock" {
		noNS := filepath.Join(filepath.Dir(exe), "nouserns")
		copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		argv = append([]string{noNS}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "ENVSIEVE_DEBUG=1"}
	if mech == "c-init" {
		cmd.Env = append(cmd.Env, "ENVSIEVE_SHIM="+shimtest.Lib(t))
	}
	cmd.Dir = home
	cmd.SysProcAttr = asUnprivileged()
	got := runInPhases(t, cmd, phases, mask, func() {
		// The user logs in outside: the CLI writes its login file (by rename,
		// as Claude Code and Codex do).
		writeOwned(t, realFile+".new", ag.file(reals))
		if err := os.Rename(realFile+".new", realFile); err != nil {
			t.Fatal(err)
		}
	})
	if !strings.HasSuffix(got, "ran\n") {
		t.Fatalf("the tree did not run to its end:\n%s", mask(got))
	}
	if mask(got) != got {
		t.Errorf("the tree read the login made outside during the session:\n%s", mask(got))
	}
	if mech == "landlock" && !strings.Contains(got, "seal: landlock;") {
		t.Errorf("the tree was not sealed by Landlock:\n%s", mask(got))
	}
	if ag.profile == "claude" {
		if !strings.Contains(got, "\nconfig-written\n") {
			t.Errorf("the tree could not rewrite Claude Code's .claude.json:\n%s", mask(got))
		}
		if b, _ := os.ReadFile(filepath.Join(home, ".claude.json")); string(b) != `{"numStartups":2}` {
			t.Errorf("~/.claude.json after the launch: %q", b)
		}
	}
	if b, _ := os.ReadFile(realFile); string(b) != ag.file(reals) {
		t.Errorf("the user's login file changed: %s", mask(string(b)))
	}
	ents, _ := os.ReadDir(stateDir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".envsieve") {
			t.Errorf("the launch left %s in the state dir", e.Name())
		}
	}
}
