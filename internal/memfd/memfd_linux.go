//go:build linux

package memfd

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// New returns a read-only descriptor of an anonymous memory file holding
// value, sealed so that nothing can change, grow or shrink it. No other
// process can open it by a path: a child gets it only by inheriting the
// descriptor (see [Inherit]) and opens it as "/dev/fd/N" (secret.FDPath). It
// never touches a disk, and nothing is left behind when every holder exits.
// The descriptor is close-on-exec until the caller says otherwise.
func New(name, value string) (*os.File, error) {
	fd, err := unix.MemfdCreate("envsieve-"+name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("secret %s: memfd: %w", name, err)
	}
	rw := os.NewFile(uintptr(fd), "memfd:"+name)
	defer rw.Close()
	if _, err := rw.WriteString(value); err != nil {
		return nil, fmt.Errorf("secret %s: memfd: %w", name, err)
	}
	seals := unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		return nil, fmt.Errorf("secret %s: memfd seals: %w", name, err)
	}
	// Hand out a read-only descriptor of the same file.
	ro, err := unix.Open("/proc/self/fd/"+strconv.Itoa(fd), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("secret %s: memfd: reopen read-only: %w", name, err)
	}
	return os.NewFile(uintptr(ro), "memfd:"+name), nil
}

// Inherit clears close-on-exec on f, so that every program the caller
// starts or execs from now on inherits it at the same number.
func Inherit(f *os.File) error {
	_, err := unix.FcntlInt(f.Fd(), unix.F_SETFD, 0)
	return err
}

// Supported reports whether this system delivers secrets as memory
// files.
const Supported = true
