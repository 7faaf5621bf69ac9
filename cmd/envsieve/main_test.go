package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/envsieve/envsieve/internal/envtest"
)

// TestMain registers envsieve and the helper children: the test binary is the
// child program, dispatched on os.Args[0], and testscript puts copies of it in
// PATH under these names.
func TestMain(m *testing.M) {
	cmds := envtest.Commands()
	cmds["envsieve"] = func() { os.Exit(Main()) }
	cmds["envsieve-sh"] = func() { os.Exit(Main()) }
	testscript.Main(m, cmds)
}

// TestScripts runs the CLI behaviours under testdata/script, one behaviour per
// file.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(e *testscript.Env) error {
			// The scripts must not see the developer's or CI's policy.
			e.Setenv("XDG_CONFIG_HOME", e.WorkDir+"/.config")
			e.Setenv("XDG_DATA_HOME", e.WorkDir+"/.data")
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
			return nil
		},
	})
}

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
