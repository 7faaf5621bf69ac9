//go:build !linux

package launch

import (
	"fmt"
	"os"
	"syscall"

	"github.com/envsieve/envsieve/seal"
)

// errIsolateLinux says where --isolate works.
var errIsolateLinux = fmt.Errorf("--isolate: %w: user, pid and mount namespaces are Linux-only", errNamespaces)

// Isolate is Linux-only: elsewhere it returns an error wrapping
// [errNamespaces], and nothing is started.
func Isolate(c *Cmd) (*Cmd, error) { return nil, errIsolateLinux }

func isolateWith(c *Cmd, init string) (*Cmd, error) { return nil, errIsolateLinux }

func isolateSealedWith(c *Cmd, spec seal.Spec, init string) (*Cmd, error) {
	return nil, errIsolateLinux
}

// IsolateInit is Linux-only: elsewhere it says so and returns 125.
func IsolateInit(args []string) int {
	fmt.Fprintf(os.Stderr, "envsieve: %v\n", errIsolateLinux)
	return 125
}

// isolateAttr is never used where Isolate fails.
func isolateAttr() *syscall.SysProcAttr { return nil }

// noSeccomp is false where Isolate fails: nothing is exec'd in place.
func noSeccomp() bool { return false }
