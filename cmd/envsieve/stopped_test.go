//go:build linux

package main

import (
	"bytes"
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

// answerBound is the shim's documented bound on a granted exec's wait for
// the launcher (ANSWER_TIMEOUT_MS in shim/libenvsieve/start.h; docs/shim.md).
const answerBound = 10 * time.Second

// TestStoppedLauncher stops the launcher (SIGSTOP) for 15 s while the tree,
// as an unprivileged user, runs a granted program (gh) as `out=$(gh)` again
// and again: no exec waits on the stopped launcher longer than the
// documented bound, not even one whose caller reads the program's output
// from a pipe to its end (the launcher holds none of the caller's
// descriptors before it has decided); the one that reaches the bound runs
// without its grant and without the keys a rule denies (fail closed); the
// request it gave up on is not started when the launcher runs again (gh
// runs exactly once per exec); and once the launcher runs again the grants
// are back. The stop is longer than the bound, so the bound measured is the
// production one (10 s), not a knob. The stop comes while the tree sleeps
// between execs (the test waits for the tree's mark), so it always meets a
// request before the launcher has read it.
func TestStoppedLauncher(t *testing.T) {
	exe, home := unprivilegedCopy(t, "envsieve")
	dir := filepath.Dir(exe)
	work := filepath.Join(home, "work")
	if err := os.Mkdir(work, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(work, 0o777)
	runs := filepath.Join(work, "runs")
	sys := sysDir(t, dir, map[string]string{"gh": "#!/bin/sh\necho run >> " + runs + "\necho \"gh: ${#GITHUB_TOKEN} denied=${#DENIED_KEY}\"\n"})
	pol := writePolicy(t, dir, "version: 1\nredact: {enabled: false, entropy: false}\nallow: [DENIED_KEY]\n"+
		"rules:\n  - name: gh\n    match: {command: gh}\n    allow: [GITHUB_TOKEN]\n    deny: [DENIED_KEY]\n")
	token := "tok-for-gh-only-" + strings.Repeat("b2", 6)
	// Each line: the exec's wall time in ms, and what gh printed. After
	// each exec the tree marks idle.N and sleeps.
	script := `echo "tree: denied=${#DENIED_KEY}"; i=0; while [ $i -lt 8 ]; do ` +
		`s=$(date +%s%N); out=$(gh); e=$(date +%s%N); echo "exec $(( (e-s)/1000000 )) $out"; ` +
		`touch ` + work + `/idle.$i; i=$((i+1)); sleep 0.5; done`
	cmd := exec.Command(exe, "run", "--policy", pol, "--", "/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=" + sys + ":/usr/bin:/bin", "HOME=" + home, "GITHUB_TOKEN=" + token, "DENIED_KEY=denied-value",
		"ENVSIEVE_SHIM=" + shimtest.Lib(t)}
	cmd.Dir = work
	cmd.SysProcAttr = asUnprivileged()
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	idle := filepath.Join(work, "idle.1")
	for i := 0; ; i++ {
		if _, err := os.Stat(idle); err == nil {
			break
		}
		if i == 3000 {
			cmd.Process.Kill()
			<-done
			t.Fatalf("the tree did not reach its second exec\n%s", buf.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	launcher := cmd.Process.Pid
	if err := syscall.Kill(launcher, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(15 * time.Second)
	syscall.Kill(launcher, syscall.SIGCONT)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%v\n%s", err, buf.String())
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the launch did not end\n%s", buf.String())
	}
	text := strings.ReplaceAll(buf.String(), token, "<token>")
	if !strings.Contains(text, "tree: denied=12") {
		t.Fatalf("control: the tree itself should hold DENIED_KEY:\n%s", text)
	}
	granted := "gh: " + strconv.Itoa(len(token)) + " denied=0"
	var execs, bounded, after int
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "exec" {
			continue
		}
		execs++
		ms, err := strconv.Atoi(f[1])
		if err != nil {
			t.Fatalf("%q", line)
		}
		took := time.Duration(ms) * time.Millisecond
		rest := strings.Join(f[2:], " ")
		switch {
		case took > answerBound+1500*time.Millisecond:
			t.Errorf("an exec waited %v on the stopped launcher (the bound is %v): %q", took, answerBound, line)
		case took >= answerBound-200*time.Millisecond:
			// The exec that met the stop: no answer, so it ran here
			// without the grant and without the denied key.
			bounded++
			if rest != "gh: 0 denied=0" {
				t.Errorf("the exec that reached the bound ran as %q, want no grant and no denied key", rest)
			}
		case rest == granted:
			if bounded > 0 {
				after++
			}
		default:
			t.Errorf("an exec ran as %q, want %q (or, at the bound, no grant)", rest, granted)
		}
	}
	if execs != 8 {
		t.Errorf("%d execs, want 8\n%s", execs, text)
	}
	if bounded == 0 {
		t.Errorf("no exec reached the bound: the stop did not meet one\n%s", text)
	}
	if after == 0 {
		t.Errorf("no grant after the launcher ran again\n%s", text)
	}
	// A request its caller gave up on is not started when the launcher
	// runs again: gh ran once per exec.
	b, err := os.ReadFile(runs)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "run\n"); n != execs {
		t.Errorf("gh ran %d times for %d execs: a request its caller gave up on was started\n%s", n, execs, text)
	}
}

// TestStoppedLauncherBegun stops the launcher (SIGSTOP) for 15 s while a
// granted program it started (gh, which runs for a second) runs, as an
// unprivileged user: the program ends on its own, and its caller, which
// sees it end without the launcher, waits at most the documented bound
// more for the launcher's word on how it ended, then fails closed (125),
// with the program's output, not until the launcher runs again. Once it
// does, the grants are back. Unsealed, the caller sees the program end
// through its pid, and so under the Landlock seal (one pid namespace);
// under the namespace seal, where the tree cannot see the program, through
// a pidfd of the program the launcher sends with "begun" (docs/shim.md).
func TestStoppedLauncherBegun(t *testing.T) {
	// gh is run as `out=$(gh)`: the shell's forked child makes the start
	// request itself (the shim's start_here); as `out=$(sh -c 'exec gh')`,
	// a process exec made execs envsieve-start to make it.
	const viaStart = `sh -c 'exec gh'`
	for _, tc := range []struct {
		name     string
		args     []string
		landlock bool   // under a filter that refuses user namespaces: the seal is made by Landlock
		debug    string // what the launcher must say, so that the case cannot pass in another mode
		gh       string // how the tree runs gh
	}{
		{"unsealed", nil, false, "shim: ", "gh"},
		{"sealed by Landlock", []string{"--seal"}, true, "seal: landlock;", "gh"},
		{"sealed by namespaces", []string{"--seal"}, false, "seal: namespaces;", "gh"},
		{"sealed by namespaces, envsieve-start", []string{"--seal"}, false, "seal: namespaces;", viaStart},
	} {
		t.Run(tc.name, func(t *testing.T) { stoppedLauncherBegun(t, tc.args, tc.landlock, tc.debug, tc.gh) })
	}
}

func stoppedLauncherBegun(t *testing.T, args []string, landlock bool, debug, gh string) {
	exe, home := unprivilegedCopy(t, "envsieve")
	dir := filepath.Dir(exe)
	work := filepath.Join(home, "work")
	if err := os.Mkdir(work, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(work, 0o777)
	started := filepath.Join(work, "gh.started")
	sys := sysDir(t, dir, map[string]string{"gh": "#!/bin/sh\n[ -e " + started + " ] || { touch " + started + "; sleep 1; }\necho \"gh: ${#GITHUB_TOKEN}\"\n"})
	pol := writePolicy(t, dir, "version: 1\nredact: {enabled: false, entropy: false}\n"+
		"rules:\n  - name: gh\n    match: {command: gh}\n    allow: [GITHUB_TOKEN]\n")
	token := "tok-for-gh-only-" + strings.Repeat("d4", 6)
	script := `i=0; while [ $i -lt 3 ]; do s=$(date +%s%N); out=$(` + gh + `); rc=$?; e=$(date +%s%N); ` +
		`echo "exec $(( (e-s)/1000000 )) $rc $out"; i=$((i+1)); done`
	argv := append(append([]string{exe, "run", "--policy", pol}, args...), "--", "/bin/sh", "-c", script)
	if landlock {
		noNS := filepath.Join(dir, "nouserns")
		copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		argv = append([]string{noNS}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=" + sys + ":/usr/bin:/bin", "HOME=" + home, "GITHUB_TOKEN=" + token,
		"ENVSIEVE_SHIM=" + shimtest.Lib(t), "ENVSIEVE_DEBUG=1"}
	cmd.Dir = work
	cmd.SysProcAttr = asUnprivileged()
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	for i := 0; ; i++ {
		if _, err := os.Stat(started); err == nil {
			break
		}
		if i == 3000 {
			cmd.Process.Kill()
			<-done
			t.Fatalf("gh did not start\n%s", buf.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
	launcher := cmd.Process.Pid
	if err := syscall.Kill(launcher, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(15 * time.Second)
	syscall.Kill(launcher, syscall.SIGCONT)
	select {
	case <-done:
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the launch did not end\n%s", buf.String())
	}
	text := strings.ReplaceAll(buf.String(), token, "<token>")
	granted := "gh: " + strconv.Itoa(len(token))
	var execs int
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "exec" {
			continue
		}
		execs++
		ms, err := strconv.Atoi(f[1])
		if err != nil {
			t.Fatalf("%q", line)
		}
		took := time.Duration(ms) * time.Millisecond
		rc, rest := f[2], strings.Join(f[3:], " ")
		if execs == 1 {
			t.Logf("%s", line)
			// gh ran its second, with its grant, and ended while the
			// launcher was stopped: the caller waited the bound for the
			// launcher's word, then failed closed.
			if took > time.Second+answerBound+1500*time.Millisecond {
				t.Errorf("the exec whose program ended under a stopped launcher took %v, want at most 1 s + the bound (%v): %q", took, answerBound, line)
			}
			if rc != "125" || rest != granted {
				t.Errorf("that exec: exit %s, %q; want 125 (fail closed) and the program's output %q", rc, rest, granted)
			}
			continue
		}
		if rc != "0" || rest != granted {
			t.Errorf("an exec after the launcher ran again: exit %s, %q; want 0 and %q\n%s", rc, rest, granted, text)
		}
	}
	if execs != 3 {
		t.Errorf("%d execs, want 3\n%s", execs, text)
	}
	if !strings.Contains(text, "did not say how") {
		t.Errorf("the caller did not say why it failed:\n%s", text)
	}
	if !strings.Contains(text, debug) {
		t.Errorf("the launch did not run in the mode under test (no %q):\n%s", debug, text)
	}
}
