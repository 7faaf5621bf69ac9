//go:build linux

package pin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// mfdExec asks for an executable memory file where the kernel tells the
// two kinds apart (Linux 6.3, vm.memfd_noexec).
const mfdExec = 0x10 // MFD_EXEC

func open(path string) (*Program, error) {
	src, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	if fi.Size() > MaxSize {
		return nil, fmt.Errorf("%d bytes: %w (%d)", fi.Size(), ErrTooLarge, MaxSize)
	}
	name := "envsieve-pin:" + filepath.Base(path)
	fd, err := unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING|mfdExec)
	if errors.Is(err, unix.EINVAL) {
		fd, err = unix.MemfdCreate(name, unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	}
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	mem := os.NewFile(uintptr(fd), name)
	ok := false
	defer func() {
		if !ok {
			mem.Close()
		}
	}()
	// The copy is made in the kernel where it can (copy_file_range).
	n, err := io.Copy(mem, io.LimitReader(src, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("copy: %w", err)
	}
	if n > MaxSize {
		return nil, fmt.Errorf("%w (%d)", ErrTooLarge, MaxSize)
	}
	if err := unix.Fchmod(fd, 0o500); err != nil {
		return nil, fmt.Errorf("fchmod: %w", err)
	}
	// Sealed before it is hashed: the digest is of bytes nothing can
	// change any more.
	seals := unix.F_SEAL_WRITE | unix.F_SEAL_GROW | unix.F_SEAL_SHRINK | unix.F_SEAL_SEAL
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, seals); err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	h := sha256.New()
	head := make([]byte, 2)
	if _, err := io.Copy(h, io.NewSectionReader(mem, 0, n)); err != nil {
		return nil, fmt.Errorf("hash: %w", err)
	}
	m, _ := mem.ReadAt(head, 0)
	ok = true
	return &Program{File: mem, SHA256: hex.EncodeToString(h.Sum(nil)), Script: m == 2 && string(head) == "#!"}, nil
}

// KeepOpen clears close-on-exec on the memory file, for this process to
// exec its copy in place: a script's interpreter opens it by name after
// the exec.
func (p *Program) KeepOpen() error {
	if _, err := unix.FcntlInt(p.File.Fd(), unix.F_SETFD, 0); err != nil {
		return fmt.Errorf("pinned program: %w", err)
	}
	return nil
}
