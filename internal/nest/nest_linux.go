package nest

import (
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

func parent() int { return os.Getppid() }

// readProc reads comm and ppid from /proc/PID/stat: "pid (comm) state ppid
// ...", where comm may hold spaces and parentheses, so it ends at the last
// ')'. Raw system calls into a stack buffer: a top-level launch reads every
// ancestor, and os.ReadFile cost ~12 µs and 10 allocations a level.
func readProc(pid int) (string, int, bool) {
	var path [32]byte
	p := append(append(path[:0], "/proc/"...), strconv.Itoa(pid)...)
	p = append(p, "/stat\x00"...)
	fd, err := unix.Open(string(p[:len(p)-1]), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", 0, false
	}
	var buf [512]byte // comm is at most 15 bytes: the fields up to ppid fit
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil || n <= 0 {
		return "", 0, false
	}
	return parseStat(string(buf[:n]))
}

// Disclaim renames this process (the comm of its main thread) to name, so
// that the walk of a process it starts does not take it for a launcher: for
// an envsieve verb that runs a launch to test it (verify), and so must not
// make that launch nested. name must not be one [Launcher] knows.
func Disclaim(name string) error {
	if Launcher(name) {
		return fmt.Errorf("nest: %q is a launcher's name", name)
	}
	return os.WriteFile("/proc/self/comm", []byte(name), 0)
}
