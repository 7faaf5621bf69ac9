//go:build !linux

package launch

// sweepSocketDirs is Linux-only: elsewhere a killed launcher's socket
// directory stays where the system's temporary files are cleaned.
func sweepSocketDirs(dir string) (wait func()) { return func() {} }
