//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/daemon"
	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/secret"
	"github.com/envsieve/envsieve/sieve"
)

// parityCase is one request made three ways.
type parityCase struct {
	name    string
	policy  string
	profile string
	secrets []string
	shim    bool
	// script runs in sh -c after the environment is dumped to $DUMP.
	script string
}

var parityCases = []parityCase{
	{name: "profile", policy: "version: 1\nprofiles:\n  agent: {allow: [\"MYAPP_*\"]}\n", profile: "agent",
		script: `echo "mode=$MYAPP_MODE"`},
	{name: "withheld values are masked", policy: "version: 1\nredact: {enabled: true, entropy: false}\nallow: [\"MYAPP_*\"]\n",
		script: `echo "leak: ghp_Zq9XZq9XZq9XZq9XZq9XZq9XZq9XZq9XZq9X and done"`},
	{name: "injected secret", policy: "version: 1\nredact: {enabled: true}\nsecrets:\n  DEPLOY_TOKEN: {from: env}\n",
		secrets: []string{"DEPLOY_TOKEN"}, script: `printenv DEPLOY_TOKEN; printenv DEPLOY_TOKEN | base64`},
	{name: "file secret", policy: "version: 1\nredact: {enabled: true}\nsecrets:\n  FILE_TOKEN: {from: env, deliver: file}\n",
		secrets: []string{"FILE_TOKEN"}, script: `cat "$FILE_TOKEN"; echo`},
	{name: "audit mode", policy: "version: 1\nmode: audit\nredact: {enabled: true}\n",
		script: `echo "kept: ${DB_PASSWORD:+yes}"`},
	{name: "rule", policy: "version: 1\nrules:\n  - {name: shells, match: {command: sh}, allow: [MYAPP_RULE]}\n",
		script: `echo "rule=$MYAPP_RULE"`},
	{name: "block_iteration", shim: true, policy: "version: 1\nallow: [\"MYAPP_*\"]\nblock_iteration: true\nhide: [MYAPP_MODE]\n",
		script: `env | grep -c '^MYAPP_MODE=' || true`},
}

// parityParent is the environment every way starts from.
func parityParent(t *testing.T, home, shim string) []string {
	dump, err := exec.LookPath("envdump")
	if err != nil {
		t.Fatal(err)
	}
	return []string{
		"PATH=" + filepath.Dir(dump) + ":/usr/bin:/bin",
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".data"),
		"XDG_RUNTIME_DIR=" + filepath.Join(home, ".run"),
		"PWD=" + home,
		"LANG=C.UTF-8",
		"MYAPP_MODE=dev",
		"MYAPP_RULE=rule-value",
		"DEPLOY_TOKEN=k-for-deploy-0123456789",
		"FILE_TOKEN=correct-horse-battery-staple",
		"DB_PASSWORD=hunter2-hunter2",
		"GITHUB_TOKEN=ghp" + "_" + strings.Repeat("Zq9X", 9),
		"ENVSIEVE_SHIM=" + shim,
	}
}

// parityOutcome is what one way produced.
type parityOutcome struct {
	env    []string // sorted; shim plumbing dropped, /dev/fd/N normalised
	output string
	audit  []string // decision, inject and redaction events, sorted
}

var fdPath = regexp.MustCompile(`^/dev/fd/[0-9]+$`)

func readOutcome(t *testing.T, dumpFile, output, auditFile string) parityOutcome {
	t.Helper()
	data, err := os.ReadFile(dumpFile)
	if err != nil {
		t.Fatalf("the child wrote no dump: %v", err)
	}
	var o parityOutcome
	for _, kv := range envLines(data) {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case k == "LD_PRELOAD" || strings.HasPrefix(k, "ENVSIEVE_SHIM_") || k == "DUMP":
			continue
		case fdPath.MatchString(v):
			v = "/dev/fd/N"
		}
		o.env = append(o.env, k+"="+v)
	}
	sort.Strings(o.env)
	o.output = output
	if raw, err := os.ReadFile(auditFile); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			var ev map[string]any
			if json.Unmarshal([]byte(line), &ev) != nil {
				t.Fatalf("audit line %q", line)
			}
			switch ev["msg"] {
			case "decision", "inject", "redaction":
				delete(ev, "time")
				delete(ev, "launch")
				b, _ := json.Marshal(ev)
				o.audit = append(o.audit, string(b))
			}
		}
	}
	sort.Strings(o.audit)
	return o
}

