//go:build linux

package broker

import (
	"errors"
	"fmt"
	"net"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// diagSeq numbers the questions to the kernel.
var diagSeq atomic.Uint32

// peerUID returns the user that owns the other end of a loopback TCP
// connection: one exact sock_diag lookup of the peer's socket by its
// 4-tuple, established only (diag.go), over a netlink socket of its own.
// No answer, or anything but one established socket, is an error.
func peerUID(c net.Conn) (int, error) {
	la, ok1 := c.LocalAddr().(*net.TCPAddr)
	ra, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return -1, errors.New("not a TCP connection")
	}
	s := diagSocket{local: ra.AddrPort(), remote: la.AddrPort()}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return -1, fmt.Errorf("sock_diag: %w", err)
	}
	defer unix.Close(fd)
	// The kernel answers at once; a second is for a machine under load.
	tv := unix.Timeval{Sec: 1}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return -1, fmt.Errorf("sock_diag: %w", err)
	}
	seq := diagSeq.Add(1)
	kernel := &unix.SockaddrNetlink{Family: unix.AF_NETLINK}
	if err := unix.Sendto(fd, diagRequest(s, seq), 0, kernel); err != nil {
		return -1, fmt.Errorf("sock_diag: %w", err)
	}
	buf := make([]byte, 8192)
	for {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return -1, fmt.Errorf("sock_diag: %w", err)
		}
		if nl, ok := from.(*unix.SockaddrNetlink); !ok || nl.Pid != 0 {
			return -1, errors.New("sock_diag: an answer not from the kernel")
		}
		if n >= len(buf) {
			return -1, errors.New("sock_diag: an answer too long")
		}
		return diagAnswerUID(buf[:n], s, seq)
	}
}
