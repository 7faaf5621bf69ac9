//go:build !linux

package launch

import (
	"fmt"
	"os"

	"github.com/envsieve/envsieve/seal"
)

// Scope is Linux-only: elsewhere it is an error wrapping errNoScope.
func Scope(c *Cmd) (*Cmd, error) { return nil, fmt.Errorf("%w here", errNoScope) }

// scopeSealed is Linux-only: elsewhere it is an error wrapping errNoScope.
func scopeSealed(c *Cmd, spec seal.Spec) (*Cmd, error) { return nil, fmt.Errorf("%w here", errNoScope) }

// ScopeInit is Linux-only.
func ScopeInit(args []string) int {
	fmt.Fprintln(os.Stderr, "envsieve: scope: Linux only")
	return 125
}
