//go:build !linux && !windows

package shimwire

import (
	"errors"
	"net"
	"os"
)

// errNoPeerCred: the shim and its socket are Linux-only.
var errNoPeerCred = errors.New("the shim's socket is Linux-only: peer credentials are not checked here")

// acceptNow is Linux-only: elsewhere nothing is drained.
func acceptNow(fd int) (int, error) { return -1, errNoPeerCred }

// unlinkAll removes the socket's directory.
func unlinkAll(path, dir string) error {
	if err := os.RemoveAll(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// peerPID is Linux-only.
func peerPID(*net.UnixConn) int { return -1 }

// gone is Linux-only: the server does not start programs elsewhere.
func gone(*net.UnixConn) bool { return false }
