//go:build !linux

package nest

func parent() int { return 0 }

// readProc is nil where there is no /proc: only the marker is checked.
var readProc Proc
