package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// This file builds Linux's sock_diag question about one TCP connection
// and reads the kernel's answer (peer_linux.go sends one and receives the
// other over a NETLINK_SOCK_DIAG socket). It is a pure function of the
// bytes, built on every OS, so that it is tested and fuzzed anywhere.
//
// The question is an exact lookup, not a dump: SOCK_DIAG_BY_FAMILY with an
// inet_diag_req_v2 naming the peer's socket by its 4-tuple (its local
// address and port are the broker's connection's remote ones, and the
// other way round), which the kernel answers with that one socket's
// inet_diag_msg, or an error (ENOENT when no socket has the tuple). The
// layouts are those of include/uapi/linux/inet_diag.h and netlink.h,
// unchanged since Linux 3.3: integers in the host's order, ports and
// addresses in network order.
//
// # Failing closed
//
// The answer gives the uid only if it is exactly one inet_diag_msg of the
// question's sequence number for a socket in TCP_ESTABLISHED whose family
// is IPv4 or IPv6 and whose ports and addresses (an IPv4-mapped IPv6
// address counting as its IPv4 one) are the question's. A connection that
// has closed is not established: the kernel lists a closed one (TIME_WAIT,
// and an orphaned FIN_WAIT2) with uid 0, which is nobody's answer. An
// error message, a second match, a message of another kind or sequence,
// a short or overlong message, or trailing bytes are each an error.
const (
	nlmsgHdrLen      = 16
	nlmsgError       = 2
	nlmsgDone        = 3
	nlmFRequest      = 0x1
	sockDiagByFam    = 20
	inetDiagReqLen   = 56
	inetDiagMsgLen   = 72
	tcpEstablished   = 1
	diagAFInet       = 2  // AF_INET
	diagAFInet6      = 10 // Linux's AF_INET6
	inetDiagNoCookie = ^uint32(0)
)

// diagSocket names one TCP socket by its own (local) and remote address.
type diagSocket struct {
	local, remote netip.AddrPort
}

// diagRequest returns the netlink message asking for s, with sequence
// number seq.
func diagRequest(s diagSocket, seq uint32) []byte {
	ne := binary.NativeEndian
	b := make([]byte, nlmsgHdrLen+inetDiagReqLen)
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], sockDiagByFam)
	ne.PutUint16(b[6:], nlmFRequest)
	ne.PutUint32(b[8:], seq)
	r := b[nlmsgHdrLen:]
	local, remote := s.local.Addr().Unmap(), s.remote.Addr().Unmap()
	if local.Is4() && remote.Is4() {
		r[0] = diagAFInet
	} else {
		r[0] = diagAFInet6
		local, remote = netip.AddrFrom16(local.As16()), netip.AddrFrom16(remote.As16())
	}
	r[1] = ipprotoTCP
	ne.PutUint32(r[4:], 1<<tcpEstablished)
	putSockID(r[8:], local, s.local.Port(), remote, s.remote.Port())
	return b
}

// putSockID writes an inet_diag_sockid (48 bytes).
func putSockID(b []byte, src netip.Addr, sport uint16, dst netip.Addr, dport uint16) {
	binary.BigEndian.PutUint16(b[0:], sport)
	binary.BigEndian.PutUint16(b[2:], dport)
	copy(b[4:20], src.AsSlice())
	copy(b[20:36], dst.AsSlice())
	binary.NativeEndian.PutUint32(b[36:], 0) // any interface
	binary.NativeEndian.PutUint32(b[40:], inetDiagNoCookie)
	binary.NativeEndian.PutUint32(b[44:], inetDiagNoCookie)
}

// errDiagNone is an answer that names no established socket of the tuple.
var errDiagNone = errors.New("the kernel knows no established connection of that address")

// diagAnswerUID reads the kernel's answer to diagRequest(s, seq): the uid
// of the socket, or an error (see Failing closed).
func diagAnswerUID(b []byte, s diagSocket, seq uint32) (int, error) {
	ne := binary.NativeEndian
	uid, found := -1, 0
	for len(b) > 0 {
		if len(b) < nlmsgHdrLen {
			return -1, fmt.Errorf("sock_diag: %d trailing bytes", len(b))
		}
		n := int(ne.Uint32(b[0:]))
		typ, mseq := ne.Uint16(b[4:]), ne.Uint32(b[8:])
		if n < nlmsgHdrLen || n > len(b) {
			return -1, fmt.Errorf("sock_diag: a message of %d bytes in %d", n, len(b))
		}
		if mseq != seq {
			return -1, fmt.Errorf("sock_diag: an answer to question %d, not %d", mseq, seq)
		}
		body := b[nlmsgHdrLen:n]
		// The next message starts at the length rounded up to 4.
		next := (n + 3) &^ 3
		if next > len(b) {
			next = len(b)
		}
		b = b[next:]
		switch typ {
		case nlmsgError:
			if len(body) < 4 {
				return -1, errors.New("sock_diag: a short error message")
			}
			if e := int32(ne.Uint32(body)); e == -2 { // ENOENT
				return -1, errDiagNone
			} else {
				return -1, fmt.Errorf("sock_diag: error %d", -e)
			}
		case nlmsgDone:
			if len(b) != 0 {
				return -1, errors.New("sock_diag: messages after the end")
			}
		case sockDiagByFam:
			if len(body) < inetDiagMsgLen {
				return -1, fmt.Errorf("sock_diag: an answer of %d bytes", len(body))
			}
			if body[1] != tcpEstablished {
				return -1, fmt.Errorf("%w (state %d)", errDiagNone, body[1])
			}
			if !diagSame(body, s) {
				return -1, errors.New("sock_diag: the answer is about another connection")
			}
			found++
			uid = int(ne.Uint32(body[64:]))
		default:
			return -1, fmt.Errorf("sock_diag: a message of type %d", typ)
		}
	}
	switch found {
	case 0:
		return -1, errDiagNone
	case 1:
		return uid, nil
	}
	return -1, fmt.Errorf("sock_diag: %d answers for one connection", found)
}

// diagSame reports whether an inet_diag_msg is about s: its family, ports
// and addresses (all 16 bytes of each, an IPv4 address followed by
// zeros).
func diagSame(m []byte, s diagSocket) bool {
	var src, dst netip.Addr
	switch m[0] {
	case diagAFInet:
		var zero [12]byte
		if [12]byte(m[12:24]) != zero || [12]byte(m[28:40]) != zero {
			return false
		}
		src, dst = netip.AddrFrom4([4]byte(m[8:12])), netip.AddrFrom4([4]byte(m[24:28]))
	case diagAFInet6:
		src, dst = netip.AddrFrom16([16]byte(m[8:24])).Unmap(), netip.AddrFrom16([16]byte(m[24:40])).Unmap()
	default:
		return false
	}
	return binary.BigEndian.Uint16(m[4:]) == s.local.Port() && binary.BigEndian.Uint16(m[6:]) == s.remote.Port() &&
		src == s.local.Addr().Unmap() && dst == s.remote.Addr().Unmap()
}