// TestParity: the same request through `envsieve run`, through the daemon
// and through the launch package gives the same child environment, the
// same masked output for the same child output, and the same audit
// decisions: the three are one launch.
func TestParity(t *testing.T) {
	lib := shimtest.Lib(t)
	for _, tc := range parityCases {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			for _, d := range []string{".config", ".data", ".run"} {
				if err := os.Mkdir(filepath.Join(home, d), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			polFile := filepath.Join(home, "policy.yaml")
			if err := os.WriteFile(polFile, []byte(tc.policy), 0o600); err != nil {
				t.Fatal(err)
			}
			pol, err := policy.Load(polFile)
			if err != nil {
				t.Fatal(err)
			}
			shimPath := filepath.Join(home, "none.so")
			if tc.shim {
				shimPath = lib
			}
			parent := parityParent(t, home, shimPath)
			argv := func(dump string) []string {
				return []string{"/bin/sh", "-c", "envdump -o " + dump + "; " + tc.script}
			}

			// 1. envsieve run.
			args := []string{"run", "--policy", polFile, "--audit", filepath.Join(home, "run.jsonl")}
			if tc.profile != "" {
				args = append(args, "--profile", tc.profile)
			}
			for _, s := range tc.secrets {
				args = append(args, "--secret", s)
			}
			args = append(append(args, "--"), argv(filepath.Join(home, "run.env"))...)
			cmd := exec.Command(binary(t, "envsieve"), args...)
			cmd.Env, cmd.Dir = parent, home
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("envsieve run: %v; stderr %q", err, errb.String())
			}
			viaRun := readOutcome(t, filepath.Join(home, "run.env"), out.String(), filepath.Join(home, "run.jsonl"))
			key, err := secret.InstallKey(filepath.Join(home, ".data", "envsieve", "redact.key"))
			if err != nil {
				t.Fatalf("install key: %v", err)
			}

			// 2. The daemon, with the same environment as its own.
			srv, err := daemon.New(daemon.Config{Policy: pol, Env: parent, RedactKey: key, Shim: shimPath,
				AuditPath: filepath.Join(home, "daemon.jsonl"), Home: home, RuntimeDir: filepath.Join(home, ".run")})
			if err != nil {
				t.Fatal(err)
			}
			sock := filepath.Join(home, ".run", "d.sock")
			if err := srv.Listen(sock); err != nil {
				t.Fatal(err)
			}
			served := make(chan error, 1)
			go func() { served <- srv.Serve() }()
			defer func() { srv.Shutdown(); <-served }()
			ctx := context.Background()
			c, err := daemon.Dial(ctx, sock)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			id, err := c.Initialize(ctx, "", parent)
			if err != nil {
				t.Fatal(err)
			}
			sid, err := c.NewSession(ctx, id, tc.profile, "")
			if err != nil {
				t.Fatal(err)
			}
			var dout, derr bytes.Buffer
			res, err := c.Exec(ctx, daemon.ExecParams{SessionID: sid, Argv: argv(filepath.Join(home, "daemon.env")), Secrets: tc.secrets}, &dout, &derr)
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("daemon exec: %v %+v; stderr %q", err, res, derr.String())
			}
			viaDaemon := readOutcome(t, filepath.Join(home, "daemon.env"), dout.String(), filepath.Join(home, "daemon.jsonl"))

			// 3. The library.
			la := argv(filepath.Join(home, "lib.env"))
			l, err := launch.Build(ctx, &launch.Host{Key: func() ([]byte, error) { return key, nil }, Shim: shimPath,
				AuditPath: filepath.Join(home, "lib.jsonl"), Home: home, RuntimeDir: filepath.Join(home, ".run"), ExtraFiles: true, Server: true},
				launch.Options{Policy: pol, Parent: parent, Dir: home, Request: sieve.Request{Commands: [][]string{la}, Profile: tc.profile, Secrets: tc.secrets}})
			if err != nil {
				t.Fatal(err)
			}
			var lout bytes.Buffer
			if err := runLibrary(l, &lout); err != nil {
				t.Fatal(err)
			}
			viaLib := readOutcome(t, filepath.Join(home, "lib.env"), lout.String(), filepath.Join(home, "lib.jsonl"))

			for _, way := range []struct {
				name string
				o    parityOutcome
			}{{"the daemon", viaDaemon}, {"the library", viaLib}} {
				if !slices.Equal(way.o.env, viaRun.env) {
					t.Errorf("%s: child environment differs from envsieve run's:\n%s", way.name, diffLines(viaRun.env, way.o.env))
				}
				if way.o.output != viaRun.output {
					t.Errorf("%s: output %q, envsieve run's %q", way.name, way.o.output, viaRun.output)
				}
				if !slices.Equal(way.o.audit, viaRun.audit) {
					t.Errorf("%s: audit events differ from envsieve run's:\n%s", way.name, diffLines(viaRun.audit, way.o.audit))
				}
			}
			for _, c := range canaries() {
				if strings.Contains(viaRun.output, c) && tc.name != "audit mode" {
					t.Errorf("a canary value (%d bytes) is in the output", len(c))
				}
			}
		})
	}
}

// runLibrary runs a built launch as a library user would: Start and Wait.
func runLibrary(l *launch.Plan, out *bytes.Buffer) error {
	var errb bytes.Buffer
	run, err := l.Start(context.Background(), launch.Stdio{Stdout: out, Stderr: &errb})
	if err != nil {
		return err
	}
	if status, err := run.Wait(); err != nil || status != 0 {
		return fmt.Errorf("library run: status %d, %v; stderr %q", status, err, errb.String())
	}
	return nil
}

// diffLines lists the lines only one side has.
func diffLines(want, got []string) string {
	var b strings.Builder
	for _, w := range want {
		if !slices.Contains(got, w) {
			fmt.Fprintf(&b, "  only in envsieve run: %s\n", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			fmt.Fprintf(&b, "  only here: %s\n", g)
		}
	}
	return b.String()
}
