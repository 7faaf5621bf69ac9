package broker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
)

// This file reads macOS's table of TCP connections, the output of the
// sysctl net.inet.tcp.pcblist_n, to find which user owns the other end
// of a loopback connection (peer_darwin.go fetches the table). It is a
// pure function of the bytes, built on every OS, so that Linux CI tests
// and fuzzes it.
//
// # Layout
//
// From xnu-11417.101.15 (macOS 15): bsd/netinet/in_pcblist.c
// (get_pcblist_n, which writes the table), bsd/netinet/in_pcb.h (struct
// xinpgen, struct xinpcb_n, INP_IPV4, INP_IPV6) and bsd/sys/socketvar.h
// (struct xsocket_n, XSO_*), all under #pragma pack(4). xinpcb_n is the
// same since xnu-2782 (macOS 10.10); xsocket_n grew from 76 to 104 bytes
// in xnu-8792 (macOS 13) by fields appended after so_e_pid, so both
// lengths are known, with the same offsets for what is read here. The
// offsets were checked by compiling the structs under pack(4) and
// printing offsetof. Integers are in the host's order, little-endian on
// every Mac Go builds for (amd64, arm64); ports and addresses in
// network order.
//
// The table is an xinpgen (24 bytes), then per PCB six records (each
// starting with its length and kind as two uint32, each padded to a
// multiple of 8): xinpcb_n, xsocket_n, xsockbuf_n (receive), xsockbuf_n
// (send), xsockstat_n, xtcpcb_n; then a second xinpgen, unless the first
// counted no PCB, in which case it is all there is.
//
// # Failing closed
//
// Anything that is not that shape is an error, not a skip: a header or a
// record of another length than the ones known for the fields read here,
// a record of the wrong kind at its place, a length under 8 or past the
// end, a missing trailer. No match is an error, and so are two matches
// (the answer would depend on which came first) and a match whose socket
// record the kernel did not fill from a socket of its own (family and
// protocol unset: a PCB without a socket, or a flow of the user-space
// stack that xnu appends with so_uid left 0).
const (
	xinpgenLen      = 24
	xinpcbNLen      = 104
	xsocketNLen     = 104 // xnu-8792 (macOS 13) and later
	xsocketNLenOld  = 76  // before xnu-8792
	xsoSocket       = 0x001
	xsoRcvbuf       = 0x002
	xsoSndbuf       = 0x004
	xsoStats        = 0x008
	xsoInpcb        = 0x010
	xsoTcpcb        = 0x020
	inpIPv4         = 0x1
	inpIPv6         = 0x2
	afInet          = 2
	afInet6         = 30 // darwin's AF_INET6
	ipprotoTCP      = 6
	inpFportOff     = 16 // xinpcb_n.inp_fport
	inpLportOff     = 18 // xinpcb_n.inp_lport
	inpVflagOff     = 44 // xinpcb_n.inp_vflag
	inpFaddrOff     = 48 // xinpcb_n.inp_dependfaddr, 16 bytes
	inpLaddrOff     = 64 // xinpcb_n.inp_dependladdr, 16 bytes
	inAddr4in6Off   = 12 // in_addr_4in6.ia46_addr4: an IPv4 address is the union's last 4 bytes
	soProtocolOff   = 36 // xsocket_n.xso_protocol
	soFamilyOff     = 40 // xsocket_n.xso_family
	soUIDOff        = 64 // xsocket_n.so_uid
	pcbRecordsCount = 6
)

// pcbKinds are the kinds of a PCB's records, in the order the kernel
// writes them.
var pcbKinds = [pcbRecordsCount]uint32{xsoInpcb, xsoSocket, xsoRcvbuf, xsoSndbuf, xsoStats, xsoTcpcb}

var errNoPCB = errors.New("no TCP connection in the table has these ends")

