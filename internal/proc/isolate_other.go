//go:build !linux

package proc

import (
	"fmt"
	"os"
	"syscall"

	"github.com/envsieve/envsieve/seal"
)

// errIsolateLinux says where --isolate works.
var errIsolateLinux = fmt.Errorf("--isolate: %w: user, pid and mount namespaces are Linux-only", ErrNamespaces)

// Isolate is Linux-only: elsewhere it returns an error wrapping
// [ErrNamespaces], and nothing is started.
func Isolate(c *Cmd) (*Cmd, error) { return nil, errIsolateLinux }

func IsolateWith(c *Cmd, init string) (*Cmd, error) { return nil, errIsolateLinux }

func IsolateSealedWith(c *Cmd, spec seal.Spec, init string) (*Cmd, error) {
	return nil, errIsolateLinux
}

// IsolateInit is Linux-only: elsewhere it says so and returns 125.
func IsolateInit(args []string) int {
	fmt.Fprintf(os.Stderr, "envsieve: %v\n", errIsolateLinux)
	return 125
}

// isolateAttr is never used where Isolate fails.
func isolateAttr() *syscall.SysProcAttr { return nil }

// NoSeccomp is false where Isolate fails: nothing is exec'd in place.
func NoSeccomp() bool { return false }
