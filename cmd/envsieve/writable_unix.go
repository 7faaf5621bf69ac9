//go:build unix

package main

import "golang.org/x/sys/unix"

// writable reports whether this process may create entries in dir.
func writable(dir string) bool { return unix.Access(dir, unix.W_OK) == nil }
