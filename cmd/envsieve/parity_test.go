//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/envsieve/envsieve/internal/daemon"
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
	{name: "broker", policy: "version: 1\nallow: [\"MYAPP_*\", GITHUB_TOKEN]\nbrokered: [GITHUB_TOKEN]\nredact: {enabled: true}\n",
		script: `printenv GITHUB_TOKEN; echo "proxy: ${HTTPS_PROXY:+set}"`},
	{name: "seal", policy: "version: 1\nseal: on\nallow: [\"MYAPP_*\"]\nredact: {enabled: true}\n",
		script: `cat "$HOME/.git-credentials" 2>/dev/null | wc -c`},
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

// brokerPort and brokerDir match what differs from one broker to the
// next in the variables it sets: its port and the launch's proxy
// credential, and its private directory.
var (
	brokerPort = regexp.MustCompile(`(envsieve:)?(?:[0-9a-f]+@)?127\.0\.0\.1:[0-9]+`)
	brokerDir  = regexp.MustCompile(`envsieve-broker-[0-9]+`)
)

// parityOutcome is what one way produced.
type parityOutcome struct {
	env    []string // sorted; shim plumbing dropped, /dev/fd/N normalised
	output string
	audit  []string // decision, inject, redaction and seal events, sorted
	// decision is the launch's decision record (launch.Decision) as
	// JSON, without the fields that depend on the door (doorFields).
	decision string
	// door are those fields.
	door map[string]any
}

// doorFields are the fields of the decision record that depend on the
// door, not the request: a server (the daemon, the library here) runs
// every command as its child and seals by Landlock only
// (launch.Host.Server); a single launch (run, sh) may exec in place and
// seal by namespaces.
var doorFields = []string{"seal_by", "seal_why", "resident", "isolate"}

// decisionOf splits a decision record's JSON into the fields every door
// shares and the door's own.
func decisionOf(t *testing.T, raw string) (string, map[string]any) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatalf("decision record %q: %v", raw, err)
	}
	door := map[string]any{}
	for _, f := range doorFields {
		door[f] = m[f]
		delete(m, f)
	}
	b, _ := json.Marshal(m)
	return string(b), door
}

// debugDecision finds the decision record in a launcher's debug output.
func debugDecision(t *testing.T, stderr string) string {
	t.Helper()
	for _, line := range strings.Split(stderr, "\n") {
		if _, rec, ok := strings.Cut(line, "] decision: "); ok {
			return rec
		}
	}
	t.Fatalf("no decision record in the debug output:\n%s", stderr)
	return ""
}

// syncBuffer is a bytes.Buffer the daemon's goroutines write while the
// test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// decisions returns the decision records of the daemon's log, in order.
func (s *syncBuffer) decisions(t *testing.T) []string {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		if msg, _ := ev["msg"].(string); strings.HasPrefix(msg, "decision: ") {
			out = append(out, strings.TrimPrefix(msg, "decision: "))
		}
	}
	return out
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
		// A broker's port and private directory are its own.
		v = brokerDir.ReplaceAllString(brokerPort.ReplaceAllString(v, "${1}127.0.0.1:PORT"), "envsieve-broker-N")
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
			case "decision", "inject", "redaction", "seal", "brokered":
				delete(ev, "time")
				delete(ev, "launch")
				delete(ev, "mechanism") // the door's (doorFields)
				delete(ev, "why")
				b, _ := json.Marshal(ev)
				o.audit = append(o.audit, string(b))
			}
		}
	}
	sort.Strings(o.audit)
	return o
}

