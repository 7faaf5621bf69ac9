//go:build unix

package daemon

import (
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
)

// TestLeavesNothing: the daemon's tests that build the shim and listen on
// sockets leave nothing in TMPDIR, a TMPDIR too deep for a socket's path.
func TestLeavesNothing(t *testing.T) {
	shimtest.LeavesNothing(t, `^(TestDaemonHidesAsRunDoes|TestDaemonSocket|TestDaemonLayers)$`)
}
