//go:build unix

package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// MaxSocketPath is the longest path a unix socket may have: sun_path's
// size (108 bytes on Linux, 104 on macOS), less the terminating NUL.
const MaxSocketPath = len(unix.RawSockaddrUnix{}.Path) - 1

// privateDir reports why a directory may not hold the socket: it must be
// owned by this process's uid and closed to group and others (0700).
func privateDir(fi fs.FileInfo) error {
	if !fi.IsDir() {
		return errors.New("not a directory")
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("owned by uid %d, not %d", st.Uid, os.Getuid())
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("mode %04o: group or others have access (want 0700)", fi.Mode().Perm())
	}
	return nil
}

// listen takes the socket at path: it makes the directory (0700) when
// missing, refuses a directory others can reach, takes the lock file
// path+".lock" (so two daemons starting at once cannot both replace a stale
// socket), replaces a stale socket, refuses a live one, and makes the new
// socket 0600.
func listen(path string) (*net.UnixListener, *os.File, error) {
	if len(path) > MaxSocketPath {
		return nil, nil, fmt.Errorf("socket %s: %d bytes, longer than a unix socket's path may be (%d)", path, len(path), MaxSocketPath)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("socket directory: %w", err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("socket directory: %w", err)
	}
	if err := privateDir(fi); err != nil {
		return nil, nil, fmt.Errorf("socket directory %s: %w", dir, err)
	}
	lock, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("socket lock: %w", err)
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, nil, fmt.Errorf("%s: %w", path, ErrDaemonRunning)
		}
		return nil, nil, fmt.Errorf("socket lock: %w", err)
	}
	fail := func(err error) (*net.UnixListener, *os.File, error) {
		lock.Close()
		return nil, nil, err
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return fail(fmt.Errorf("%s exists and is not a socket: not replacing it", path))
		}
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return fail(fmt.Errorf("%s: %w", path, ErrDaemonRunning))
		}
		// Nobody answers: a daemon that died left it.
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fail(fmt.Errorf("remove stale socket: %w", err))
		}
	}
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return fail(fmt.Errorf("listen: %w", err))
	}
	ln.SetUnlinkOnClose(true)
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return fail(fmt.Errorf("socket mode: %w", err))
	}
	return ln, lock, nil
}
