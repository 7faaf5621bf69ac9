//go:build unix

package launch

import (
	"os"
	"syscall"
)

// lockView takes the lock of an agent's view (viewLock), without waiting:
// held while its launcher lives, and let go by the kernel when the
// launcher ends, killed too. It fails when another holds it.
func lockView(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}
