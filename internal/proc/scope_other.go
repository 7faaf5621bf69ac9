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

// ScopeWith is Linux-only: elsewhere it is an error wrapping ErrNoScope.
func ScopeWith(c *Cmd, init string) (*Cmd, error) { return nil, fmt.Errorf("%w here", ErrNoScope) }

// ScopeSealedWith is Linux-only: elsewhere it is an error wrapping
// ErrNoScope.
func ScopeSealedWith(c *Cmd, spec seal.Spec, init string) (*Cmd, error) {
	return nil, fmt.Errorf("%w here", ErrNoScope)
}

// ExecScopedEnv is Linux-only: elsewhere it is an error wrapping
// ErrNoScope.
func ExecScopedEnv(spec seal.Spec) (string, error) { return "", fmt.Errorf("%w here", ErrNoScope) }

// passRuleset has nothing to pass outside Linux.
func (c *Cmd) passRuleset() func() { return func() {} }

// Restrict is Linux-only: elsewhere it returns an error, and the caller
// must not start the program.
func Restrict(seal.Spec) error { return fmt.Errorf("seal: %w here", ErrNoScope) }

// ScopeInit is Linux-only.
func ScopeInit(args []string) int {
	fmt.Fprintln(os.Stderr, "envsieve: scope: Linux only")
	return 125
}