// TestParity: the same request through `envsieve run`, through the daemon
// and through the launch package gives the same decision record
// (launch.Decision, but for the fields that depend on the door), the same
// child environment, the same masked output for the same child output,
// and the same audit events (decisions, injections, redaction, seal): the
// three are one launch. A shell string through `envsieve sh` and through
// the daemon's shell form is compared the same way (sh takes no
// --secret: requests that name secrets go through run only).
func TestParity(t *testing.T) {
	t.Parallel()
	lib := shimtest.Lib(t)
	for _, tc := range parityCases {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			dumps := t.TempDir() // outside HOME, which a seal keeps read-only
			for _, d := range []string{".config", ".data", ".run"} {
				if err := os.Mkdir(filepath.Join(home, d), 0o700); err != nil {
					t.Fatal(err)
				}
			}
			polFile := filepath.Join(home, "policy.yaml")
			// sh takes no --audit: the policy names its log, which every
			// other way overrides.
			polText := tc.policy + "audit: {path: " + filepath.Join(home, "sh.jsonl") + "}\n"
			if err := os.WriteFile(polFile, []byte(polText), 0o600); err != nil {
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
			parent := append(parityParent(t, home, shimPath), "ENVSIEVE_DEBUG=1")
			script := func(dump string) string { return "envdump -o " + dump + "; " + tc.script }
			argv := func(dump string) []string { return []string{"/bin/sh", "-c", script(dump)} }
			envsieve := func(name string, args ...string) (stdout, stderr string) {
				t.Helper()
				cmd := exec.Command(binary(t, "envsieve"), args...)
				cmd.Env, cmd.Dir = parent, home
				var out, errb bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errb
				if err := cmd.Run(); err != nil {
					t.Fatalf("envsieve %s: %v; stderr %q", name, err, errb.String())
				}
				return out.String(), errb.String()
			}
			outcome := func(name, stdout, decision string) parityOutcome {
				t.Helper()
				o := readOutcome(t, filepath.Join(dumps, name+".env"), stdout, filepath.Join(home, name+".jsonl"))
				o.decision, o.door = decisionOf(t, decision)
				return o
			}

			// 1. envsieve run.
			args := []string{"run", "--policy", polFile, "--audit", filepath.Join(home, "run.jsonl")}
			if tc.profile != "" {
				args = append(args, "--profile", tc.profile)
			}
			for _, s := range tc.secrets {
				args = append(args, "--secret", s)
			}
			args = append(append(args, "--"), argv(filepath.Join(dumps, "run.env"))...)
			out, errs := envsieve("run", args...)
			viaRun := outcome("run", out, debugDecision(t, errs))
			key, err := secret.InstallKey(filepath.Join(home, ".data", "envsieve", "redact.key"))
			if err != nil {
				t.Fatalf("install key: %v", err)
			}

			// 2. The daemon, with the same environment as its own.
			dlog := &syncBuffer{}
			srv, err := daemon.New(daemon.Config{Policy: pol, Env: parent, RedactKey: key, Shim: shimPath,
				AuditPath: filepath.Join(home, "daemon.jsonl"), Home: home, RuntimeDir: filepath.Join(home, ".run"),
				Log: slog.New(slog.NewJSONHandler(dlog, &slog.HandlerOptions{Level: slog.LevelDebug}))})
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
			daemonExec := func(name string, p daemon.ExecParams) parityOutcome {
				t.Helper()
				var dout, derr bytes.Buffer
				p.SessionID = sid
				res, err := c.Exec(ctx, p, &dout, &derr)
				if err != nil || res.ExitCode != 0 {
					t.Fatalf("daemon exec: %v %+v; stderr %q", err, res, derr.String())
				}
				recs := dlog.decisions(t)
				if len(recs) == 0 {
					t.Fatal("no decision record in the daemon's log")
				}
				return outcome(name, dout.String(), recs[len(recs)-1])
			}
			viaDaemon := daemonExec("daemon", daemon.ExecParams{Argv: argv(filepath.Join(dumps, "daemon.env")), Secrets: tc.secrets})

			// 3. The library.
			la := argv(filepath.Join(dumps, "lib.env"))
			l, err := launch.Build(ctx, &launch.Host{Key: func() ([]byte, error) { return key, nil }, Shim: shimPath,
				AuditPath: filepath.Join(home, "lib.jsonl"), Home: home, RuntimeDir: filepath.Join(home, ".run"), ExtraFiles: true, Server: true,
				Broker: daemon.StartBroker},
				launch.Options{Policy: pol, Parent: parent, Dir: home, Request: sieve.Request{Commands: [][]string{la}, Profile: tc.profile, Secrets: tc.secrets}})
			if err != nil {
				t.Fatal(err)
			}
			rec, err := json.Marshal(l.Decision())
			if err != nil {
				t.Fatal(err)
			}
			var lout bytes.Buffer
			if err := runLibrary(l, &lout); err != nil {
				t.Fatal(err)
			}
			viaLib := outcome("lib", lout.String(), string(rec))

			compare := func(base string, want parityOutcome, ways map[string]parityOutcome) {
				t.Helper()
				for name, o := range ways {
					if o.decision != want.decision {
						t.Errorf("%s: decision record differs from %s's:\n  %s\n  %s", name, base, want.decision, o.decision)
					}
					if !slices.Equal(o.env, want.env) {
						t.Errorf("%s: child environment differs from %s's:\n%s", name, base, diffLines(want.env, o.env))
					}
					if o.output != want.output {
						t.Errorf("%s: output %q, %s's %q", name, o.output, base, want.output)
					}
					if !slices.Equal(o.audit, want.audit) {
						t.Errorf("%s: audit events differ from %s's:\n%s", name, base, diffLines(want.audit, o.audit))
					}
				}
			}
			compare("envsieve run", viaRun, map[string]parityOutcome{"the daemon": viaDaemon, "the library": viaLib})
			// The door's own fields: a server's command is always its
			// child, sealed by Landlock when sealed.
			for name, o := range map[string]parityOutcome{"the daemon": viaDaemon, "the library": viaLib} {
				if o.door["resident"] != true || o.door["isolate"] != false {
					t.Errorf("%s: a server's command is a resident child, never isolated: %v", name, o.door)
				}
				if sb := o.door["seal_by"]; sb != nil && sb != "landlock" {
					t.Errorf("%s: a server's command is sealed by %v, want landlock", name, sb)
				}
			}
			for _, c := range canaries() {
				if strings.Contains(viaRun.output, c) && tc.name != "audit mode" {
					t.Errorf("a canary value (%d bytes) is in the output", len(c))
				}
			}

			// 4. envsieve sh, against the daemon's shell form.
			if len(tc.secrets) > 0 {
				return
			}
			args = []string{"sh", "--policy", polFile, "--no-seal"}
			if tc.profile != "" {
				args = append(args, "--profile", tc.profile)
			}
			out, errs = envsieve("sh", append(args, "-c", script(filepath.Join(dumps, "sh.env")))...)
			viaSh := outcome("sh", out, debugDecision(t, errs))
			// The daemon's shell form writes its own log: the policy's
			// path is the sh's, so it is renamed out of the way first.
			if err := os.Rename(filepath.Join(home, "daemon.jsonl"), filepath.Join(home, "daemon-argv.jsonl")); err != nil {
				t.Fatal(err)
			}
			viaShell := daemonExec("daemon", daemon.ExecParams{Shell: script(filepath.Join(dumps, "daemon.env"))})
			compare("envsieve sh", viaSh, map[string]parityOutcome{"the daemon's shell form": viaShell})
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
