package shim_test

import (
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestLeavesNothing: the shim's tests, which build it and serve its socket,
// leave nothing in TMPDIR, a TMPDIR too deep for a socket's path.
func TestLeavesNothing(t *testing.T) {
	shimtest.LeavesNothing(t, `^(TestHideC|TestStartGrants|TestServerGarbage)$`)
}
