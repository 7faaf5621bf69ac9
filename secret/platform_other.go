//go:build !unix

package secret

import (
	"io/fs"
	"os"
	"os/exec"
)

// oNoFollow is 0 where there is no O_NOFOLLOW (Windows).
const oNoFollow = 0

// fileOwner is not known here (Windows).
func fileOwner(fs.FileInfo) (int, bool) { return 0, false }

// lockExclusive and unlock do nothing here: two concurrent
// `envsieve secrets set` may lose one update (Windows).
func lockExclusive(*os.File) error { return nil }
func unlock(*os.File)              {}

// ownProcessGroup: a cancellation kills the helper only (Windows).
func ownProcessGroup(*exec.Cmd) {}

// processGone: stale directories are left in place here (Windows).
func processGone(int) bool { return false }
