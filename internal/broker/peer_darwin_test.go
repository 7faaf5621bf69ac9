//go:build darwin

package broker

import (
	"net"
	"os"
	"testing"
)

// TestPeerUIDSelf: on a Mac, the peer of a connection this process makes
// to itself is this process's user, over IPv4 and IPv6 loopback. (Linux
// CI has no Mac: there, only pcbListUID's tests run.)
func TestPeerUIDSelf(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Logf("%s: %v", addr, err)
			continue
		}
		defer ln.Close()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for _, conn := range []net.Conn{s, c} {
			uid, err := peerUID(conn)
			if err != nil || uid != os.Getuid() {
				t.Errorf("%s: peer of %s: got %d, %v; want %d", addr, conn.LocalAddr(), uid, err, os.Getuid())
			}
		}
	}
}
