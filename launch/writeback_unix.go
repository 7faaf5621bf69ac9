//go:build unix

package launch

import (
	"os"
	"syscall"
)

// chownLike gives f fi's owner when this process may (root writing a
// user's file); otherwise f is the process's own, as the file was.
func chownLike(f *os.File, fi os.FileInfo) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && os.Geteuid() == 0 {
		_ = f.Chown(int(st.Uid), int(st.Gid))
	}
}
