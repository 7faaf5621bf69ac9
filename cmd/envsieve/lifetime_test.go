//go:build linux

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// lifetimeModes are the ways a launch's tree runs, for the lifetime tests:
// the flags, whether envsieve runs under a filter that refuses user
// namespaces (so that the seal is made by Landlock), and the extra
// environment (envsieve-init as the namespaces' init).
type lifetimeMode struct {
	name     string
	args     []string
	landlock bool
	env      []string
	// debug is what the launcher must say about the mode, so that a test
	// cannot pass in another.
	debug string
}

func lifetimeModes(t *testing.T) []lifetimeMode {
	lib := shimtest.Lib(t)
	return []lifetimeMode{
		{name: "unsealed, resident", args: []string{"run", "--no-shim", "--policy", "@redact", "--secret", "LT_TOKEN"},
			env: []string{"LT_TOKEN=lifetime-" + strings.Repeat("7e", 8)}, debug: "resident launcher: redaction true"},
		{name: "unsealed, with grants", args: []string{"run", "--policy", "@grants"}, env: []string{"ENVSIEVE_SHIM=" + lib}, debug: "shim: "},
		{name: "landlock", args: []string{"run", "--no-shim", "--seal"}, landlock: true, debug: "seal: landlock;"},
		{name: "landlock, in place", args: []string{"run", "--no-shim", "--seal", "--policy", "@plain"}, landlock: true, debug: "seal: landlock;"},
		{name: "landlock, with grants", args: []string{"run", "--seal", "--policy", "@grants"}, landlock: true, env: []string{"ENVSIEVE_SHIM=" + lib}, debug: "seal: landlock;"},
		{name: "namespaces", args: []string{"run", "--no-shim", "--seal"}, debug: "seal: namespaces;"},
		{name: "namespaces, the C init in place", args: []string{"run", "--no-shim", "--seal", "--policy", "@plain"}, env: []string{"ENVSIEVE_SHIM=" + lib}, debug: "in place: it makes the namespaces"},
	}
}

// lifetimeCommand returns the command that runs envsieve (exe) in mode m as
// the unprivileged user, with argv as the tree's program.
func lifetimeCommand(t *testing.T, exe, home string, m lifetimeMode, argv ...string) *exec.Cmd {
	dir := filepath.Dir(exe)
	pols := map[string]string{
		"@plain":  "version: 1\nredact: {enabled: false, entropy: false}\n",
		"@redact": "version: 1\nsecrets:\n  LT_TOKEN: {from: env}\n",
		"@grants": "version: 1\nrules:\n  - name: gh\n    match: {command: gh}\n    allow: [GITHUB_TOKEN]\n",
	}
	args := append([]string{}, m.args...)
	for i, a := range args {
		if body, ok := pols[a]; ok {
			p := filepath.Join(dir, strings.TrimPrefix(a, "@")+".yaml")
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			args[i] = p
		}
	}
	full := append(append([]string{exe}, args...), "--")
	full = append(full, argv...)
	if m.landlock {
		noNS := filepath.Join(dir, "nouserns")
		if _, err := os.Stat(noNS); err != nil {
			copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		}
		full = append([]string{noNS}, full...)
	}
	cmd := exec.Command(full[0], full[1:]...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + home, "ENVSIEVE_DEBUG=1"}, m.env...)
	cmd.Dir = home
	if fi, err := os.Stat(filepath.Join(home, "work")); err == nil && fi.IsDir() {
		cmd.Dir = filepath.Join(home, "work")
	}
	cmd.SysProcAttr = asUnprivileged()
	return cmd
}

// marked returns the pids of the processes whose command line holds
// marker.
func marked(marker string) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && bytes.Contains(b, []byte(marker)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// gone waits up to d for every process holding marker to end, and returns
// those still there (killed, so that a failing test leaves nothing).
func gone(marker string, d time.Duration) []int {
	deadline := time.Now().Add(d)
	for {
		left := marked(marker)
		if len(left) == 0 || time.Now().After(deadline) {
			for _, p := range left {
				syscall.Kill(p, syscall.SIGKILL)
			}
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// watcher is what an agent's command leaves behind to outlive the launch:
// a shell detached by setsid and a double fork (its parent exits at once,
// so it is nobody's child in the tree), holding marker in its argv. It
// writes "started" to ready first.
func watcher(marker, ready string) string {
	return `( setsid /bin/sh -c 'echo started > "$1"; while :; do sleep 1; done; : ` + marker + `' watcher ` + ready +
		` </dev/null >/dev/null 2>&1 & ); i=0; while [ ! -s ` + ready + ` ] && [ $i -lt 200 ]; do sleep 0.01; i=$((i+1)); done; echo tree-done`
}

// TestNothingOutlivesTheLaunch plays an agent, as an unprivileged user,
// that leaves a watcher behind (setsid and a double fork) to read the
// environment of later launches. Once the launch has returned, the
// watcher is gone, in every mode a resident launcher or an init holds
// the tree: unsealed, sealed by Landlock and by namespaces. The control is
// the same watcher started outside envsieve, which survives.
func TestNothingOutlivesTheLaunch(t *testing.T) {
	exe, home := unprivilegedCopy(t, "envsieve")
	// In the launch's working directory, which the sealed tree may write
	// (the rest of HOME it may not).
	work := filepath.Join(home, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		os.Chown(work, 65534, 65534)
	}
	ready := filepath.Join(work, "ready")
	t.Run("control", func(t *testing.T) {
		marker := fmt.Sprintf("lifetime-control-%d", time.Now().UnixNano())
		os.Remove(ready)
		cmd := exec.Command("/bin/sh", "-c", watcher(marker, ready))
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home}
		cmd.SysProcAttr = asUnprivileged()
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "tree-done") {
			t.Fatalf("%v\n%s", err, out)
		}
		if left := gone(marker, 300*time.Millisecond); len(left) == 0 {
			t.Fatalf("control: the watcher did not survive its shell outside envsieve")
		}
	})
	for _, m := range lifetimeModes(t) {
		t.Run(m.name, func(t *testing.T) {
			marker := fmt.Sprintf("lifetime-%d", time.Now().UnixNano())
			os.Remove(ready)
			cmd := lifetimeCommand(t, exe, home, m, "/bin/sh", "-c", watcher(marker, ready))
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "tree-done") {
				gone(marker, 0)
				t.Fatalf("%v\n%s", err, out)
			}
			if !strings.Contains(string(out), m.debug) {
				t.Errorf("the launch did not run as %q:\n%s", m.debug, out)
			}
			if b, _ := os.ReadFile(ready); !strings.Contains(string(b), "started") {
				t.Fatalf("the watcher never started:\n%s", out)
			}
			if left := gone(marker, 2*time.Second); len(left) > 0 {
				t.Errorf("the watcher outlived the launch: pids %v\n%s", left, out)
			}
		})
	}
}
