//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestDaemonAuditFailsClosed fills the disk under a daemon's audit log,
// before and during a session's command, as an unprivileged user: the
// client is told (the file named), and the command fails closed as
// `envsieve run` does (not started, or ended), or, under
// `audit: {on_error: warn}`, runs on with the failure said once on the
// client's stderr. The daemon does not only print it in its own log. The
// disk is a small tmpfs, mounted as root.
func TestDaemonAuditFailsClosed(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("mounts a small tmpfs: run as root (CI does)")
	}
	exe, home := unprivilegedInstall(t)
	dir := filepath.Dir(exe)
	work := filepath.Join(home, "work")
	if err := os.Mkdir(work, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(work, 0o777)
	sys := sysDir(t, dir, map[string]string{"gh": "#!/bin/sh\necho \"gh: ${#GITHUB_TOKEN}\"\n"})
	disk := filepath.Join(dir, "disk")
	if err := os.Mkdir(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount("tmpfs", disk, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, "size=64k,mode=1777"); err != nil {
		t.Fatalf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(disk, syscall.MNT_DETACH) })
	fill := filepath.Join(disk, "fill")
	fillDisk := func() {
		t.Helper()
		f, err := os.OpenFile(fill, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		for {
			if _, err := f.Write(buf); err != nil {
				break
			}
		}
		f.Close()
	}
	token := "tok-for-gh-only-" + strings.Repeat("c3", 6)
	env := []string{"PATH=" + sys + ":/usr/bin:/bin", "HOME=" + home, "ENVSIEVE_SHIM=" + shimtest.Lib(t)}
	socks := map[bool]string{}
	logs := map[bool]string{}
	for _, warn := range []bool{false, true} {
		name := map[bool]string{false: "fail", true: "warn"}[warn]
		logs[warn] = filepath.Join(disk, name+".jsonl")
		body := "version: 1\nredact: {enabled: false, entropy: false}\nrules:\n  - name: gh\n    match: {command: gh}\n    allow: [GITHUB_TOKEN]\n" +
			"audit: {path: " + logs[warn]
		if warn {
			body += ", on_error: warn"
		}
		pol := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(pol, []byte(body+"}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		socks[warn] = filepath.Join(home, name+".sock")
		startDaemonAs(t, exe, socks[warn], pol, home, env)
	}
	run := func(t *testing.T, warn bool, script string) (string, int) {
		t.Helper()
		c := exec.Command(exe, "client", "run", "--socket", socks[warn], "-c", script)
		c.Env = append(append([]string{}, env...), "GITHUB_TOKEN="+token)
		c.Dir = work
		c.SysProcAttr = asUnprivileged()
		var out strings.Builder
		c.Stdout, c.Stderr = &out, &out
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- c.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			c.Process.Kill()
			<-done
			t.Fatalf("the client did not end: the command went on\n%s", strings.ReplaceAll(out.String(), token, "<token>"))
		}
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return strings.ReplaceAll(out.String(), token, "<token>"), code
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(work, name))
		return err == nil
	}
	reset := func() {
		os.Remove(fill)
		for _, name := range []string{"started", "finished"} {
			os.Remove(filepath.Join(work, name))
		}
	}
	start := `touch "` + work + `/started"; gh; `

	t.Run("before the command, a full disk", func(t *testing.T) {
		reset()
		fillDisk()
		out, code := run(t, false, start)
		if code == 0 || !strings.Contains(out, logs[false]) || exists("started") {
			t.Errorf("exit %d, started %v; want a failure, the file named, and nothing started:\n%s", code, exists("started"), out)
		}
	})
	t.Run("before the command, a full disk, on_error: warn", func(t *testing.T) {
		reset()
		fillDisk()
		out, code := run(t, true, start)
		if code != 0 || !exists("started") || strings.Count(out, logs[true]) != 1 || !strings.Contains(out, "on_error: warn") {
			t.Errorf("exit %d, started %v; want 0, started, and the file named once:\n%s", code, exists("started"), out)
		}
	})
	// During: the command fills the disk itself, then runs gh again and
	// again (a grant event each), and would never end on its own.
	during := start + `dd if=/dev/zero of="` + fill + `" bs=4k 2>/dev/null; while :; do gh; done; touch "` + work + `/finished"`
	t.Run("during the command", func(t *testing.T) {
		reset()
		out, code := run(t, false, during)
		if code == 0 || !strings.Contains(out, logs[false]) || exists("finished") {
			t.Errorf("exit %d, finished %v; want a failure, the file named, and the command ended:\n%.2000s", code, exists("finished"), out)
		}
	})
	t.Run("during the command, on_error: warn", func(t *testing.T) {
		reset()
		out, code := run(t, true, start+`dd if=/dev/zero of="`+fill+`" bs=4k 2>/dev/null; i=0; while [ $i -lt 20 ]; do gh; i=$((i+1)); done; rm -f "`+fill+`"; touch "`+work+`/finished"`)
		if code != 0 || !exists("finished") || strings.Count(out, logs[true]) != 1 {
			t.Errorf("exit %d, finished %v; want 0, finished, and the file named once:\n%s", code, exists("finished"), out)
		}
	})
}
