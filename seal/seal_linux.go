//go:build linux

package seal

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Available returns nil when this system lets an unprivileged process
// create the user namespace the seal needs, else an error saying what
// refuses it and how to allow it. It reads the kernel's switches; a refusal
// it cannot see (a seccomp filter of a container) shows when the launch
// starts, as an error.
func Available() error {
	read := func(p string) string {
		// Not os.ReadFile: a file of /proc is pollable, and os would
		// start Go's network poller (an epoll, an eventfd, a thread that
		// may wait in it) for three reads in a launcher that then execs.
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return ""
		}
		defer unix.Close(fd)
		var b [32]byte
		n, err := unix.Read(fd, b[:])
		if err != nil || n <= 0 {
			return ""
		}
		return string(b[:n-1])
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
// already bound beneath it stays), read-only or as it is; then each held
// directory, the shallowest first, is replaced by a copy (freeze). A path
// that does not exist is skipped (nothing to hide, nothing to write); any
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
		switch src := s.Fake[p]; {
		case fi.IsDir():
			err = unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=0,mode=0500")
		case src != "":
			err = readOnlyBind(src, p) // its fake (Spec.Fake)
		default:
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
	// Each masked path, and its fake's source ("" for none).
	masked := map[string]string{}
	for _, m := range s.Mask {
		masked[filepath.Clean(m)] = s.Fake[m]
	}
	dirs := make([]string, 0, len(s.Hold))
	for _, d := range s.Hold {
		dirs = append(dirs, filepath.Clean(d))
	}
	sortShallowFirst(dirs)
	for _, d := range dirs {
		if err := freeze(d, masked); err != nil {
			return fmt.Errorf("seal %s: %w", d, err)
		}
	}
	return nil
}

// freeze replaces dir, in this mount namespace, by a read-only tmpfs that
// holds its entries as they are now: each one bound back from where it
// is (recursively, so what is mounted beneath it stays, read-only or
// writable as it was), a symbolic link made anew, a masked one an empty
// file or directory in its place. A mount over a masked file alone is
// undone in this namespace when the file is renamed over or deleted
// outside it, and the new file would show; in the copy, the masked name
// is nobody's mount point, and what happens to the real directory's names
// (a file replaced, deleted and made anew, a directory renamed and another
// made in its place) does not reach it. A masked file with a fake (its
// source in masked) has the fake bound read-only on its stand-in. An
// entry that cannot be reached
// (a dead FUSE mount) is left out, or stays an empty stand-in. A
// directory that does not exist is skipped.
func freeze(dir string, masked map[string]string) error {
	src, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return err
	}
	defer unix.Close(src)
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return err
	}
	f, err := os.Open(fmt.Sprintf("/proc/self/fd/%d", src))
	if err != nil {
		return err
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return err
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
		return err
	}
	for _, name := range names {
		p := filepath.Join(dir, name)
		from := fmt.Sprintf("/proc/self/fd/%d/%s", src, name)
		var est unix.Stat_t
		if err := unix.Fstatat(src, name, &est, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			// Gone since the listing, or unreachable (a FUSE mount whose
			// server died): left out of the copy.
			continue
		}
		isDir := est.Mode&unix.S_IFMT == unix.S_IFDIR
		switch {
		case est.Mode&unix.S_IFMT == unix.S_IFLNK:
			if target, err := readlinkat(src, name); err == nil {
				if err := unix.Symlink(target, p); err != nil {
					return err
				}
			}
			continue
		case isDir:
			err = unix.Mkdir(p, 0o500)
		default:
			var fd int
			fd, err = unix.Open(p, unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o400)
			if err == nil {
				unix.Close(fd)
			}
		}
		if err != nil {
			return err
		}
		if fake, ok := masked[p]; ok {
			if fake != "" && !isDir {
				if err := readOnlyBind(fake, p); err != nil {
					return err
				}
			}
			continue // the empty stand-in, or the fake
		}
		// One that cannot be bound back (unreachable) stays an empty
		// stand-in: nothing of it shows.
		_ = unix.Mount(from, p, "", unix.MS_BIND|unix.MS_REC, "")
	}
	// The directory's own mode, once its entries are in.
	if err := unix.Chmod(dir, st.Mode&0o7777); err != nil {
		return err
	}
	return unix.Mount("", dir, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "")
}

// readlinkat returns the target of the symbolic link name in dirfd.
func readlinkat(dirfd int, name string) (string, error) {
	for n := 256; ; n *= 2 {
		b := make([]byte, n)
		got, err := unix.Readlinkat(dirfd, name, b)
		if err != nil {
			return "", err
		}
		if got < n {
			return string(b[:got]), nil
		}
	}
}

// readOnlyBind binds src over dst and makes the bind read-only.
func readOnlyBind(src, dst string) error {
	if err := unix.Mount(src, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return err
	}
	return unix.Mount("", dst, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "")
}
