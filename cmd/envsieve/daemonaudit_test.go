//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
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
	t.Parallel()
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
	// Told while the command runs, as `envsieve run` tells its user, not
	// only at its end: once the disk is full and grant events are lost (40
	// of them: the log's last page may hold a few more lines),
	// the command waits (up to 15 s) for the test to see the warning on
	// the client's stderr, and the exit event, written once there is room
	// again, counts the events lost.
	t.Run("during the command, on_error: warn, told at once", func(t *testing.T) {
		reset()
		told := filepath.Join(work, "told")
		os.Remove(told)
		script := start + `dd if=/dev/zero of="` + fill + `" bs=4k 2>/dev/null; i=0; while [ $i -lt 40 ]; do gh >/dev/null; i=$((i+1)); done; i=0; ` +
			`while [ ! -e "` + told + `" ] && [ $i -lt 150 ]; do sleep 0.1; i=$((i+1)); done; ` +
			`rm -f "` + fill + `"; [ -e "` + told + `" ] && echo "while running: told" || echo "while running: not told"`
		c := exec.Command(exe, "client", "run", "--socket", socks[true], "-c", script)
		c.Env = append(append([]string{}, env...), "GITHUB_TOKEN="+token)
		c.Dir = work
		c.SysProcAttr = asUnprivileged()
		out := &watchBuffer{want: logs[true], seen: func() { os.WriteFile(told, nil, 0o666) }}
		c.Stdout, c.Stderr = out, out
		if err := c.Run(); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		text := strings.ReplaceAll(out.String(), token, "<token>")
		if !strings.Contains(text, "while running: told") || strings.Count(text, logs[true]) != 1 {
			t.Errorf("want the client told once on its stderr while the command runs:\n%s", text)
		}
		b, err := os.ReadFile(logs[true])
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		last := lines[len(lines)-1]
		if !strings.Contains(last, `"msg":"exit"`) || !strings.Contains(last, `"audit_lost":`) {
			t.Errorf("want the exit event with the count of events lost, got %q", last)
		}
	})
}

// watchBuffer collects a command's output and calls seen once, when want
// first appears in it.
type watchBuffer struct {
	mu   sync.Mutex
	buf  strings.Builder
	want string
	seen func()
	done bool
}

func (w *watchBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if !w.done && strings.Contains(w.buf.String(), w.want) {
		w.done = true
		w.seen()
	}
	return len(p), nil
}

func (w *watchBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
