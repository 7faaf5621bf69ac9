//go:build linux

package shimwire

import (
	"errors"
	"net"
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

// peerPID returns the pid of the process at the other end of c, as the
// launcher's pid namespace numbers it; -1 when unknown.
func peerPID(c *net.UnixConn) int {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1
	}
	pid := -1
	raw.Control(func(fd uintptr) {
		if cred, err := unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED); err == nil {
			pid = int(cred.Pid)
		}
	})
	return pid
}

// gone reports whether the peer of c has closed its end: a start request's
// caller that gave up waiting.
func gone(c *net.UnixConn) bool {
	raw, err := c.SyscallConn()
	if err != nil {
		return true
	}
	closed := false
	raw.Control(func(fd uintptr) {
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		n, err := unix.Poll(pfd, 0)
		closed = err == nil && n > 0 && pfd[0].Revents&(unix.POLLHUP|unix.POLLRDHUP|unix.POLLERR) != 0
	})
	return closed
}
