//go:build linux

package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/envsieve/envsieve/internal/proc"
	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestLandlockInit runs a launch sealed by Landlock through envsieve-init's
// Landlock init (init.c, landlock_main), as an unprivileged user: in the
// launcher's place, where the kernel's switch turns user namespaces off
// before the launch (usernsoff: the launcher is then envsieve-init, which
// forks the tree's reaper), and started by a resident launcher, where a
// seccomp filter refuses them at the start (nouserns). In each, the tree
// is the launcher's, its reaper's and the program's; the program alone is
// in the domain: it cannot read the masked file nor its reaper's environ
// (non-dumpable, as the launcher is, outside the domain besides),
// holds neither the ruleset's descriptor nor the init's variables; a
// SIGTERM to the launcher's pid reaches it and its status comes back; a
// program killed by a signal N makes the launcher exit 128+N.
func TestLandlockInit(t *testing.T) {
	exe, home := unprivilegedCopy(t, "envsieve")
	dir := filepath.Dir(exe)
	copyFile(t, shimtest.Program(t, "usernsoff", shimtest.UsernsOff), filepath.Join(dir, "usernsoff"))
	copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), filepath.Join(dir, "nouserns"))
	canary := "landlock-init-" + strings.Repeat("5c", 8)
	writeOwned(t, filepath.Join(home, ".aws", "credentials"), "[default]\naws_secret_access_key = "+canary+"\n")
	plain := filepath.Join(dir, "plain.yaml")
	// The policy admits the init's own variables from the caller: a
	// caller's ENVSIEVE_INIT_PARENT naming the launcher's parent would
	// have the init in the launcher's place take itself for one a
	// resident launcher started, and fork no reaper; the launcher drops
	// them (proc.InitEnv).
	if err := os.WriteFile(plain, []byte("version: 1\nallow: [\"ENVSIEVE_INIT_*\"]\nredact: {enabled: false, entropy: false}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	probe := `cat ~/.aws/credentials 2>/dev/null; tr '\0' '\n' < /proc/$PPID/environ 2>/dev/null | grep -c . | sed 's/^/reaper-env=/'; ` +
		`env | grep -c '^ENVSIEVE_INIT_' | sed 's/^/init-vars=/'; ls -l /proc/$$/fd | grep -c landlock | sed 's/^/ruleset-fds=/'; `
	for _, tc := range []struct {
		name, wrapper, debug, tree string
	}{
		{"in place", "usernsoff", "in place: it reaps the tree", "envsieve-init envsieve-init sh"},
		{"resident", "nouserns", "the tree's reaper is envsieve-init", "envsieve envsieve-init sh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := func(script string) (*exec.Cmd, *bufio.Scanner, *strings.Builder) {
				args := []string{filepath.Join(dir, tc.wrapper)}
				if tc.wrapper == "usernsoff" {
					args = append(args, "65534")
				}
				args = append(args, exe, "run", "--no-shim", "--seal", "--policy", plain, "--", "/bin/sh", "-c", script)
				cmd := exec.Command(args[0], args[1:]...)
				cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + home,
					fmt.Sprintf("ENVSIEVE_INIT_PARENT=%d", os.Getpid()), "ENVSIEVE_INIT_SEAL=m /nowhere"}, cInitEnv(t)...)
				cmd.Dir = filepath.Dir(home)
				if tc.wrapper != "usernsoff" {
					cmd.SysProcAttr = asUnprivileged()
				}
				lines, stderr := startLines(t, cmd)
				return cmd, lines, stderr
			}
			cmd, lines, stderr := start(probe + `trap 'exit 7' TERM; echo ready; while :; do sleep 0.05; done`)
			var got []string
			for lines.Scan() && lines.Text() != "ready" {
				got = append(got, lines.Text())
			}
			report := strings.ReplaceAll(strings.Join(got, "\n"), canary, "<canary>")
			launcher := cmd.Process.Pid
			tree := []string{comm(launcher)}
			// The program's own children (its sleep) are not looked at.
			for p := launcher; len(tree) < 3; {
				kids := proc.Children(p)
				if len(kids) != 1 {
					break
				}
				p = kids[0]
				tree = append(tree, comm(p))
			}
			// The launcher and the reaper are non-dumpable: their /proc
			// files are root's, and the user's other processes cannot
			// read their memory or environ.
			var undumpable []bool
			for p, n := launcher, 0; n < 2; n++ {
				var st syscall.Stat_t
				undumpable = append(undumpable, syscall.Stat(fmt.Sprintf("/proc/%d/environ", p), &st) == nil && st.Uid == 0)
				if kids := proc.Children(p); len(kids) == 1 {
					p = kids[0]
				}
			}
			cmd.Process.Signal(syscall.SIGTERM)
			err := cmd.Wait()
			if !undumpable[0] || !undumpable[1] {
				t.Errorf("the launcher and the reaper non-dumpable: %v; want both", undumpable)
			}
			if !strings.Contains(stderr.String(), tc.debug) {
				t.Errorf("the launch did not run as %q:\n%s", tc.debug, stderr.String())
			}
			if strings.Join(tree, " ") != tc.tree {
				t.Errorf("the launcher and its line of children are %q; want %q", tree, tc.tree)
			}
			for _, want := range []string{"reaper-env=0", "init-vars=0", "ruleset-fds=0"} {
				if !strings.Contains(report, want) {
					t.Errorf("the program's report lacks %q:\n%s", want, report)
				}
			}
			if strings.Contains(report, "<canary>") {
				t.Errorf("the program read the masked file:\n%s", report)
			}
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 7 {
				t.Errorf("SIGTERM to the launcher: %v; want status 7 (the program's trap)\n%s", err, stderr.String())
			}

			// Ended by a signal: the launcher exits 128+N, as it does
			// unsealed and by the namespaces.
			cmd, lines, stderr = start(`kill -USR1 $$`)
			for lines.Scan() {
			}
			err = cmd.Wait()
			if !errors.As(err, &ee) || ee.ExitCode() != 128+int(syscall.SIGUSR1) {
				t.Errorf("a program killed by SIGUSR1: the launcher ended with %v; want status %d\n%s", err, 128+int(syscall.SIGUSR1), stderr.String())
			}
		})
	}
}

