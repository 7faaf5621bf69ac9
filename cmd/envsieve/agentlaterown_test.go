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

// TestAgentLoginLaterOwnDir: a user whose CLAUDE_CONFIG_DIR or CODEX_HOME
// names a directory of their own outside HOME, with no login in it at the
// start, logs in from their own terminal while a sealed agent runs: the
// tree finds the new login neither where the agent reads it nor at its
// real path, by both seal mechanisms, and what the agent writes in its
// view still reaches the directory.
func TestAgentLoginLaterOwnDir(t *testing.T) {
	for _, ag := range agentLogins {
		if ag.name != "" || ag.profile == "gemini" {
			continue // GEMINI_CLI_HOME names a home, not the state dir: TestAgentLoginOwnDirFaked
		}
		env := map[string]string{"claude": "CLAUDE_CONFIG_DIR", "codex": "CODEX_HOME"}[ag.profile]
		for _, mech := range []string{"namespaces", "landlock"} {
			t.Run(ag.profile+"/"+mech, func(t *testing.T) {
				exe, home := unprivilegedInstall(t)
				tag := strings.ToUpper(ag.profile[:1]) + ag.profile[1:2]
				reals := []string{"acc1" + strings.Repeat(tag+"O1", 20), "ref1" + strings.Repeat(tag+"O2", 20), "sig1" + strings.Repeat(tag+"O3", 20)}
				mask := func(s string) string {
					for _, r := range reals {
						s = strings.ReplaceAll(s, r, "<REAL>")
					}
					return s
				}
				parent, err := os.MkdirTemp("", "envsieve-own-")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { os.RemoveAll(parent) })
				os.Chmod(parent, 0o755)
				own := filepath.Join(parent, ag.profile)
				writeOwned(t, filepath.Join(own, "settings.json"), "{}")
				if err := os.Chown(own, 65534, 65534); err != nil {
					t.Fatal(err)
				}
				realFile := filepath.Join(own, filepath.Base(ag.rel))
				phases := phaseDir(t)
				script := `touch ` + phases + `/one
while [ ! -e ` + phases + `/two ]; do sleep 0.05; done
echo "real: $(cat "` + realFile + `" 2>&1)"
echo "agent: $(cat ` + ag.agentPath + ` 2>&1)"
echo "all: $(cat "` + own + `"/* "` + own + `"/.[!.]* 2>&1)"
echo new > "$(dirname ` + ag.agentPath + `)/new-entry"
echo ran
`
				argv := []string{exe, "run", "--profile", ag.profile, "--", "/bin/sh", "-c", script}
				if mech == "landlock" {
					noNS := filepath.Join(filepath.Dir(exe), "nouserns")
					copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
					argv = append([]string{noNS}, argv...)
				}
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, env + "=" + own}
				cmd.Dir = home
				cmd.SysProcAttr = asUnprivileged()
				got := runInPhases(t, cmd, phases, mask, func() {
					// The user logs in outside, by rename as the CLIs write it.
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
				if b, err := os.ReadFile(filepath.Join(own, "new-entry")); err != nil || string(b) != "new\n" {
					t.Errorf("the agent's new entry did not reach its state dir: %v\n%s", err, mask(got))
				}
			})
		}
	}
}
