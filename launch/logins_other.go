//go:build !linux

package launch

import "syscall"

// statStamp is what tells a file's change: its inode (a rename over it),
// size, and modification and change times.
func statStamp(st *syscall.Stat_t) [5]int64 {
	return [5]int64{int64(st.Dev), int64(st.Ino), st.Size, st.Mtimespec.Nano(), st.Ctimespec.Nano()}
}

// mountInfo is nil: only Linux has a namespace seal whose fakes are mounts.
func mountInfo() []byte { return nil }
