//go:build linux

package shimwire

import (
	"net"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// DoorName is the door's name in the socket's directory. The shim finds it
// beside ENVSIEVE_SHIM_SOCK.
const DoorName = "d"

// The door is a datagram socket beside the server's, for a process that
// may not create a unix socket (Claude Code's Linux sandbox refuses
// socket(AF_UNIX) with a seccomp filter, but not socketpair). Such a
// process makes a connected SOCK_SEQPACKET pair, keeps one end, and sends
// the other to the door in a datagram {Version, 'O'} with SCM_RIGHTS; the
// server serves that end as it serves an accepted connection, with the same
// checks (the peer's uid, as SO_PEERCRED gives it: the pair's maker).
// Anything else that arrives is dropped.
func (s *Server) openDoor() error {
	path := filepath.Join(s.dir, DoorName)
	d, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		return err
	}
	s.door = d
	s.doorDone = make(chan struct{})
	go s.serveDoor()
	return nil
}

func (s *Server) serveDoor() {
	defer close(s.doorDone)
	buf := make([]byte, 16)
	oob := make([]byte, syscall.CmsgSpace(4*4))
	for {
		n, oobn, flags, _, err := s.door.ReadMsgUnix(buf, oob)
		if err != nil {
			return
		}
		files := received(oob[:oobn])
		if flags&(syscall.MSG_TRUNC|syscall.MSG_CTRUNC) != 0 || n != 2 || buf[0] != Version || buf[1] != 'O' || len(files) != 1 {
			closeAll(files)
			s.h.Refused(ErrMessage.Error() + ": a door datagram that is not one connection")
			continue
		}
		c, err := seqpacketConn(files[0])
		files[0].Close()
		if err != nil {
			s.h.Refused(ErrMessage.Error() + ": through the door, " + err.Error())
			continue
		}
		s.start(c)
	}
}

// seqpacketConn returns f as a connection when it is a connected unix
// SOCK_SEQPACKET socket; f stays the caller's to close.
func seqpacketConn(f *os.File) (*net.UnixConn, error) {
	fd := int(f.Fd())
	dom, err1 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_DOMAIN)
	typ, err2 := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE)
	if err1 != nil || err2 != nil || dom != unix.AF_UNIX || typ != unix.SOCK_SEQPACKET {
		return nil, errNotSeqpacket
	}
	if _, err := unix.Getpeername(fd); err != nil {
		return nil, errNotSeqpacket
	}
	c, err := net.FileConn(f)
	if err != nil {
		return nil, err
	}
	uc, ok := c.(*net.UnixConn)
	if !ok {
		c.Close()
		return nil, errNotSeqpacket
	}
	return uc, nil
}

// closeDoor stops the door and waits for its reader.
func (s *Server) closeDoor() {
	if s.door == nil {
		return
	}
	s.door.Close()
	<-s.doorDone
	unix.Unlink(filepath.Join(s.dir, DoorName))
}