// pcbListUID returns the so_uid of the one TCP PCB in buf (the output of
// net.inet.tcp.pcblist_n) whose local end is local and whose foreign end
// is foreign. IPv4-mapped IPv6 addresses equal their IPv4 ones; zones are
// ignored.
func pcbListUID(buf []byte, local, foreign netip.AddrPort) (int, error) {
	local = plainAddrPort(local)
	foreign = plainAddrPort(foreign)
	// A port 0 is a socket's unset end, never a connection's; and were the
	// two ends one, the broker's own PCB would have them.
	if local.Port() == 0 || foreign.Port() == 0 || local == foreign {
		return -1, fmt.Errorf("pcblist_n: no peer can be told for the ends %s-%s", local, foreign)
	}
	if len(buf) < xinpgenLen {
		return -1, fmt.Errorf("pcblist_n: %d bytes, shorter than its header", len(buf))
	}
	if n := le32(buf, 0); n != xinpgenLen {
		return -1, fmt.Errorf("pcblist_n: header of %d bytes, want %d (an unknown layout)", n, xinpgenLen)
	}
	off := xinpgenLen
	if le32(buf, 4) == 0 {
		if len(buf) != off {
			return -1, fmt.Errorf("pcblist_n: %d bytes after a header that counts no connection", len(buf)-off)
		}
		return -1, errNoPCB
	}
	uid, matches := -1, 0
	var matchErr error
	for {
		if len(buf)-off < 8 {
			return -1, fmt.Errorf("pcblist_n: truncated at offset %d, before the trailer", off)
		}
		if le32(buf, off) == xinpgenLen {
			if len(buf)-off != xinpgenLen {
				return -1, fmt.Errorf("pcblist_n: trailer at offset %d is not the last %d bytes of %d", off, xinpgenLen, len(buf))
			}
			break
		}
		var recs [pcbRecordsCount][]byte
		for i, want := range pcbKinds {
			rec, next, err := pcbRecord(buf, off)
			if err != nil {
				return -1, err
			}
			kind := le32(rec, 4)
			// The kernel leaves a buffer record's kind 0 when the PCB has
			// no socket (sbtoxsockbuf_n with a NULL buffer).
			if kind != want && !(kind == 0 && (want == xsoRcvbuf || want == xsoSndbuf)) {
				return -1, fmt.Errorf("pcblist_n: record at offset %d is of kind %#x, want %#x", off, kind, want)
			}
			recs[i] = rec
			off = next
		}
		inp, so := recs[0], recs[1]
		if len(inp) != xinpcbNLen {
			return -1, fmt.Errorf("pcblist_n: xinpcb_n of %d bytes, want %d (an unknown layout)", len(inp), xinpcbNLen)
		}
		if len(so) != xsocketNLen && len(so) != xsocketNLenOld {
			return -1, fmt.Errorf("pcblist_n: xsocket_n of %d bytes, want %d or %d (an unknown layout)", len(so), xsocketNLen, xsocketNLenOld)
		}
		if !pcbHasEnds(inp, local, foreign) {
			continue
		}
		matches++
		fam, proto := le32(so, soFamilyOff), le32(so, soProtocolOff)
		if proto != ipprotoTCP || (fam != afInet && fam != afInet6) {
			matchErr = fmt.Errorf("pcblist_n: the connection %s-%s has no kernel socket record (family %d, protocol %d)", local, foreign, fam, proto)
			continue
		}
		uid = int(le32(so, soUIDOff))
	}
	switch {
	case matches == 0:
		return -1, errNoPCB
	case matches > 1:
		return -1, fmt.Errorf("pcblist_n: %d connections have the ends %s-%s", matches, local, foreign)
	case matchErr != nil:
		return -1, matchErr
	}
	return uid, nil
}

// pcbRecord returns the record at off (as long as its length says) and
// the offset of the next one (past its padding to a multiple of 8).
func pcbRecord(buf []byte, off int) (rec []byte, next int, err error) {
	left := len(buf) - off
	if left < 8 {
		return nil, 0, fmt.Errorf("pcblist_n: truncated at offset %d, inside a record's header", off)
	}
	n := uint64(le32(buf, off))
	if n < 8 {
		return nil, 0, fmt.Errorf("pcblist_n: record at offset %d has length %d", off, n)
	}
	step := (n + 7) &^ 7
	if step > uint64(left) {
		return nil, 0, fmt.Errorf("pcblist_n: record at offset %d of %d bytes runs past the end (%d bytes left)", off, n, left)
	}
	return buf[off : off+int(n)], off + int(step), nil
}

// pcbHasEnds reports whether the xinpcb_n inp has the local and foreign
// ends given. A PCB of neither IPv4 nor IPv6 has no ends.
func pcbHasEnds(inp []byte, local, foreign netip.AddrPort) bool {
	lport := binary.BigEndian.Uint16(inp[inpLportOff:])
	fport := binary.BigEndian.Uint16(inp[inpFportOff:])
	if lport != local.Port() || fport != foreign.Port() {
		return false
	}
	var la, fa netip.Addr
	switch vflag := inp[inpVflagOff]; {
	case vflag&inpIPv4 != 0:
		la = netip.AddrFrom4([4]byte(inp[inpLaddrOff+inAddr4in6Off : inpLaddrOff+16]))
		fa = netip.AddrFrom4([4]byte(inp[inpFaddrOff+inAddr4in6Off : inpFaddrOff+16]))
	case vflag&inpIPv6 != 0:
		la = netip.AddrFrom16([16]byte(inp[inpLaddrOff : inpLaddrOff+16])).Unmap()
		fa = netip.AddrFrom16([16]byte(inp[inpFaddrOff : inpFaddrOff+16])).Unmap()
	default:
		return false
	}
	return la == local.Addr() && fa == foreign.Addr()
}

func plainAddrPort(a netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(a.Addr().Unmap().WithZone(""), a.Port())
}

func le32(b []byte, off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
