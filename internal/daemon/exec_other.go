//go:build !unix

package daemon

import (
	"os"
)

// killedBy: no signals here.
func killedBy(*os.ProcessState) (int, string, bool) { return 0, "", false }
