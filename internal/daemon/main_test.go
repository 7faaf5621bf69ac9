package daemon

import (
	"os"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/launch"
)

// TestMain lets the test binary be what the daemon re-executes for a
// session command's Landlock domain (proc.Scope, a sealed session's
// seal), as envsieve-daemon is: then nothing else runs. Otherwise it runs
// the tests and removes what shimtest.Lib built.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == launch.ScopeInitArg {
		os.Exit(launch.ScopeInit(os.Args[2:]))
	}
	os.Exit(shimtest.Main(m))
}
