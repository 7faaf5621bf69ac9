//go:build unix

package main

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// asUnprivileged returns the credential to run a child as: nobody when the
// tests run as root (as CI does), else the caller itself.
func asUnprivileged() *syscall.SysProcAttr {
	if os.Getuid() != 0 {
		return nil
	}
	return &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}

// unprivilegedCopy copies the test binary, under name, into a directory an
// unprivileged user can reach, and makes a home for that user.
func unprivilegedCopy(t *testing.T, name string) (exe, home string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "envsieve-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe = filepath.Join(dir, name)
	linkOrCopy(t, binary(t, name), exe)
	home = filepath.Join(dir, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		if err := os.Chown(home, 65534, 65534); err != nil {
			t.Fatal(err)
		}
	}
	return exe, home
}

// TestLauncherNotDumpable: a resident launcher (here, because it redacts) is
// non-dumpable, so its child, running as the same unprivileged user, cannot
// read the launcher's /proc/PID/environ, where the user's secrets are. The
// control shows that an ordinary parent's environ is readable by its child.
func TestLauncherNotDumpable(t *testing.T) {
	exe, home := unprivilegedCopy(t, "envsieve")
	probe := `cat /proc/$PPID/environ >/dev/null 2>&1 && echo readable || echo denied`
	env := []string{"PATH=/usr/bin:/bin", "HOME=" + home, "GITHUB_TOKEN=ghp_" + strings.Repeat("Zq9X", 9)}
	run := func(name string, argv ...string) string {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run("control", "/bin/sh", "-c", "/bin/sh -c '"+probe+"'"); got != "readable" {
		t.Fatalf("control: an ordinary parent's environ is %q to its child, want readable", got)
	}
	if got := run("envsieve", exe, "run", "--secret", "GITHUB_TOKEN", "--", "/bin/sh", "-c", probe); got != "denied" {
		t.Fatalf("the resident launcher's environ is %q to its child, want denied", got)
	}
}

// linkOrCopy puts the executable src at dst: a hard link where both lie on
// one filesystem (the test binary is tens of MB, and most tests of the
// tree install it), else a copy. Nothing writes to dst.
func linkOrCopy(t *testing.T, src, dst string) {
	t.Helper()
	if os.Link(src, dst) == nil {
		return
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
