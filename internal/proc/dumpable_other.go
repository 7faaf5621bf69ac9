//go:build !linux

package proc

import (
	"errors"
	"fmt"
)

// MakeNonDumpable is Linux-only: elsewhere it returns an error wrapping
// errors.ErrUnsupported, and a process of the same user may read the
// launcher's environment (on macOS, through `ps eww`).
func MakeNonDumpable() error {
	return fmt.Errorf("non-dumpable launcher: %w on this system: a process of the same user can read the launcher's environment", errors.ErrUnsupported)
}
