//go:build !linux

package doctor

import "errors"

// LandlockABI: Landlock is Linux-only.
func LandlockABI() (int, error) { return 0, errors.New("Landlock is Linux-only") }
