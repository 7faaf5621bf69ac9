//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/internal/sshtest"
)

// TestSSHAgentFiltered: the user's ssh agent holds two keys, and two
// sshd on loopback authorize both; the policy allows one key for the
// first server. In the agent's tree (run as an unprivileged user, under
// no seal, the namespace seal and the Landlock one), ssh and git clone
// over ssh log in to the first server through envsieve's agent socket,
// run their command and clone the repository (both sshd log in to root,
// whose shell runs git-upload-pack: sshtest.ShellSshd), ssh and git clone
// to the second are refused by the filter, ssh-add -L lists only the
// allowed key, ssh-add -D is refused and the user's agent keeps its keys;
// each refusal is in the audit log. Before the filter the tree held the user's own agent socket:
// it listed both keys, logged in to the second server and removed every
// key.
func TestSSHAgentFiltered(t *testing.T) {
	for _, seal := range []string{"none", "namespaces", "landlock"} {
		t.Run(seal, func(t *testing.T) { testSSHAgentFiltered(t, seal) })
	}
}

func testSSHAgentFiltered(t *testing.T, seal string) {
	exe, home := unprivilegedCopy(t, "envsieve")
	dir := sshtest.Shared(t)
	allowed := sshtest.NewKey(t, dir, "allowed-key")
	other := sshtest.NewKey(t, dir, "other-key")
	userAgent := sshtest.Agent(t, allowed, other)
	a := sshtest.ShellSshd(t, dir, allowed.Public, other.Public)
	b := sshtest.ShellSshd(t, dir, allowed.Public, other.Public)
	// The user's known_hosts, which the launcher reads.
	sshDir := filepath.Join(home, ".ssh")
	if err := os.Mkdir(sshDir, 0o700); err != nil {
		t.Fatal(err)
	}
	known := filepath.Join(sshDir, "known_hosts")
	sshtest.WriteFile(t, known, a.KnownHostsLine("127.0.0.1")+"\n"+b.KnownHostsLine("127.0.0.1")+"\n")
	if os.Getuid() == 0 {
		os.Chown(sshDir, sshtest.UID, sshtest.GID)
		os.Chown(known, sshtest.UID, sshtest.GID)
	}
	repo := sshtest.BareRepo(t, dir, "repo.git", "README", "cloned through the filter\n")
	pol := writePolicy(t, dir, "version: 1\nssh: {keys: [allowed-key], hosts: [\"127.0.0.1:"+strconv.Itoa(a.Port)+"\"]}\n")
	sshCmd := "ssh -F /dev/null -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=" + known +
		" -o GlobalKnownHostsFile=/dev/null -l " + a.User
	script := `echo "sock-is-user=$([ "$SSH_AUTH_SOCK" = "` + userAgent + `" ] && echo yes || echo no)"
echo "list:"; ssh-add -L
` + sshCmd + ` -p ` + strconv.Itoa(a.Port) + ` 127.0.0.1 true; echo "first=$?"
GIT_SSH_COMMAND="` + sshCmd + `" git clone -q ssh://` + a.User + `@127.0.0.1:` + strconv.Itoa(a.Port) + repo + ` clone; echo "clone=$?"
echo "cloned=$(cat clone/README)"
` + sshCmd + ` -p ` + strconv.Itoa(b.Port) + ` 127.0.0.1 true; echo "second=$?"
GIT_SSH_COMMAND="` + sshCmd + `" git clone -q ssh://` + b.User + `@127.0.0.1:` + strconv.Itoa(b.Port) + repo + ` clone2 2>&1; echo "clone2=$?"
ssh-add -D >/dev/null 2>&1; echo "delete=$?"
(echo "# planted" >> "$HOME/.ssh/known_hosts") 2>/dev/null && echo "known-hosts=written" || echo "known-hosts=refused"
`
	alog := filepath.Join(home, "audit.jsonl")
	var args []string
	if seal == "landlock" {
		noNS := filepath.Join(dir, "nouserns")
		copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		args = append(args, noNS)
	}
	args = append(args, exe, "run", "--policy", pol, "--audit", alog)
	if seal != "none" {
		args = append(args, "--seal")
	}
	args = append(args, "--", "/bin/sh", "-c", script)
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "SSH_AUTH_SOCK=" + userAgent}
	// The agent's working directory: the rest of its HOME is read-only
	// in the sealed tree.
	work := filepath.Join(home, "work")
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		os.Chown(work, sshtest.UID, sshtest.GID)
	}
	cmd.Dir = work
	cmd.SysProcAttr = sshtest.AsUnprivileged()
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	if err != nil {
		t.Fatalf("envsieve run: %v\n%s", err, out)
	}
	if !strings.Contains(out, "sock-is-user=no") {
		t.Errorf("the tree holds the user's agent socket:\n%s", out)
	}
	if strings.Contains(out, other.Public) || !strings.Contains(out, allowed.Public) {
		t.Errorf("ssh-add -L in the tree does not list only the allowed key:\n%s", out)
	}
	if strings.Contains(out, "delete=0") {
		t.Errorf("ssh-add -D succeeded in the tree:\n%s", out)
	}
	// ssh, then git's ssh, logged in, ran the command and cloned.
	if n := strings.Count(a.Log(), "Accepted publickey"); n != 2 {
		t.Errorf("ssh and git to the allowed server logged in %d times, want 2:\n%s\nsshd: %s", n, out, a.Log())
	}
	if !strings.Contains(out, "first=0\n") {
		t.Errorf("ssh to the allowed server did not run its command:\n%s\nsshd: %s", out, a.Log())
	}
	if !strings.Contains(out, "clone=0\n") || !strings.Contains(out, "cloned=cloned through the filter\n") {
		t.Errorf("git clone from the allowed server did not complete:\n%s\nsshd: %s", out, a.Log())
	}
	// The other server: ssh and git clone are refused by the filter
	// (its sshd would run git-upload-pack as well: the refusal is the
	// agent's).
	if b.Accepted() || !strings.Contains(out, "second=255") {
		t.Errorf("ssh to the other server was not refused:\n%s", out)
	}
	if strings.Contains(out, "clone2=0\n") || !strings.Contains(out, "clone2=") ||
		strings.Count(out, "agent refused operation") < 2 {
		t.Errorf("git clone from the other server was not refused by the filter:\n%s", out)
	}
	// Sealed, the tree cannot plant a host key for a later launch.
	// Unsealed (the control) it can: the seal is the boundary.
	if want := map[bool]string{true: "known-hosts=written", false: "known-hosts=refused"}[seal == "none"]; !strings.Contains(out, want) {
		t.Errorf("~/.ssh/known_hosts under seal %s: want %s:\n%s", seal, want, out)
	}
	if c := exec.Command("ssh-add", "-l"); true {
		c.Env = []string{"PATH=/usr/bin:/bin", "SSH_AUTH_SOCK=" + userAgent}
		if got, _ := c.Output(); strings.Count(string(got), "\n") != 2 {
			t.Errorf("the user's agent lost keys: %s", got)
		}
	}
	logb, err := os.ReadFile(alog)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ssh-refused", "removing every key", "is not of an allowed host", "ssh-signed"} {
		if !strings.Contains(string(logb), want) {
			t.Errorf("audit log lacks %q", want)
		}
	}
	lastSeal := ""
	for _, l := range strings.Split(string(logb), "\n") {
		if strings.Contains(l, `"msg":"seal"`) {
			lastSeal = l
		}
	}
	if seal != "none" && !strings.Contains(lastSeal, `"mechanism":"`+seal+`"`) {
		t.Errorf("the tree was not sealed by %s: %s", seal, lastSeal)
	}
	if t.Failed() {
		t.Logf("tree's output:\n%s\naudit log:\n%s", out, logb)
	}
}
