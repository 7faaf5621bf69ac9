//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestDaemonAgentLogin: a command of a sealed daemon session of an agent's
// profile, as an unprivileged user, gets the agent's view as `envsieve
// run` does: it reads a fake of the agent's login where the agent reads
// it, never the real file (at its real path, or anywhere in the state
// dir); what it makes at the view's top level moves into the state dir
// when the command ends, and the view goes.
func TestDaemonAgentLogin(t *testing.T) {
	t.Parallel()
	for _, ag := range agentLogins {
		if ag.name != "" {
			continue
		}
		t.Run(ag.profile, func(t *testing.T) {
			exe, home := unprivilegedInstall(t)
			tag := strings.ToUpper(ag.profile[:1]) + ag.profile[1:2]
			reals := []string{"acc1" + strings.Repeat(tag+"D1", 20), "ref1" + strings.Repeat(tag+"D2", 20), "sig1" + strings.Repeat(tag+"D3", 20)}
			mask := func(s string) string {
				for _, r := range reals {
					s = strings.ReplaceAll(s, r, "<REAL>")
				}
				return s
			}
			realFile := filepath.Join(home, ag.rel)
			stateDir := filepath.Dir(realFile)
			writeOwned(t, realFile, ag.file(reals))
			pol := filepath.Join(home, "p.yaml")
			writeOwned(t, pol, "version: 1\nredact: {enabled: false, entropy: false}\n") // what the command read shows as it is
			sock := filepath.Join(home, "d.sock")
			env := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "ENVSIEVE_SHIM=" + shimtest.Lib(t)}
			dErr := startDaemonAs(t, exe, sock, pol, home, env)
			sd := `"$HOME/` + filepath.Dir(ag.rel) + `"`
			script := `d=$(dirname ` + ag.agentPath + `)
echo "real: $(cat "$HOME/` + ag.rel + `" 2>&1)"
echo "all: $(cat ` + sd + `/* ` + sd + `/.[!.]* 2>&1)"
echo "agent: $(cat ` + ag.agentPath + ` 2>&1)"
echo x > "$d/made-in-daemon" && echo made`
			c := exec.Command(exe, "client", "run", "--socket", sock, "--profile", ag.profile, "-c", script)
			c.Env = env
			c.Dir = home
			c.SysProcAttr = asUnprivileged()
			out, err := c.CombinedOutput()
			got := string(out)
			if err != nil {
				t.Fatalf("client run: %v\n%s\ndaemon: %s", err, mask(got), mask(dErr.String()))
			}
			if mask(got) != got {
				t.Errorf("the daemon's command read a real token:\n%s", mask(got))
			}
			var agentLine string
			for _, l := range strings.Split(got, "\n") {
				if v, ok := strings.CutPrefix(l, "agent: "); ok {
					agentLine = v
				}
			}
			if tok := ag.token([]byte(agentLine)); len(tok) != len(reals[0]) || tok == reals[0] {
				t.Errorf("the agent's file in the daemon's session does not hold a fake access token:\n%s", mask(got))
			}
			if !strings.HasSuffix(got, "made\n") {
				t.Errorf("the command could not write the agent's view:\n%s", mask(got))
			}
			// The session's view is synced back once the command ended.
			deadline := time.Now().Add(10 * time.Second)
			for {
				_, err := os.Stat(filepath.Join(stateDir, "made-in-daemon"))
				var left []string
				ents, _ := os.ReadDir(stateDir)
				for _, e := range ents {
					if strings.HasPrefix(e.Name(), ".envsieve") {
						left = append(left, e.Name())
					}
				}
				if err == nil && len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("after the command: made-in-daemon %v, left %v", err, left)
				}
				time.Sleep(50 * time.Millisecond)
			}
			if b, _ := os.ReadFile(realFile); string(b) != ag.file(reals) {
				t.Errorf("the user's login file changed: %s", mask(string(b)))
			}
		})
	}
}
