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
)

// shebangScripts are root-owned scripts a rule grants SHEBANG_TOKEN to,
// each started by `#!/usr/bin/env INTERPRETER`: each says how long the
// token it holds is, whether the shim's marker for the interpreter reached
// it, and how long the token is in a shell it starts.
var shebangScripts = map[string]string{
	"tool-node": "#!/usr/bin/env node\n" +
		`const t = process.env.SHEBANG_TOKEN || "";` + "\n" +
		`console.log("tool-node: token-length=" + t.length + " marker=" + (process.env.ENVSIEVE_SHIM_INTERP === undefined ? "none" : "present"));` + "\n" +
		`process.stdout.write(require("child_process").execFileSync("/bin/sh", ["-c", 'echo "tool-node child: token-length=${#SHEBANG_TOKEN}"']).toString());` + "\n",
	// env's own options: the launcher grants nothing to it.
	"tool-env-s": "#!/usr/bin/env -S node\nconsole.log(\"tool-env-s: token-length=\" + (process.env.SHEBANG_TOKEN || \"\").length);\n",
	"tool-py": "#!/usr/bin/env python3\n" +
		"import os, subprocess\n" +
		`t = os.environ.get("SHEBANG_TOKEN", "")` + "\n" +
		`print("tool-py: token-length=%d marker=%s" % (len(t), "present" if "ENVSIEVE_SHIM_INTERP" in os.environ else "none"), flush=True)` + "\n" +
		`subprocess.run(["/bin/sh", "-c", 'echo "tool-py child: token-length=${#SHEBANG_TOKEN}"'])` + "\n",
}

