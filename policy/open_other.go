//go:build !unix

package policy

import (
	"io/fs"
	"os"
)

// openNoFollow refuses a link seen by Lstat, then opens path: this system
// has no O_NOFOLLOW.
func openNoFollow(path string) (*os.File, error) { return openStat(path) }

// openStat is used where no-follow opening is not available: it refuses a
// link seen by Lstat before opening.
func openStat(path string) (*os.File, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return nil, errSymlink
	}
	if !fi.Mode().IsRegular() {
		return nil, notRegular(fi)
	}
	return os.Open(path)
}

// checkOwner has no owner to check on this system.
func checkOwner(fs.FileInfo) error { return nil }
