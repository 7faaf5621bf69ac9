//go:build unix

package envknob

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

const sharedMemory = "/dev/shm"

func sharedMemoryUsable() bool {
	fi, err := os.Stat(sharedMemory)
	return err == nil && fi.IsDir() && fi.Mode()&fs.ModeSticky != 0 &&
		unix.Access(sharedMemory, unix.W_OK|unix.X_OK) == nil
}