// TestLandlockInitRefuses starts envsieve-init's Landlock init as the
// launcher would, but without a ruleset, with a variable that names none,
// with a closed descriptor and with a descriptor that is not a ruleset:
// each exits 125 with a message, and the program never starts.
func TestLandlockInitRefuses(t *testing.T) {
	init := filepath.Join(filepath.Dir(shimtest.Lib(t)), "envsieve-init")
	marker := filepath.Join(t.TempDir(), "started")
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	for _, tc := range []struct {
		name, env, want string
		files           []*os.File
	}{
		{"no ruleset", "", "no Landlock ruleset", nil},
		{"not a number", "ENVSIEVE_INIT_LANDLOCK=three", "is not a descriptor", nil},
		{"stdin", "ENVSIEVE_INIT_LANDLOCK=0", "is not a descriptor", nil},
		{"closed", "ENVSIEVE_INIT_LANDLOCK=9", "the Landlock ruleset's descriptor", nil},
		{"not a ruleset", "ENVSIEVE_INIT_LANDLOCK=3", "landlock_restrict_self", []*os.File{devNull}},
		{"a pid with a tail", "ENVSIEVE_INIT_PARENT=12x", "is not a pid", nil},
		{"pid zero", "ENVSIEVE_INIT_PARENT=0", "is not a pid", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(init, "--landlock", "/bin/sh", "sh", "-c", "touch "+marker)
			cmd.Env = []string{"PATH=/usr/bin:/bin"}
			if tc.env != "" {
				cmd.Env = append(cmd.Env, tc.env)
			}
			cmd.ExtraFiles = tc.files
			cmd.SysProcAttr = asUnprivileged()
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 125 || !strings.Contains(string(out), tc.want) {
				t.Errorf("exit %v, want 125 and %q:\n%s", err, tc.want, out)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Errorf("the program started")
			}
		})
	}
}

