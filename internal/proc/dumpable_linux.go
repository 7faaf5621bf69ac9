//go:build linux

package proc

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// MakeNonDumpable marks the calling process non-dumpable (PR_SET_DUMPABLE 0):
// a child running as the same user can then no longer read the launcher's
// /proc/PID/environ or memory, where the user's secrets live.
func MakeNonDumpable() error {
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("prctl(PR_SET_DUMPABLE): %w", err)
	}
	return nil
}
