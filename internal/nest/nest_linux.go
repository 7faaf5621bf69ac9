package nest

import (
	"fmt"
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
