//go:build linux

package main

import (
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// gitPass are the variables git sets for the git processes it starts, which
// a rule for git must let them keep: where the repository, work tree,
// index and objects are (a push to a local repository quarantines the
// objects it receives), the protocol and its restrictions, the pathspec and
// lock modes, the reflog's action and the identity a commit is made with.
// None chooses which config git reads beyond the repository the caller
// could already make its working directory, what code it runs, or where
// its credential goes. Never in this list: GIT_CONFIG_PARAMETERS,
// GIT_CONFIG_COUNT, GIT_CONFIG_KEY_*, GIT_CONFIG_VALUE_*, GIT_CONFIG,
// GIT_CONFIG_GLOBAL, GIT_CONFIG_SYSTEM, GIT_CONFIG_NOSYSTEM, GIT_EXEC_PATH,
// GIT_TEMPLATE_DIR, GIT_SSH, GIT_SSH_COMMAND, GIT_SSH_VARIANT, GIT_ASKPASS,
// GIT_EDITOR, GIT_SEQUENCE_EDITOR, GIT_PAGER, GIT_EXTERNAL_DIFF,
// GIT_PROXY_COMMAND, GIT_ALLOW_PROTOCOL, GIT_SSL_*, GIT_CURL_VERBOSE,
// GIT_TRACE*, GIT_TRACE_REDACT, GIT_TEST_*.
var gitPass = []string{
	"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_IMPLICIT_WORK_TREE",
	"GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_QUARANTINE_PATH", "GIT_SHALLOW_FILE",
	"GIT_NAMESPACE", "GIT_PROTOCOL", "GIT_PROTOCOL_FROM_USER",
	"GIT_LITERAL_PATHSPECS", "GIT_GLOB_PATHSPECS", "GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS",
	"GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_OPTIONAL_LOCKS", "GIT_PAGER_IN_USE",
	"GIT_REFLOG_ACTION", "GIT_INTERNAL_SUPER_PREFIX", "GIT_INTERNAL_GETTEXT_SH_SCHEME",
	"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
}

// TestGitRulePass: with a rule for git that grants a token and passes
// gitPass, the real git clones, fetches and pushes over file:// as an
// unprivileged user, started by the agent's bash. Every git process git
// starts matches the rule and is started again by the launcher: without
// GIT_DIR, `git index-pack --stdin` of a clone fails ("--stdin requires a
// git repository"). Both ends index what they receive (unpackLimit 1), so
// the pushed objects go through the receiving end's quarantine: a push
// the pre-receive hook rejects leaves no object behind. The hook does not
// get the token.
func TestGitRulePass(t *testing.T) {
	t.Parallel()
	exe, home := unprivilegedCopy(t, "envsieve")
	dir := filepath.Dir(exe)
	pol := gitRulePolicy(t, dir)
	token := "tok-for-git-only-b77d"
	lib := shimtest.Lib(t)
	hook := "#!/bin/sh\necho \"hook $(basename $0): token-length=${#GIT_RULE_TOKEN}\" >&2\n" +
		"while read old new ref; do if [ \"$ref\" = refs/heads/rejected ]; then exit 1; fi; done\n"
	setup := "set -e\n" +
		"git init -q --bare remote.git\n" +
		"git -C remote.git config receive.unpackLimit 1\n" +
		"printf '%s' \"$HOOK\" > remote.git/hooks/pre-receive && chmod +x remote.git/hooks/pre-receive\n" +
		"git init -q seed\n" +
		"git -C seed -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m seed\n" +
		"git -C seed push -q ../remote.git HEAD:refs/heads/master\n"
	sh := func(script string, granted bool) string {
		t.Helper()
		var cmd *exec.Cmd
		if granted {
			cmd = exec.Command(exe, "run", "--policy", pol, "--", "bash", "-c", script)
		} else {
			cmd = exec.Command("bash", "-c", script)
		}
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "GIT_RULE_TOKEN=" + token, "ENVSIEVE_SHIM=" + lib, "HOOK=" + hook}
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		b, err := cmd.CombinedOutput()
		out := strings.ReplaceAll(string(b), token, "<token>")
		if out != string(b) {
			t.Errorf("the token reached the output: %q", out)
		}
		if err != nil {
			t.Fatalf("%v: %q", err, out)
		}
		return out
	}
	sh(setup, false)
	out := sh("set -e\n"+
		"git clone -q file://$HOME/remote.git work\n"+
		"cd work\n"+
		"git config fetch.unpackLimit 1\n"+
		"git -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m change\n"+
		"git push -q origin HEAD\n"+
		"git fetch -q origin\n"+
		"test \"$(git rev-parse origin/master)\" = \"$(git rev-parse HEAD)\"\n"+
		"echo git-ok\n"+
		// A push the hook rejects leaves no object behind: the
		// receiving end's git processes kept its quarantine.
		"git -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m rejected\n"+
		"if git push -q origin HEAD:refs/heads/rejected 2>/dev/null; then echo rejected-push-went-in; fi\n"+
		"if git -C $HOME/remote.git cat-file -e $(git rev-parse HEAD); then echo quarantine-leaked; fi\n", true)
	if !strings.Contains(out, "git-ok") {
		t.Errorf("clone, push and fetch did not all work: %q", out)
	}
	if strings.Contains(out, "rejected-push-went-in") || strings.Contains(out, "quarantine-leaked") {
		t.Errorf("the receiving end's quarantine did not hold: %q", out)
	}
	if !strings.Contains(out, "hook pre-receive: token-length=0") {
		t.Errorf("the pre-receive hook did not run without the token: %q", out)
	}
}

