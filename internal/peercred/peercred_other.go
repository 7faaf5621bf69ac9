//go:build !linux && !darwin

package peercred

func uidOf(int) (int, error) { return -1, ErrUnsupported }
