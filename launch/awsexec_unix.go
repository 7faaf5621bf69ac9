//go:build unix

package launch

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// writableByUs reports whether this process's user may write p or, when
// p does not exist, its nearest existing parent (where it could be made).
func writableByUs(p string) bool {
	for {
		if _, err := os.Lstat(p); err == nil || !errors.Is(err, fs.ErrNotExist) {
			return unix.Access(p, unix.W_OK) == nil
		}
		parent := filepath.Dir(p)
		if parent == p {
			return false
		}
		p = parent
	}
}
