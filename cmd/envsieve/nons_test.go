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

// noUserNSC runs its arguments under a seccomp filter that refuses to
// create a user namespace (unshare, clone with CLONE_NEWUSER; clone3 says
// ENOSYS so that callers fall back to clone), as a container's filter does
// while the kernel's own switches still allow it.
const noUserNSC = `#define _GNU_SOURCE
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
int main(int argc, char **argv) {
	(void)argc;
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_unshare, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone3, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_clone, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, CLONE_NEWUSER, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {sizeof f / sizeof f[0], f};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("seccomp");
		return 125;
	}
	execv(argv[1], argv + 1);
	perror("execv");
	return 127;
}
`

// TestNamespacesRefused: where a seccomp filter refuses user namespaces,
// doctor says so (the namespaces check fails, with the fix), seal: on runs
// the command without the seal and says so, and seal: required refuses to
// start (exit 125).
func TestNamespacesRefused(t *testing.T) {
	noNS := shimtest.Program(t, "nouserns", noUserNSC)
	exe := binary(t, "envsieve")
	dir := t.TempDir()
	for name, src := range map[string]string{
		"on.yaml":       "version: 1\nseal: on\n",
		"required.yaml": "version: 1\nseal: required\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, int) {
		cmd := exec.Command(noNS, append([]string{exe}, args...)...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir}
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	out, _ := run("doctor")
	if !strings.Contains(out, "fail   namespaces") || !strings.Contains(out, "fix: allow unprivileged user namespaces") {
		t.Errorf("doctor under a filter that refuses user namespaces:\n%s", out)
	}
	out, code := run("run", "--no-shim", "--policy", "on.yaml", "--", "/bin/echo", "ran")
	if code != 0 || !strings.Contains(out, "ran") || !strings.Contains(out, "seal: not available here") {
		t.Errorf("seal: on, namespaces refused: exit %d\n%s", code, out)
	}
	out, code = run("run", "--no-shim", "--policy", "required.yaml", "--", "/bin/echo", "ran")
	if code != 125 || strings.Contains(out, "ran\n") {
		t.Errorf("seal: required, namespaces refused: exit %d, want 125\n%s", code, out)
	}
}
