//go:build linux

package shim

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// acceptNow accepts a connection queued on the listening socket fd without
// waiting (the listener is non-blocking); an error when none is queued.
func acceptNow(fd int) (int, error) {
	nfd, _, err := unix.Accept4(fd, unix.SOCK_CLOEXEC)
	return nfd, err
}

// unlinkAll removes the socket and its directory, falling back to RemoveAll
// when the directory holds something else.
func unlinkAll(path, dir string) error {
	if err := unix.Unlink(path); err != nil && !errors.Is(err, unix.ENOENT) {
		return os.RemoveAll(dir)
	}
	if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
		return os.RemoveAll(dir)
	}
	return nil
}
