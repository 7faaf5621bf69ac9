package main

import (
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestLeavesNothing: the CLI's tests that build the shim, run scripts (the
// shim's socket among them) and start a daemon on a socket leave nothing in
// TMPDIR, a TMPDIR too deep for a socket's path (testscript.Main ends in
// os.Exit, so TestMain's own clean-up cannot be a deferred call).
func TestLeavesNothing(t *testing.T) {
	shimtest.LeavesNothing(t, `^(TestScripts|TestDaemonSIGTERM)$/^(shim_grants|scan)$`)
}
