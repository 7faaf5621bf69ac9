//go:build unix

package daemon

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// killedBy returns the signal that killed a command, and its name.
func killedBy(st *os.ProcessState) (int, string, bool) {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, "", false
	}
	return int(ws.Signal()), unix.SignalName(ws.Signal()), true
}
