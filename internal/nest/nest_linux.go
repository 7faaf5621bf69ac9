package nest

import (
	"os"
	"strconv"
)

func parent() int { return os.Getppid() }

// readProc reads comm and ppid from /proc/PID/stat: "pid (comm) state ppid
// ...", where comm may hold spaces and parentheses, so it ends at the last
// ')'.
func readProc(pid int) (string, int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	return parseStat(string(b))
}
