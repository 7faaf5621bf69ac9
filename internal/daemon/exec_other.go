//go:build !unix

package daemon

import (
	"os"
	"os/exec"
)

// ownProcessGroup: a cancellation kills the command only here.
func ownProcessGroup(*exec.Cmd) {}

// killedBy: no signals here.
func killedBy(*os.ProcessState) (int, string, bool) { return 0, "", false }
