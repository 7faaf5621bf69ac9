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

// TestNestedLoginFiles: an agent runs `envsieve sh -c` per tool call inside
// a sealed `envsieve run` whose HOME holds ~/.git-credentials (an
// unprivileged user; namespaces and Landlock). The inner sealed launch
// sees what the outer seal shows (a fake, or a masked file) and fakes
// nothing again: its debug output says so, and no second broker starts
// for the file. git over https in the inner tree still clones through the
// outer broker: the stand-in gets the real password, and nothing the trees
// print holds it. An outer launch that is not sealed shows the real file:
// the inner sealed launch fakes it as at the top level.
func TestNestedLoginFiles(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		landlock, outer, shim bool // outer: the outer launch is sealed
	}{
		{"namespaces", false, true, false},
		// The shim: a program the nested launch starts gets what its
		// first one got (the outer broker's variables are no grant).
		{"namespaces, shim", false, true, true},
		{"landlock", true, true, false},
		// Not "landlock, shim": the nested launcher cannot make its
		// shim's socket directory in /tmp under an outer Landlock seal
		// (a limit of its own, not of the login files).
		{"outer not sealed", false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) { testNestedLoginFiles(t, tc.landlock, tc.outer, tc.shim) })
	}
}

func testNestedLoginFiles(t *testing.T, landlock, outerSealed, shim bool) {
	exe, home := unprivilegedInstall(t)
	bin := filepath.Dir(exe)
	real := "Pw1-" + strings.Repeat("q7Rk", 6)
	git := newGitStandIn(t, real)
	write := func(rel, body string) {
		p := filepath.Join(home, rel)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		if os.Getuid() == 0 {
			os.Chown(p, 65534, 65534)
		}
	}
	write(".git-credentials", "https://alice:"+real+"@"+git.host+"\n")
	write(".gitconfig", "[user]\n\tname = t\n\temail = t@example.com\n[credential]\n\thelper = store\n")
	write("company-ca.pem", string(git.caPEM))
	work := filepath.Join(home, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		os.Chown(work, 65534, 65534)
	}
	// The agent's tool call: `envsieve sh -c`, debug on from the tree's
	// own shell (the outer policy need not pass ENVSIEVE_DEBUG).
	inner := `echo "file: $(cat "$HOME/.git-credentials" 2>&1)"; cd "$HOME/work" && git clone -q ` + git.url + `/remote.git repo && echo inner-clone-ok`
	script := `envsieve explain --seal -- true | grep "login: "; ENVSIEVE_DEBUG=1 envsieve sh -c '` + inner + `'; echo "rc=$?"`
	if shim {
		script = `ENVSIEVE_SHIM=` + shimtest.Lib(t) + ` ` + script
	}
	var wrap []string
	if landlock {
		noNS := filepath.Join(bin, "nouserns")
		copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		wrap = []string{noNS}
	}
	argv := append(append([]string{}, wrap...), exe, "run")
	if outerSealed {
		argv = append(argv, "--seal")
	}
	argv = append(argv, "--", "/bin/sh", "-c", script)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "HOME=" + home,
		"GIT_SSL_CAINFO=" + filepath.Join(home, "company-ca.pem")}
	cmd.Dir = work
	cmd.SysProcAttr = asUnprivileged()
	out, err := cmd.CombinedOutput()
	got := strings.ReplaceAll(string(out), real, "<REAL>")
	if err != nil {
		t.Fatalf("envsieve run: %v\n%s", err, got)
	}
	if strings.Contains(string(out), real) {
		t.Errorf("the real password is in what the trees printed:\n%s", got)
	}
	if !strings.Contains(got, "inner-clone-ok") || !strings.Contains(got, "rc=0") {
		t.Errorf("git over https in the nested tree did not clone:\n%s", got)
	}
	pws := git.passwords()
	if len(pws) == 0 {
		t.Errorf("the stand-in got no credential")
	}
	for _, pw := range pws {
		if pw != real {
			t.Errorf("the stand-in got a password that is not the real one (%d bytes)", len(pw))
		}
	}
	// Not masked again: the nested tree reads the outer fake where the
	// outer seal shows one (namespaces), for git, gh and npm to use.
	if outerSealed && !landlock && !strings.Contains(got, "file: https://alice:") {
		t.Errorf("the nested tree does not read the outer seal's fake at ~/.git-credentials:\n%s", got)
	}
	cred := filepath.Join(home, ".git-credentials")
	faked := strings.Contains(got, "login: "+cred+" is a fake in the sealed tree")
	switch {
	case outerSealed && faked:
		t.Errorf("the nested sealed launch faked the outer seal's view of %s again (and started a broker for it):\n%s", cred, got)
	case outerSealed && !strings.Contains(got, "login: "+cred+" passes as the outer seal shows it"):
		t.Errorf("the nested launch's debug output does not say it passes the outer seal's view:\n%s", got)
	case outerSealed && !landlock && !strings.Contains(got, "login:   "+cred+" passed (the outer seal's fake)"):
		t.Errorf("explain in the nested tree does not say the file passes as the outer fake:\n%s", got)
	case outerSealed && landlock && !strings.Contains(got, "login:   "+cred+" masked (the outer seal masks it)"):
		t.Errorf("explain in the nested tree does not say the outer seal masks the file:\n%s", got)
	case !outerSealed && !faked:
		t.Errorf("under an unsealed outer launch, the nested sealed launch should fake the real file:\n%s", got)
	}
	if testing.Verbose() {
		t.Logf("%s", got)
	}
}
