package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakeInstall: make install into a staging root puts envsieve,
// envsieve-daemon, the shim, man pages and completions where they belong,
// and the installed envsieve finds its shim and envsieve-daemon there;
// make uninstall removes every file it installed.
func TestMakeInstall(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is needed: %v", err)
	}
	root := filepath.Join("..", "..")
	dest := t.TempDir()
	mk := func(target string) {
		t.Helper()
		cmd := exec.Command("make", "-s", "-C", root, target, "DESTDIR="+dest, "PREFIX=/usr")
		cmd.Env = os.Environ() // make and go need the developer's own settings (GOCACHE, PATH)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("make %s: %v\n%s", target, err, out)
		}
	}
	mk("install")
	usr := filepath.Join(dest, "usr")
	for _, f := range []string{"bin/envsieve", "bin/envsieve-daemon", "lib/envsieve/libenvsieve.so",
		"share/man/man1/envsieve.1", "share/man/man1/envsieve-run.1",
		"share/bash-completion/completions/envsieve", "share/zsh/site-functions/_envsieve",
		"share/fish/vendor_completions.d/envsieve.fish"} {
		if fi, err := os.Stat(filepath.Join(usr, f)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	// Each page is titled by its command; daemon's and client's carry the
	// flags of envsieve-daemon's commands, and no path of this machine.
	man := filepath.Join(usr, "share", "man", "man1")
	for f, want := range map[string][]string{
		"envsieve-run.1":        {`.TH "ENVSIEVE-RUN" "1"`, `"envsieve manual"`},
		"envsieve-daemon.1":     {`.TH "ENVSIEVE-DAEMON"`, `\fB--socket\fP`, "$XDG_RUNTIME_DIR/envsieve.sock; without XDG_RUNTIME_DIR"},
		"envsieve-client-run.1": {`.TH "ENVSIEVE-CLIENT-RUN"`},
		"envsieve-init.1":       {`\fB--from-audit\fP`},
	} {
		page, err := os.ReadFile(filepath.Join(man, f))
		if err != nil {
			t.Errorf("man page %s: %v", f, err)
			continue
		}
		for _, w := range want {
			if !strings.Contains(string(page), w) {
				t.Errorf("man page %s lacks %q", f, w)
			}
		}
	}
	exe := filepath.Join(usr, "bin", "envsieve")
	out, err := exec.Command(exe, "explain", "--", "/bin/true").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "shim:    loads") {
		t.Errorf("the installed envsieve does not find its shim: %v\n%s", err, out)
	}
	out, err = exec.Command(exe, "client", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "client speaks to 'envsieve daemon'") {
		t.Errorf("the installed envsieve does not find envsieve-daemon: %v\n%s", err, out)
	}
	mk("uninstall")
	var left []string
	filepath.Walk(dest, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Errorf("make uninstall left %q", left)
	}
}