// TestEnvShebangGrant: a rule's grant to a `#!/usr/bin/env node` or
// `#!/usr/bin/env python3` script reaches the interpreter that runs the
// script, once: the script reads the token, the shell it starts does not,
// and the shim's marker that named the interpreter is gone. As an
// unprivileged user, started by the agent's bash, python and node, and as
// the launch's first program.
func TestEnvShebangGrant(t *testing.T) {
	exe, home := unprivilegedCopy(t, "envsieve")
	dir := filepath.Dir(exe)
	sys := filepath.Join(dir, "sys")
	if err := os.Mkdir(sys, 0o755); err != nil {
		t.Fatal(err)
	}
	pol := "version: 1\nredact: {enabled: false, entropy: false}\nrules:\n"
	for name, src := range shebangScripts {
		if err := os.WriteFile(filepath.Join(sys, name), []byte(src), 0o755); err != nil {
			t.Fatal(err)
		}
		pol += "  - name: " + name + "\n    match: {command: " + name + "}\n    allow: [SHEBANG_TOKEN]\n"
	}
	polFile := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(polFile, []byte(pol), 0o644); err != nil {
		t.Fatal(err)
	}
	token := "tok-for-shebang-tools-3f9d"
	lib := shimtest.Lib(t)
	run := func(argv ...string) string {
		t.Helper()
		cmd := exec.Command(exe, append([]string{"run", "--policy", polFile, "--"}, argv...)...)
		cmd.Env = []string{"PATH=" + sys + ":/usr/bin:/bin", "HOME=" + home, "SHEBANG_TOKEN=" + token, "ENVSIEVE_SHIM=" + lib}
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		b, _ := cmd.CombinedOutput()
		out := strings.ReplaceAll(string(b), token, "<token>")
		if out != string(b) {
			t.Errorf("the token reached the output: %q", out)
		}
		return out
	}
	// The agent's own node, planted in a directory it owns, for the
	// caller's PATH: a granted script still runs the launch's node.
	evil := filepath.Join(home, "evil")
	if err := os.Mkdir(evil, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(evil, "node"), []byte("#!/bin/sh\necho \"planted node: token-length=${#SHEBANG_TOKEN}\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if os.Getuid() == 0 {
		for _, p := range []string{evil, filepath.Join(evil, "node")} {
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
	n := strconv.Itoa(len(token))
	for _, tc := range []struct {
		name, script string
		want, not    []string
	}{
		{"the caller's PATH finds a planted node", "PATH=" + evil + ":$PATH tool-node",
			[]string{"tool-node: token-length=" + n + " marker=none\n", "tool-node child: token-length=0\n"}, []string{"planted node"}},
		{"the caller names another interpreter", "ENVSIEVE_SHIM_INTERP=sh:/bin/sh tool-node",
			[]string{"tool-node: token-length=" + n + " marker=none\n", "tool-node child: token-length=0\n"}, nil},
		{"env -S", "tool-env-s", []string{"tool-env-s: token-length=0\n"}, nil},
		{"a second env hop in the script's child", "tool-node; node -e 'require(\"child_process\").execFileSync(\"/usr/bin/env\", [\"node\", \"-e\", \"console.log(\\\"hop: token-length=\\\" + (process.env.SHEBANG_TOKEN || \\\"\\\").length)\"], {stdio: \"inherit\"})'",
			[]string{"tool-node: token-length=" + n + " marker=none\n", "hop: token-length=0\n"}, nil},
	} {
		t.Run("attack/"+tc.name, func(t *testing.T) {
			out := run("bash", "-c", tc.script+"; true")
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("want %q in %q", w, out)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(out, w) {
					t.Errorf("%q in %q", w, out)
				}
			}
		})
	}
	for _, tool := range []string{"tool-node", "tool-py"} {
		for _, tc := range []struct {
			name string
			argv []string
		}{
			{"the first program", []string{tool}},
			{"bash", []string{"bash", "-c", tool + "; true"}},
			{"python subprocess", []string{"python3", "-c", `import subprocess; subprocess.run(["` + tool + `"])`}},
			{"node child_process", []string{"node", "-e", `process.stdout.write(require("child_process").execFileSync("` + tool + `").toString())`}},
		} {
			t.Run(tool+"/"+tc.name, func(t *testing.T) {
				cmd := exec.Command(exe, append([]string{"run", "--policy", polFile, "--"}, tc.argv...)...)
				cmd.Env = []string{"PATH=" + sys + ":/usr/bin:/bin", "HOME=" + home, "SHEBANG_TOKEN=" + token, "ENVSIEVE_SHIM=" + lib}
				cmd.Dir = home
				cmd.SysProcAttr = asUnprivileged()
				b, _ := cmd.CombinedOutput()
				out := strings.ReplaceAll(string(b), token, "<token>")
				if out != string(b) {
					t.Errorf("the token reached the output: %q", out)
				}
				if want := tool + ": token-length=" + strconv.Itoa(len(token)) + " marker=none\n"; !strings.Contains(out, want) {
					t.Errorf("the script did not get its grant (want %q): %q", want, out)
				}
				if want := tool + " child: token-length=0\n"; !strings.Contains(out, want) {
					t.Errorf("the script's child is not without the grant (want %q): %q", want, out)
				}
			})
		}
	}
}

// TestNpmGrant: a rule for npm (a `#!/usr/bin/env node` script) grants its
// token to npm itself, the node process that runs npm-cli.js, and not to
// the scripts npm runs. npm shows it holds the token by expanding
// ${NPM_TEST_TOKEN} in a project's .npmrc, which it refuses to do when the
// variable is unset; `npm run` of a package.json script shows the script
// lacks it, and lacks the copy npm makes of it for its scripts
// (npm_config_x, from x=${NPM_TEST_TOKEN} in the project's .npmrc). As an
// unprivileged user, through bash and as the first program.
func TestNpmGrant(t *testing.T) {
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Fatalf("npm is not installed: %v", err)
	}
	exe, home := unprivilegedCopy(t, "envsieve")
	dir := filepath.Dir(exe)
	pol := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(pol, []byte("version: 1\nredact: {enabled: false, entropy: false}\nrules:\n"+
		"  - name: npm\n    match: {command: npm}\n    allow: [NPM_TEST_TOKEN]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	token := "tok-for-npm-only-a81c"
	lib := shimtest.Lib(t)
	// Two projects, owned by the unprivileged user: one whose .npmrc npm
	// expands, one with a script.
	cfg := filepath.Join(home, "cfg")
	pkg := filepath.Join(home, "pkg")
	files := map[string]string{
		filepath.Join(cfg, "package.json"): `{"name": "cfg", "version": "1.0.0"}`,
		filepath.Join(cfg, ".npmrc"):       "init-author-name=${NPM_TEST_TOKEN}\n",
		// npm gives its scripts what it expanded as npm_config_x.
		filepath.Join(pkg, ".npmrc"):       "x=${NPM_TEST_TOKEN}\n",
		filepath.Join(pkg, "package.json"): `{"name": "pkg", "version": "1.0.0", "scripts": {"show": "node -e \"console.log('npm script: token-length=' + (process.env.NPM_TEST_TOKEN || '').length + ' copy-length=' + (process.env.npm_config_x || '').length)\""}}`,
	}
	for p, data := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		if os.Getuid() == 0 {
			if err := os.Chown(filepath.Dir(p), 65534, 65534); err != nil {
				t.Fatal(err)
			}
			if err := os.Chown(p, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := func(wd string, argv ...string) string {
		t.Helper()
		cmd := exec.Command(exe, append([]string{"run", "--policy", pol, "--"}, argv...)...)
		cmd.Env = []string{"PATH=" + filepath.Dir(npm) + ":/usr/bin:/bin", "HOME=" + home, "NPM_TEST_TOKEN=" + token, "ENVSIEVE_SHIM=" + lib}
		cmd.Dir = wd
		cmd.SysProcAttr = asUnprivileged()
		b, _ := cmd.CombinedOutput()
		return string(b)
	}
	flags := "--offline --no-update-notifier --no-fund --no-audit"
	for _, tc := range []struct {
		name string
		argv []string
	}{
		{"the first program", append([]string{"npm"}, strings.Fields(flags)...)},
		{"bash", []string{"bash", "-c", "npm " + flags + ` "$@"; true`, "bash"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// npm expands the .npmrc with the token it holds; the test
			// compares, and never prints, what it printed.
			got := run(cfg, append(tc.argv, "config", "get", "init-author-name")...)
			if strings.TrimSpace(got) != token {
				t.Errorf("npm did not get its grant: %q", strings.ReplaceAll(got, token, "<token>"))
			}
			got = run(pkg, append(tc.argv, "run", "--silent", "show")...)
			if strings.Contains(got, token) {
				t.Errorf("the token reached the output: %q", strings.ReplaceAll(got, token, "<token>"))
			}
			if !strings.Contains(got, "npm script: token-length=0 copy-length=0\n") {
				t.Errorf("the script npm ran is not without the grant: %q", got)
			}
		})
	}
}
