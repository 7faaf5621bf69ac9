//go:build !linux && !darwin

package broker

import (
	"errors"
	"net"
)

// peerUID cannot find a loopback peer's user here: every connection is
// refused unless the broker serves any user (Config.UID -1).
func peerUID(net.Conn) (int, error) {
	return -1, errors.New("the peer's user of a TCP connection is known on Linux and macOS only")
}
