//go:build linux

package doctor

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// LandlockABI returns the kernel's Landlock ABI version, or an error when
// Landlock is not there (not built in, or not enabled at boot).
func LandlockABI() (int, error) {
	const createRulesetVersion = 1 << 0 // LANDLOCK_CREATE_RULESET_VERSION
	v, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, createRulesetVersion)
	if errno != 0 {
		return 0, fmt.Errorf("landlock_create_ruleset: %w", errno)
	}
	return int(v), nil
}
