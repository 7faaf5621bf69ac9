//go:build linux

package shimwire

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// openKnown makes the table of known reports beside the socket, shared
// with the tree read-only (the shim checks that it and its directory are
// this user's). Without it the shim reports as it always did.
func (s *Server) openKnown() {
	f, err := os.OpenFile(filepath.Join(s.dir, KnownName), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	if err := f.Truncate(knownSlots * 8); err != nil {
		return
	}
	m, err := unix.Mmap(int(f.Fd()), 0, knownSlots*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return
	}
	s.known = m
}

// closeKnown unmaps and removes the table; no connection is served any
// more.
func (s *Server) closeKnown() {
	if s.known != nil {
		unix.Munmap(s.known)
		s.known = nil
	}
	unix.Unlink(filepath.Join(s.dir, KnownName))
}
