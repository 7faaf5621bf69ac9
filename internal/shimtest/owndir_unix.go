//go:build unix

package shimtest

import (
	"os"
	"syscall"
)

// ownDir reports whether p is a directory (not a link) this user owns
// and no one else may write.
func ownDir(p string) bool {
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid() && fi.Mode().Perm()&0o022 == 0
}