// TestGitRuleHTTP: the same rule for git, and the real git clones, pushes
// and fetches over http through `git http-backend` (run by net/http/cgi on
// loopback, as root: the server is the user's, not the tree's), as an
// unprivileged user started by the agent's bash. git's remote helper
// (git-remote-http, which no rule names) runs in the tree, and the git
// processes it starts (fetch-pack's index-pack) are started again by the
// launcher with the rule's pass: list.
func TestGitRuleHTTP(t *testing.T) {
	t.Parallel()
	exe, home := unprivilegedCopy(t, "envsieve")
	dir := filepath.Dir(exe)
	pol := gitRulePolicy(t, dir)
	root := t.TempDir()
	gitAs := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + root}
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitAs(root, "init", "-q", "--bare", "remote.git")
	gitAs(root, "-C", "remote.git", "config", "http.receivepack", "true")
	gitAs(root, "init", "-q", "seed")
	gitAs(root, "-C", "seed", "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "--allow-empty", "-m", "seed")
	gitAs(root, "-C", "seed", "push", "-q", "../remote.git", "HEAD:refs/heads/master")
	srv := httptest.NewServer(&cgi.Handler{Path: "/usr/lib/git-core/git-http-backend",
		Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=t", "HOME=" + root}})
	defer srv.Close()
	token := "tok-for-git-http-" + strings.Repeat("9d", 6)
	cmd := exec.Command(exe, "run", "--policy", pol, "--", "bash", "-c", "set -e\n"+
		"git clone -q "+srv.URL+"/remote.git work\n"+
		"cd work\n"+
		"git config fetch.unpackLimit 1\n"+
		"git -c user.name=t -c user.email=t@example.com commit -q --allow-empty -m change\n"+
		"git push -q origin HEAD\n"+
		"git fetch -q origin\n"+
		"test \"$(git rev-parse origin/master)\" = \"$(git rev-parse HEAD)\"\n"+
		"echo git-http-ok\n")
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "GIT_RULE_TOKEN=" + token, "ENVSIEVE_SHIM=" + shimtest.Lib(t)}
	cmd.Dir = home
	cmd.SysProcAttr = asUnprivileged()
	b, err := cmd.CombinedOutput()
	out := strings.ReplaceAll(string(b), token, "<token>")
	if err != nil || !strings.Contains(out, "git-http-ok") {
		t.Errorf("clone, push and fetch over http under a rule for git: %v\n%s", err, out)
	}
}

// gitRulePolicy writes, in dir, a policy with a rule for git that grants
// GIT_RULE_TOKEN and passes gitPass, and returns its path.
func gitRulePolicy(t *testing.T, dir string) string {
	t.Helper()
	return writePolicy(t, dir, "version: 1\nredact: {enabled: false, entropy: false}\nrules:\n"+
		"  - name: git\n    match: {command: git}\n    allow: [GIT_RULE_TOKEN]\n    pass: ["+strings.Join(gitPass, ", ")+"]\n")
}
