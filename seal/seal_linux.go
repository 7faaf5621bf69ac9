//go:build linux

package seal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// Available returns nil when this system lets an unprivileged process
// create the user namespace the seal needs, else an error saying what
// refuses it and how to allow it. It reads the kernel's switches; a refusal
// it cannot see (a seccomp filter of a container) shows when the launch
// starts, as an error.
func Available() error {
	read := func(p string) string {
		b, err := os.ReadFile(p)
		if err != nil {
			return ""
		}
		return string(b[:len(b)-min(len(b), 1)])
	}
	switch {
	case read("/proc/sys/user/max_user_namespaces") == "0":
		return errors.New("user namespaces are turned off (user.max_user_namespaces = 0)")
	case os.Geteuid() != 0 && read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
		return errors.New("unprivileged user namespaces are turned off (kernel.unprivileged_userns_clone = 0)")
	case os.Geteuid() != 0 && read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
		return errors.New("AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns = 1; an AppArmor profile for envsieve allows them)")
	}
	return nil
}

// Apply masks and write-protects s's paths in the calling thread's mount
// namespace, which must be a private one of its own (--isolate's): a
// masked directory gets an empty read-only tmpfs over it, a masked file
// /dev/null bound read-only over it; then each read-only and each write
// path, the deepest first, is bound on itself (recursively, so what is
// already bound beneath it stays), read-only or as it is. A path that does
// not exist is skipped (nothing to hide, nothing to write); any other
// failure is an error, and the caller must not start the program.
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
	for _, b := range binds(s) {
		if _, err := os.Stat(b.path); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		var err error
		if b.write {
			err = unix.Mount(b.path, b.path, "", unix.MS_BIND|unix.MS_REC, "")
		} else {
			err = readOnlyBind(b.path, b.path)
		}
		if err != nil {
			return fmt.Errorf("seal %s %s: %w", b.path, map[bool]string{false: "read-only", true: "writable"}[b.write], err)
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
