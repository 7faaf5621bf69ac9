//go:build !linux

package proc

import (
	"fmt"
	"os"

	"github.com/envsieve/envsieve/seal"
)

// Scope is Linux-only: elsewhere it is an error wrapping ErrNoScope.
func Scope(c *Cmd) (*Cmd, error) { return nil, fmt.Errorf("%w here", ErrNoScope) }

// ScopeSealed is Linux-only: elsewhere it is an error wrapping ErrNoScope.
func ScopeSealed(c *Cmd, spec seal.Spec) (*Cmd, error) { return nil, fmt.Errorf("%w here", ErrNoScope) }

// ScopeInit is Linux-only.
func ScopeInit(args []string) int {
	fmt.Fprintln(os.Stderr, "envsieve: scope: Linux only")
	return 125
}
