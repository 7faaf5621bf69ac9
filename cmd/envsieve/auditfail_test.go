//go:build linux

package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestAuditFailsClosed fills the disk under the audit log, before and
// during a launch, as an unprivileged user: a write that fails ends the
// launch (exit 125, the file named, nothing started or the tree killed),
// or, under `audit: {on_error: warn}`, is said once on stderr and the
// events lost are counted in the exit event. Never silence. The disk is a
// small tmpfs (mounted as root), and /dev/full is a file that opens but
// cannot be written.
func TestAuditFailsClosed(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("mounts a small tmpfs: run as root (CI does); /dev/full is covered by package audit's TestDevFull")
	}
	exe, home := unprivilegedCopy(t, "envsieve")
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
	logPath := filepath.Join(disk, "audit.jsonl")
	fill := filepath.Join(disk, "fill")
	policies := map[bool]string{}
	for _, warn := range []bool{false, true} {
		body := "version: 1\nredact: {enabled: false, entropy: false}\nrules:\n  - name: gh\n    match: {command: gh}\n    allow: [GITHUB_TOKEN]\n"
		if warn {
			body += "audit: {on_error: warn}\n"
		}
		p := filepath.Join(dir, map[bool]string{false: "fail.yaml", true: "warn.yaml"}[warn])
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		policies[warn] = p
	}
	token := "tok-for-gh-only-" + strings.Repeat("a1", 6)
	run := func(log string, warn bool, script string) (string, int) {
		cmd := exec.Command(exe, "run", "--policy", policies[warn], "--audit", log, "--", "/bin/sh", "-c", script)
		cmd.Env = []string{"PATH=" + sys + ":/usr/bin:/bin", "HOME=" + home, "GITHUB_TOKEN=" + token, "ENVSIEVE_SHIM=" + shimtest.Lib(t)}
		cmd.Dir = work
		cmd.SysProcAttr = asUnprivileged()
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return strings.ReplaceAll(string(out), token, "<token>"), code
	}
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
	reset := func() {
		os.Remove(fill)
		os.Remove(logPath)
		os.Remove(filepath.Join(work, "started"))
		os.Remove(filepath.Join(work, "finished"))
	}
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(work, name))
		return err == nil
	}
	// The policy admits neither WORK nor DISK: the paths are written out.
	start := `touch "` + work + `/started"; gh; `

	t.Run("before the launch, /dev/full", func(t *testing.T) {
		reset()
		out, code := run("/dev/full", false, start)
		if code != 125 || !strings.Contains(out, "/dev/full") || exists("started") {
			t.Errorf("exit %d, started %v, want 125, the file named and nothing started:\n%s", code, exists("started"), out)
		}
	})
	t.Run("before the launch, a full disk", func(t *testing.T) {
		reset()
		fillDisk()
		out, code := run(logPath, false, start)
		if code != 125 || !strings.Contains(out, logPath) || exists("started") {
			t.Errorf("exit %d, started %v, want 125, the file named and nothing started:\n%s", code, exists("started"), out)
		}
	})
	t.Run("before the launch, a full disk, on_error: warn", func(t *testing.T) {
		reset()
		fillDisk()
		out, code := run(logPath, true, start)
		if code != 0 || !exists("started") || strings.Count(out, logPath) != 1 || !strings.Contains(out, "on_error: warn") {
			t.Errorf("exit %d, started %v, want 0, started, and the file named once:\n%s", code, exists("started"), out)
		}
	})
	// During: the tree fills the disk itself, then runs gh 50 times (a
	// grant event each).
	during := start + `dd if=/dev/zero of="` + fill + `" bs=4k 2>/dev/null; i=0; while [ $i -lt 50 ]; do gh; i=$((i+1)); done; `
	t.Run("during the launch", func(t *testing.T) {
		reset()
		out, code := run(logPath, false, during+`touch "`+work+`/finished"`)
		if code != 125 || !strings.Contains(out, logPath) || exists("finished") {
			t.Errorf("exit %d, finished %v, want 125, the file named and the tree ended:\n%s", code, exists("finished"), out)
		}
		// The log's last page takes a few events after the disk is full;
		// every gh that ran with its grant (it prints the token's length)
		// is in the log but the one whose event failed. A gh the tree runs
		// after that, until the launch has ended it, is declined its grant
		// and prints 0: counting those too made this test fail when the
		// teardown was slow (-race), with no grant past the failure.
		granted := fmt.Sprintf("gh: %d\n", len(token))
		if ran, logged := strings.Count(out, granted), countEvents(t, logPath, "grant"); ran > logged+1 {
			t.Errorf("gh ran with its grant %d times and the log holds %d grants: grants went on after the log failed", ran, logged)
		}
	})
	t.Run("during the launch, on_error: warn", func(t *testing.T) {
		reset()
		// The tree frees the disk at its end, so that the exit event is
		// written.
		out, code := run(logPath, true, during+`rm -f "`+fill+`"; touch "`+work+`/finished"`)
		if code != 0 || !exists("finished") || strings.Count(out, "gh: ") != 51 {
			t.Errorf("exit %d, finished %v, gh %d times; want 0, finished, 51:\n%s", code, exists("finished"), strings.Count(out, "gh: "), out)
		}
		if strings.Count(out, logPath) != 1 {
			t.Errorf("the failure was not said exactly once:\n%s", out)
		}
		exit := lastEvent(t, logPath, "exit")
		lost, _ := exit["audit_lost"].(float64)
		if logged := countEvents(t, logPath, "grant"); lost == 0 || int(lost)+logged < 51 {
			t.Errorf("exit event %v, %d grants logged: want every one of the 51 grants logged or counted lost", exit, logged)
		}
	})
}

// events returns the events of the log at path with msg, skipping a line
// torn by a full disk.
func events(t *testing.T, path, msg string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var ev map[string]any
		if json.Unmarshal(bytes.TrimSpace(sc.Bytes()), &ev) == nil && ev["msg"] == msg {
			evs = append(evs, ev)
		}
	}
	return evs
}

func countEvents(t *testing.T, path, msg string) int { return len(events(t, path, msg)) }

func lastEvent(t *testing.T, path, msg string) map[string]any {
	evs := events(t, path, msg)
	if len(evs) == 0 {
		return nil
	}
	return evs[len(evs)-1]
}
