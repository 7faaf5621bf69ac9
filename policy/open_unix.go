//go:build unix

package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// openNoFollow opens path for reading without following a symbolic link
// and without blocking on a FIFO.
func openNoFollow(path string) (*os.File, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC|syscall.O_NOCTTY, 0)
	if errors.Is(err, syscall.ELOOP) {
		// ELOOP with O_NOFOLLOW: the last component is a link. Say so
		// only when it really is one.
		if fi, lerr := os.Lstat(path); lerr == nil && fi.Mode()&os.ModeSymlink != 0 {
			return nil, errSymlink
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// checkOwner refuses a file that is neither the effective user's nor
// root's: another user could change what the policy says.
func checkOwner(fi fs.FileInfo) error {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if uid := uint32(os.Geteuid()); st.Uid != uid && st.Uid != 0 {
		return notPolicy(fmt.Sprintf("owned by uid %d, not by you (uid %d) or root", st.Uid, uid))
	}
	return nil
}
