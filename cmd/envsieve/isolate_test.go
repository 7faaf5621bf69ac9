//go:build unix

package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestIsolate runs as an unprivileged user (nobody when the tests run as
// root): a shell holding a canary in its environment starts envsieve, whose
// child looks for the canary in every /proc/*/environ it can read. Without
// --isolate the child finds it in its parent shell's environ (the same user
// may read it: the leak --isolate exists for); with --isolate it sees only
// its own namespace's processes and finds nothing, keeps the user's uid,
// and its exit status passes through.
func TestIsolate(t *testing.T) {
	exe, home := unprivilegedCopy(t, "envsieve")
	canary := "canary-" + strings.Repeat("q7", 8)
	probe := `n=$(cat /proc/[0-9]*/environ 2>/dev/null | tr '\0' '\n' | grep -c ` + canary + `); echo "hits=$n uid=$(id -u)"; exit 5`
	run := func(isolate bool) string {
		args := exe + " run"
		if isolate {
			args += " --isolate"
		}
		// The shell is the ancestor that holds the canary.
		cmd := exec.Command("/bin/sh", "-c", args+` -- /bin/sh -c "$PROBE"; echo "status=$?"`)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "PARENT_ONLY=" + canary, "PROBE=" + probe}
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("isolate=%v: %v\n%s", isolate, err, out)
		}
		return strings.ReplaceAll(string(out), canary, "<canary>")
	}
	control := run(false)
	if strings.Contains(control, "hits=0") || !strings.Contains(control, "status=5") {
		t.Fatalf("control: the child should find its parent's canary (the leak --isolate prevents):\n%s", control)
	}
	got := run(true)
	if !strings.Contains(got, "hits=0 ") {
		t.Fatalf("with --isolate the child still reads an ancestor's environ:\n%s", got)
	}
	if !strings.Contains(got, "status=5") {
		t.Errorf("exit status did not pass through:\n%s", got)
	}
	if want := "uid=" + uidString(); !strings.Contains(got, want) {
		t.Errorf("uid inside is not the user's (%s):\n%s", want, got)
	}
}

func uidString() string {
	if attr := asUnprivileged(); attr != nil {
		return "65534"
	}
	out, _ := exec.Command("id", "-u").Output()
	return strings.TrimSpace(string(out))
}

// TestIsolateNoCapabilities: the program under --isolate holds no
// capability, even when envsieve runs as root (dev containers do), so it
// cannot uncover the host's /proc with `umount -l /proc` or mount anything.
// Run as the test's own user: as root it is the attack; as another user it
// checks the same promise.
func TestIsolateNoCapabilities(t *testing.T) {
	probe := `grep '^Cap\(Eff\|Prm\|Bnd\|Amb\)' /proc/self/status; umount -l /proc 2>/dev/null && echo UMOUNTED; mount -t tmpfs none /tmp 2>/dev/null && echo MOUNTED; echo uid=$(id -u)`
	cmd := exec.Command("envsieve", "run", "--isolate", "--no-shim", "--", "/bin/sh", "-c", probe)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	got := string(out)
	for _, c := range []string{"CapEff", "CapPrm", "CapBnd", "CapAmb"} {
		if !strings.Contains(got, c+":\t0000000000000000") {
			t.Errorf("%s is not empty:\n%s", c, got)
		}
	}
	if strings.Contains(got, "UMOUNTED") || strings.Contains(got, "MOUNTED") {
		t.Errorf("the isolated program could unmount or mount:\n%s", got)
	}
}