// TestLandlockInitExtraFiles starts a program with 20 extra files through
// proc.ScopeWith and envsieve-init's Landlock init, given in the reverse
// order of their numbers and repeated, so that the child's start moves
// some of them (Go's forkAndExecInChild, pass 1) before it puts each in
// its place, beside the ruleset the init inherits at its own number: each
// file arrives at its place, the init enters its ruleset (else it exits
// 125), and the ruleset and the init's variables stay the init's.
func TestLandlockInitExtraFiles(t *testing.T) {
	init := filepath.Join(filepath.Dir(shimtest.Lib(t)), "envsieve-init")
	var files []*os.File
	var readers []*os.File
	for range 7 { // 3 to 9: dash takes one digit
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		readers = append(readers, r)
		files = append([]*os.File{w}, files...) // the highest number first
	}
	script := `for i in 3 4 5 6 7 8 9; do echo "to $i" >&$i || exit 9; done; ` +
		`ls -l /proc/$$/fd | grep -c landlock; env | grep -c ENVSIEVE_INIT_; true`
	// Then the first again, to the child's descriptor 22.
	extra := slices.Clone(files)
	for len(extra) < 20 {
		extra = append(extra, files[0])
	}
	c, err := proc.ScopeWith(&proc.Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", script},
		Env: []string{"PATH=/usr/bin:/bin"}, ExtraFiles: extra}, init)
	if err != nil {
		t.Fatal(err)
	}
	// The ruleset sits at 256 or past it, above every number the child's
	// start writes.
	at := ""
	for _, kv := range c.Env {
		if v, ok := strings.CutPrefix(kv, "ENVSIEVE_INIT_LANDLOCK="); ok {
			at = v
		}
	}
	if n, err := strconv.Atoi(at); err != nil || n < 256 {
		t.Errorf("the ruleset is handed at descriptor %q; want 256 or past it", at)
	}
	var out strings.Builder
	c.Stdout, c.Stderr = &out, &out
	err = c.Run()
	for _, w := range files {
		w.Close()
	}
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if got := strings.Fields(out.String()); len(got) != 2 || got[0] != "0" || got[1] != "0" {
		t.Errorf("the program saw %q ruleset descriptors and init variables; want none", got)
	}
	for i, r := range readers {
		// readers[i] pairs with files[6-i], the child's descriptor 9-i.
		b := make([]byte, 64)
		n, _ := r.Read(b)
		if want := fmt.Sprintf("to %d\n", 9-i); string(b[:n]) != want {
			t.Errorf("pipe %d read %q; want %q", i, b[:n], want)
		}
		r.Close()
	}
}

// TestLandlockInitExecFails: a program envsieve-init's Landlock init
// cannot execute (started through proc.ScopeWith, which checks nothing of
// it) gives 127 when it is not there and 126 when it is not executable,
// each with the launcher's words.
func TestLandlockInitExecFails(t *testing.T) {
	init := filepath.Join(filepath.Dir(shimtest.Lib(t)), "envsieve-init")
	noExec := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(noExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want string
		code       int
	}{
		{"/nonexistent/program", "command not found in the child's PATH", 127},
		{noExec, "not executable", 126},
	} {
		c, err := proc.ScopeWith(&proc.Cmd{Path: tc.path, Args: []string{"p"}, Env: []string{"PATH=/usr/bin:/bin"}}, init)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		c.Stdout, c.Stderr = &out, &out
		err = c.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != tc.code || !strings.Contains(out.String(), tc.want) {
			t.Errorf("%s: %v, want exit %d and %q:\n%s", tc.path, err, tc.code, tc.want, out.String())
		}
	}
}
