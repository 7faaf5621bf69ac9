//go:build !linux

package seal

import "errors"

// Apply is Linux-only: elsewhere it returns an error, and the caller must
// not start the program.
func Apply(Spec) error {
	return errors.New("seal: the sealed filesystem view is Linux-only (mount namespaces)")
}
