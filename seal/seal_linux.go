//go:build linux

package seal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Apply masks and write-protects s's paths in the calling thread's mount
// namespace, which must be a private one of its own (--isolate's): a
// masked directory gets an empty read-only tmpfs over it, a masked file
// /dev/null bound read-only over it, a read-only path itself bound
// read-only. A path that does not exist is skipped (nothing to hide); any
// other failure is an error, and the caller must not start the program.
func Apply(s Spec) error {
	for _, p := range s.Mask {
		fi, err := os.Stat(p) // follows links: the target is what is masked
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("seal %s: %w", p, err)
		}
		if fi.IsDir() {
			err = unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,mode=0500")
		} else {
			err = readOnlyBind("/dev/null", p)
		}
		if err != nil {
			return fmt.Errorf("seal %s: %w", p, err)
		}
	}
	for _, p := range s.ReadOnly {
		if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := readOnlyBind(p, p); err != nil {
			return fmt.Errorf("seal %s read-only: %w", p, err)
		}
	}
	return nil
}

// readOnlyBind binds src over dst and makes the bind read-only.
func readOnlyBind(src, dst string) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	return unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "")
}
