package daemon

import (
	"os"
	"testing"

	"github.com/envsieve/envsieve/launch"
)

// TestMain lets the test binary be what the daemon re-executes for a
// session command's Landlock domain (launch.Scope, a sealed session's
// seal), as envsieve-daemon is: then nothing else runs.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == launch.ScopeInitArg {
		os.Exit(launch.ScopeInit(os.Args[2:]))
	}
	os.Exit(m.Run())
}
