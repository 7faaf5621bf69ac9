package launch

import (
	"os"
	"syscall"
)

// statStamp is what tells a file's change: its inode (a rename over it),
// size, and modification and change times.
func statStamp(st *syscall.Stat_t) [5]int64 {
	return [5]int64{int64(st.Dev), int64(st.Ino), st.Size, st.Mtim.Nano(), st.Ctim.Nano()}
}

// mountInfo returns the mounts of this process's mount namespace
// (/proc/self/mountinfo); nil when it cannot be read.
func mountInfo() []byte {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	return b
}
