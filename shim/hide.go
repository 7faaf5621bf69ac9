package shim

import "fmt"

// What the shim can hide (MAX_HIDE and MAX_REPORT_NAME in
// libenvsieve/envsieve.c; TestHideLimits keeps the two in step).
const (
	// MaxHide is the number of keys one process can hide.
	MaxHide = 64
	// MaxHideName is the longest name it can hide, in bytes.
	MaxHideName = 256
)

// CheckHide returns an error when the shim cannot hide every key of keys:
// a launch must then not start, since keys past the limit would stay
// listed (the shim drops them outright, but a launcher must not rely on a
// fallback to keep its promise).
func CheckHide(keys []string) error {
	if len(keys) > MaxHide {
		return fmt.Errorf("the shim can hide at most %d keys, and the policy hides %d", MaxHide, len(keys))
	}
	for _, k := range keys {
		if len(k) > MaxHideName {
			return fmt.Errorf("the shim can hide names of at most %d bytes, and %.40s... has %d", MaxHideName, k, len(k))
		}
	}
	return nil
}

// MaxSocketPath is the longest path a unix socket may have: sun_path's
// 108 bytes, less the terminating NUL.
const MaxSocketPath = 107
