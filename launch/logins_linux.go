package launch

import (
	"os"
	"syscall"
)

// fileStamp is what tells a file's change: its device and inode (a rename
// over it), size, and modification and change times.
func fileStamp(path string) ([5]int64, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		return [5]int64{}, err
	}
	return [5]int64{int64(st.Dev), int64(st.Ino), st.Size, st.Mtim.Nano(), st.Ctim.Nano()}, nil
}

// mountInfo returns the mounts of this process's mount namespace
// (/proc/self/mountinfo); nil when it cannot be read.
func mountInfo() []byte {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	return b
}

// openNoFollow opens a file of an agent's state dir to copy it: not
// through a link, and never waiting on a FIFO.
const openNoFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
