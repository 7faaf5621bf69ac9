//go:build !linux

package seal

import "errors"

// Available is Linux-only: elsewhere it says so.
func Available() error {
	return errors.New("the sealed filesystem view is Linux-only (mount namespaces)")
}

// Apply is Linux-only: elsewhere it returns an error, and the caller must
// not start the program.
func Apply(Spec) error {
	return errors.New("seal: the sealed filesystem view is Linux-only (mount namespaces)")
}

// LandlockAvailable is Linux-only: elsewhere it says so.
func LandlockAvailable() error { return errors.New("the Landlock seal is Linux-only") }

// LandlockABI is Linux-only: elsewhere it says so.
func LandlockABI() (int, error) { return 0, errors.New("the kernel has no Landlock (Linux only)") }

// Ruleset is Linux-only: elsewhere it returns an error, and the caller
// must not start the program.
func Ruleset(Spec) (int, error) {
	return -1, errors.New("seal: Landlock is Linux-only")
}
