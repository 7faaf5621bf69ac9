// Package peercred tells who is at the other end of a unix socket: the uid
// the kernel recorded for the peer when it connected, not anything the peer
// says. The daemon and the shim's socket use it to serve their own user
// only.
//
// It works on Linux (SO_PEERCRED) and macOS (LOCAL_PEERCRED); elsewhere
// [UID] returns an error, so a caller that refuses a peer it cannot identify
// fails closed.
package peercred

import (
	"errors"
	"net"
)

// ErrUnsupported is returned (wrapped) where peer credentials cannot be
// read. Use errors.Is.
var ErrUnsupported = errors.New("peer credentials of a unix socket are not available on this system")

// UID returns the uid of the process at the other end of c.
func UID(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	uid, cerr := -1, error(nil)
	if err := raw.Control(func(fd uintptr) { uid, cerr = uidOf(int(fd)) }); err != nil {
		return -1, err
	}
	return uid, cerr
}
