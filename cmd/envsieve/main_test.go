package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/envsieve/envsieve/cmd/internal/daemoncli"
	"github.com/envsieve/envsieve/internal/envtest"
	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestMain registers envsieve and the helper children: the test binary is the
// child program, dispatched on os.Args[0], and testscript puts copies of it in
// PATH under these names.
func TestMain(m *testing.M) {
	cmds := envtest.Commands()
	cmds["envsieve"] = func() { os.Exit(Main()) }
	cmds["envsieve-sh"] = func() { os.Exit(Main()) }
	// envsieve hands 'daemon' and 'client' over to this one, found beside
	// it in the same directory.
	cmds["envsieve-daemon"] = func() { os.Exit(daemoncli.Main(version)) }
	// verify's probe runs copies of itself under other names, as the
	// envsieve binary does: it is dispatched on its argument.
	if len(os.Args) > 1 && (os.Args[1] == probeArg || os.Args[1] == probeEnvArg) {
		os.Exit(Main())
	}
	if _, child := cmds[filepath.Base(os.Args[0])]; child {
		testscript.Main(m, cmds)
		return
	}
	dir, err := os.MkdirTemp("", "envsieve-audit-")
	if err != nil {
		panic(err)
	}
	suiteAudit = filepath.Join(dir, "audit.jsonl")
	// testscript.Main ends in os.Exit, which runs no deferred call: what
	// the run made is removed in auditedRun.Run.
	testscript.Main(auditedRun{m}, cmds)
}

// Parallel tests. A test of the tree here calls t.Parallel when it shares
// nothing process-wide with the others: its own HOME, temp dirs and links
// to the binary, every child's Env set in full, listeners on port 0, no
// t.Setenv or chdir, no deadline a busy machine could miss. Go runs the
// top-level parallel tests after every serial one, -parallel (GOMAXPROCS)
// at a time, so what must not share the machine stays serial: the tests
// that look at other processes in /proc (TestIsolate*, the lifetime tests,
// TestProbeDetects, which also sets HOME), and those that time
// themselves (TestRunNoPrefixOracle). `make quick` waits on this package.

// suiteAudit is the audit log every envsieve started by this package's
// tests writes to (through ENVSIEVE_AUDIT).
var suiteAudit string

// auditedRun runs the tests, then checks the whole suite's audit log.
type auditedRun struct{ m *testing.M }

func (a auditedRun) Run() int {
	defer os.RemoveAll(filepath.Dir(suiteAudit))
	code := shimtest.Main(a.m)
	if code != 0 {
		return code
	}
	if err := checkAuditLog(suiteAudit); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL: audit log:", err)
		return 1
	}
	return 0
}

// canaries are the secret values the tests plant, assembled at run time.
// None may ever appear in an audit log.
func canaries() []string {
	return []string{
		"ghp" + "_" + strings.Repeat("Zq9X", 9),
		"sk-ant-" + strings.Repeat("k3y", 12),
		"wJalrXUtnFEMI",
		"hunter2",
		"correct-horse-battery-staple",
		"AC5ef872f6da5a21de157d80997a64bd",
		"helper-made-value-42",
		"half-printed-value",
		"npm_abcdefghijklmnop",
		"tok-for-gh-only",
		"sk_live_4eC39",
		"fc-123456789",
		"k-for-deploy",
	}
}

// checkAuditLog reads the suite's audit log: it must hold events (so the
// check cannot pass on an empty file) and no canary value.
func checkAuditLog(path string) error {
	data, err := os.ReadFile(path)
	// A run filtered with -run may start no envsieve at all; a full run
	// must have written events, or the check below would prove nothing.
	partial := flag.Lookup("test.run").Value.String() != ""
	if partial && os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if !partial && (!strings.Contains(string(data), `"msg":"decision"`) || !strings.Contains(string(data), `"msg":"inject"`)) {
		return fmt.Errorf("%s holds no decision or inject events (%d bytes): the check would be vacuous", path, len(data))
	}
	for _, c := range canaries() {
		if strings.Contains(string(data), c) {
			return fmt.Errorf("%s holds a canary value (%d bytes long)", path, len(c))
		}
	}
	return nil
}

// TestScripts runs the CLI behaviours under testdata/script, one behaviour per
// file.
func TestScripts(t *testing.T) {
	lib := shimtest.Lib(t)
	// testscript removes the directory of its scripts' work only once every
	// script has run: a filtered run (-run TestScripts/NAME) would leave it
	// in TMPDIR. It makes it in GOTMPDIR: a directory of this test's own,
	// removed at its end.
	gotmp, had := os.LookupEnv("GOTMPDIR")
	os.Setenv("GOTMPDIR", t.TempDir())
	defer func() {
		if had {
			os.Setenv("GOTMPDIR", gotmp)
		} else {
			os.Unsetenv("GOTMPDIR")
		}
	}()
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			// The scripts must not see the developer's or CI's policy.
			e.Setenv("XDG_CONFIG_HOME", e.WorkDir+"/.config")
			e.Setenv("XDG_DATA_HOME", e.WorkDir+"/.data")
			e.Setenv("ENVSIEVE_AUDIT", suiteAudit)
			e.Setenv("XDG_RUNTIME_DIR", e.WorkDir+"/.run")
			if err := os.Mkdir(e.WorkDir+"/.run", 0o700); err != nil {
				return err
			}
			e.Setenv("ENVSIEVE_POLICY", "")
			e.Setenv("ENVSIEVE_PROFILE", "")
			// The installed envsieve, for scripts that run it with env -i.
			exe, err := exec.LookPath("envsieve")
			if err != nil {
				return err
			}
			e.Setenv("TEST_ENVSIEVE", exe)
			// Scripts that test the shim point ENVSIEVE_SHIM here; the
			// others run without it (no library next to the test binary).
			e.Setenv("SHIMLIB", lib)
			// For scripts that build a Go program (a static one, in the
			// middle of a process tree): the test's own Go and build cache.
			e.Setenv("GOCACHE", goEnv("GOCACHE"))
			e.Setenv("GOROOT", goEnv("GOROOT"))
			return nil
		},
	})
}

// goEnv returns `go env NAME`, or "" when go is not found. It runs go once
// per name: every script's setup asks for the same two.
func goEnv(name string) string {
	if v, ok := goEnvs.Load(name); ok {
		return v.(string)
	}
	cmd := exec.Command("go", "env", name)
	cmd.Env = os.Environ()
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	v, _ := goEnvs.LoadOrStore(name, strings.TrimSpace(string(out)))
	return v.(string)
}

// goEnvs holds what goEnv found, by name.
var goEnvs sync.Map

// binary returns the path of the installed copy of the test binary named name.
func binary(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("helper %s is not in PATH: %v", name, err)
	}
	return p
}

// envLines splits envdump output into its KEY=VALUE lines.
func envLines(out []byte) []string {
	s := strings.TrimRight(string(out), "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}
