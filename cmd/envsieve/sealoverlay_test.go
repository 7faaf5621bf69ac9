//go:build linux

package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSealOverlay checks the C init's overlay of HOME (init.c): HOME is
// one read-only overlay in the tree (unless the init is built per entry,
// ENVSIEVE_TEST_INIT_PER_ENTRY=1, its fallback), and masks the layer holds
// by name stay hidden while the user works outside: a masked file missing
// at the start and made later (~/.netrc), a masked directory's parent
// missing at the start and made later with the file in it (~/.kube/config),
// and a file made later in a masked directory that exists (~/.gnupg). The
// control (unsealed) reads all three. HOME lies on the disk (/var/tmp), as
// a user's does.
func TestSealOverlay(t *testing.T) {
	t.Parallel()
	s := newSealedLauncher(t, false, true)
	top, err := os.MkdirTemp("/var/tmp", "envsieve-overlay-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	os.Chmod(top, 0o755)
	s.home = filepath.Join(top, "home")
	os.Mkdir(s.home, 0o700)
	s.env = append(s.env, "HOME="+s.home)
	perEntry := os.Getenv("ENVSIEVE_TEST_INIT_PER_ENTRY") == "1"
	for _, sealed := range []bool{true, false} {
		os.RemoveAll(s.home)
		os.Mkdir(s.home, 0o700)
		s.write(map[string]string{".gnupg/pubring.kbx": "old\n", "notes.txt": "ordinary\n", "proj/.keep": ""})
		work := filepath.Join(s.home, "proj")
		stop := filepath.Join(work, "stop")
		args := []string{"run", "--no-shim"}
		if sealed {
			args = append(args, "--seal")
		}
		poll := `home=$(awk -v h="$HOME" '$5 == h {print $9}' /proc/self/mountinfo | tail -n 1); echo "home-fs=$home"; echo ready; ` +
			`while [ ! -e "$0" ]; do cat "$HOME/.netrc" "$HOME/.kube/config" "$HOME"/.gnupg/* "$HOME/notes.txt" 2>/dev/null; sleep 0.02; done; echo done`
		cmd := s.command(work, append(args, "--", "/bin/sh", "-c", poll, stop)...)
		var errOut strings.Builder
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := bufio.NewReader(stdout)
		var seen strings.Builder
		for !strings.Contains(seen.String(), "ready\n") {
			line, err := r.ReadString('\n')
			seen.WriteString(line)
			if err != nil {
				cmd.Wait()
				t.Fatalf("the tree did not start:\n%s\n%s", seen.String(), errOut.String())
			}
		}
		for _, step := range []string{
			`printf 'overlay-canary-1\n' > "$HOME/.netrc"`,
			`mkdir "$HOME/.kube" && printf 'overlay-canary-2\n' > "$HOME/.kube/config"`,
			`printf 'overlay-canary-3\n' > "$HOME/.gnupg/private-keys"`,
		} {
			c := exec.Command("/bin/sh", "-c", step)
			c.Env = []string{"HOME=" + s.home, "PATH=/usr/bin:/bin"}
			c.SysProcAttr = asUnprivileged()
			if b, err := c.CombinedOutput(); err != nil {
				t.Fatalf("outside the tree, %s: %v\n%s", step, err, b)
			}
			time.Sleep(150 * time.Millisecond)
		}
		if err := os.WriteFile(stop, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		rest, _ := r.ReadString(0)
		seen.WriteString(rest)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the polling tree: %v\n%s", err, errOut.String())
		}
		got := seen.String()
		if !strings.Contains(got, "ordinary") {
			t.Errorf("sealed %v: the tree does not read an ordinary file of HOME:\n%s", sealed, got)
		}
		for _, canary := range []string{"overlay-canary-1", "overlay-canary-2", "overlay-canary-3"} {
			if sealed && strings.Contains(got, canary) {
				t.Errorf("sealed, the running tree read %s, made outside after the start:\n%s", canary, got)
			}
			if !sealed && !strings.Contains(got, canary) {
				t.Errorf("control: unsealed, the tree should read %s:\n%s", canary, got)
			}
		}
		if !sealed {
			continue
		}
		want := "home-fs=overlay\n"
		if perEntry {
			want = "home-fs=tmpfs\n" // HOME's copy (freeze)
		}
		if !strings.Contains(got, want) {
			t.Errorf("sealed, HOME in the tree is not %q:\n%s", want, got)
		}
	}
}

// TestSealOverlayLinkedMask: a masked path reached through a symbolic link
// beneath HOME (~/.aws linked to ~/dotfiles/aws, as a dotfiles manager
// makes it) is one the overlay cannot hold as a copy would (the user may
// point the link elsewhere later), so the C init seals per entry: HOME is
// its tmpfs copy, and the credentials are masked by either path.
func TestSealOverlayLinkedMask(t *testing.T) {
	t.Parallel()
	s := newSealedLauncher(t, false, true)
	canary := "linked-canary-" + strings.Repeat("5e", 4)
	s.write(map[string]string{"dotfiles/aws/credentials": canary + "\n", "dotfiles/aws/config": "[default]\n", "proj/.keep": ""})
	if err := os.Symlink("dotfiles/aws", filepath.Join(s.home, ".aws")); err != nil {
		t.Fatal(err)
	}
	s.chown()
	probe := `awk -v h="$HOME" '$5 == h {print "home-fs=" $9}' /proc/self/mountinfo | tail -n 1; ` +
		`cat "$HOME/.aws/credentials" "$HOME/dotfiles/aws/credentials" "$HOME/.aws/config" 2>/dev/null; true`
	for _, sealed := range []bool{true, false} {
		args := []string{"run", "--no-shim"}
		if sealed {
			args = append(args, "--seal")
		}
		out, err := s.command(filepath.Join(s.home, "proj"), append(args, "--", "/bin/sh", "-c", probe)...).CombinedOutput()
		got := strings.ReplaceAll(string(out), canary, "<canary>")
		if err != nil {
			t.Fatalf("sealed %v: %v\n%s", sealed, err, got)
		}
		if !strings.Contains(got, "[default]") {
			t.Errorf("sealed %v: the tree does not read ~/.aws/config through the link:\n%s", sealed, got)
		}
		if sealed != !strings.Contains(string(out), canary) {
			t.Errorf("sealed %v: the tree read the credentials %v:\n%s", sealed, strings.Contains(string(out), canary), got)
		}
		if sealed && !strings.Contains(got, "home-fs=tmpfs\n") {
			t.Errorf("sealed, a mask through a link beneath HOME should be sealed per entry (HOME a tmpfs copy):\n%s", got)
		}
	}
}
