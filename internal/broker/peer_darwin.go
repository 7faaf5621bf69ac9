//go:build darwin

package broker

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"
)

// peerUID returns the user that owns the other end of a loopback TCP
// connection, from the kernel's table of TCP connections (the sysctl
// net.inet.tcp.pcblist_n, read by pcbListUID): the one entry whose local
// end is the connection's remote one and whose foreign end is its local
// one. That entry's so_uid is the effective uid of the process that
// created the peer's socket.
func peerUID(c net.Conn) (int, error) {
	local, remote, err := tcpEnds(c)
	if err != nil {
		return -1, err
	}
	buf, err := tcpPCBList()
	if err != nil {
		return -1, err
	}
	uid, err := pcbListUID(buf, remote, local)
	if err != nil {
		return -1, fmt.Errorf("the peer %s: %w", remote, err)
	}
	return uid, nil
}

// tcpPCBList reads net.inet.tcp.pcblist_n. The kernel sizes the buffer
// with room for an eighth more connections; past that, the read fails
// with ENOMEM and is tried again.
func tcpPCBList() ([]byte, error) {
	var err error
	for range 3 {
		var buf []byte
		buf, err = unix.SysctlRaw("net.inet.tcp.pcblist_n")
		if err == nil {
			return buf, nil
		}
		if !errors.Is(err, unix.ENOMEM) {
			break
		}
	}
	return nil, fmt.Errorf("sysctl net.inet.tcp.pcblist_n: %w", err)
}

// tcpEnds returns a TCP connection's local and remote ends.
func tcpEnds(c net.Conn) (local, remote netip.AddrPort, err error) {
	la, ok1 := c.LocalAddr().(*net.TCPAddr)
	ra, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return local, remote, errors.New("not a TCP connection")
	}
	return la.AddrPort(), ra.AddrPort(), nil
}
