package shim

import "fmt"

// What the shim can hide (MAX_HIDE and MAX_REPORT_NAME in
// libenvsieve/envsieve.c; TestHideLimits keeps the two in step).
const (
	// maxHide is the number of keys one process can hide.
	maxHide = 64
	// maxHideName is the longest name it can hide, in bytes.
	maxHideName = 256
)

// CheckHide returns an error when the shim cannot hide every key of keys:
// a launch must then not start, since keys past the limit would stay
// listed (the shim drops them outright, but a launcher must not rely on a
// fallback to keep its promise).
func CheckHide(keys []string) error {
	if len(keys) > maxHide {
		return fmt.Errorf("the shim can hide at most %d keys, and the policy hides %d", maxHide, len(keys))
	}
	for _, k := range keys {
		if len(k) > maxHideName {
			return fmt.Errorf("the shim can hide names of at most %d bytes, and %.40s... has %d", maxHideName, k, len(k))
		}
	}
	return nil
}

// MaxSocketPath is the longest path a unix socket may have: sun_path's
// 108 bytes, less the terminating NUL.
const MaxSocketPath = 107
