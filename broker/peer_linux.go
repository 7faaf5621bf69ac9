//go:build linux

package broker

import (
	"bufio"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// peerUID returns the user that owns the other end of a loopback TCP
// connection, from the kernel's socket table (/proc/net/tcp and tcp6):
// the entry whose local address is the connection's remote one and whose
// remote address is its local one.
func peerUID(c net.Conn) (int, error) {
	la, ok1 := c.LocalAddr().(*net.TCPAddr)
	ra, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return -1, errors.New("not a TCP connection")
	}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		uid, err := findUID(table, ra, la)
		if err == nil {
			return uid, nil
		}
		if !errors.Is(err, errNoEntry) {
			return -1, err
		}
	}
	return -1, fmt.Errorf("the peer %s is in no socket table", ra)
}

var errNoEntry = errors.New("no entry")

func findUID(table string, local, remote *net.TCPAddr) (int, error) {
	f, err := os.Open(table)
	if err != nil {
		return -1, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 {
			continue
		}
		if !sameAddr(fields[1], local) || !sameAddr(fields[2], remote) {
			continue
		}
		return strconv.Atoi(fields[7])
	}
	return -1, errNoEntry
}

// sameAddr compares a table's "HEXIP:HEXPORT" (the IP in the kernel's
// byte order, 32-bit words little-endian) with a.
func sameAddr(field string, a *net.TCPAddr) bool {
	hip, hport, ok := strings.Cut(field, ":")
	if !ok {
		return false
	}
	port, err := strconv.ParseUint(hport, 16, 16)
	if err != nil || int(port) != a.Port {
		return false
	}
	raw, err := hex.DecodeString(hip)
	if err != nil {
		return false
	}
	ip := make(net.IP, len(raw))
	for i := 0; i+4 <= len(raw); i += 4 {
		ip[i], ip[i+1], ip[i+2], ip[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	return ip.Equal(a.IP)
}
