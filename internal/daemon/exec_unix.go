//go:build unix

package daemon

import (
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// ownProcessGroup runs cmd in a process group of its own, which a
// cancellation kills whole.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
}

// killedBy returns the signal that killed a command, and its name.
func killedBy(st *os.ProcessState) (int, string, bool) {
	ws, ok := st.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() {
		return 0, "", false
	}
	return int(ws.Signal()), unix.SignalName(ws.Signal()), true
}
