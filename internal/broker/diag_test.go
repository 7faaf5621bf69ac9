package broker

import (
	"encoding/binary"
	"net/netip"
	"testing"
)

var diagSock = diagSocket{local: netip.MustParseAddrPort("127.0.0.1:40000"), remote: netip.MustParseAddrPort("127.0.0.1:8080")}

// diagMsg builds one netlink message of type typ carrying body.
func diagMsg(typ uint16, seq uint32, body []byte) []byte {
	ne := binary.NativeEndian
	b := make([]byte, nlmsgHdrLen+len(body), (nlmsgHdrLen+len(body)+3)&^3)
	ne.PutUint32(b, uint32(len(b)))
	ne.PutUint16(b[4:], typ)
	ne.PutUint32(b[8:], seq)
	copy(b[nlmsgHdrLen:], body)
	return b[:cap(b)]
}

// inetDiagMsg builds an inet_diag_msg for a socket, as the kernel would.
func inetDiagMsg(fam byte, state byte, s diagSocket, uid uint32) []byte {
	m := make([]byte, inetDiagMsgLen+8) // and an attribute, as the kernel adds
	m[0], m[1] = fam, state
	src, dst := s.local.Addr(), s.remote.Addr()
	if fam == diagAFInet6 {
		src, dst = netip.AddrFrom16(src.As16()), netip.AddrFrom16(dst.As16())
	}
	putSockID(m[4:], src, s.local.Port(), dst, s.remote.Port())
	binary.NativeEndian.PutUint32(m[64:], uid)
	binary.NativeEndian.PutUint32(m[72:], 0x00080005) // len 5, type 8 (INET_DIAG_SHUTDOWN)
	return m
}

func diagErr(errno int32) []byte {
	b := make([]byte, 20)
	binary.NativeEndian.PutUint32(b, uint32(-errno))
	return b
}

func concat(bs ...[]byte) []byte {
	var out []byte
	for _, b := range bs {
		out = append(out, b...)
	}
	return out
}

func TestDiagAnswerUID(t *testing.T) {
	const seq = 7
	other := diagSock
	other.local = netip.MustParseAddrPort("127.0.0.1:40001")
	otherAddr := diagSock
	otherAddr.remote = netip.MustParseAddrPort("127.0.0.2:8080")
	ok := diagMsg(sockDiagByFam, seq, inetDiagMsg(diagAFInet, tcpEstablished, diagSock, 1000))
	v6 := diagMsg(sockDiagByFam, seq, inetDiagMsg(diagAFInet6, tcpEstablished, diagSock, 1000))
	badPad := append([]byte{}, ok...)
	badPad[nlmsgHdrLen+14] = 1 // inside the IPv4 source's zero tail
	for _, c := range []struct {
		name   string
		answer []byte
		uid    int // -1: an error
	}{
		{"established", ok, 1000},
		{"IPv4-mapped IPv6 socket", v6, 1000},
		{"then done", concat(ok, diagMsg(nlmsgDone, seq, make([]byte, 4))), 1000},
		{"TIME_WAIT (uid 0)", diagMsg(sockDiagByFam, seq, inetDiagMsg(diagAFInet, 6, diagSock, 0)), -1},
		{"FIN_WAIT2", diagMsg(sockDiagByFam, seq, inetDiagMsg(diagAFInet, 5, diagSock, 0)), -1},
		{"no such socket", diagMsg(nlmsgError, seq, diagErr(2)), -1},
		{"another error", diagMsg(nlmsgError, seq, diagErr(1)), -1},
		{"an ack", diagMsg(nlmsgError, seq, diagErr(0)), -1},
		{"empty", nil, -1},
		{"done only", diagMsg(nlmsgDone, seq, make([]byte, 4)), -1},
		{"two answers", concat(ok, ok), -1},
		{"another port", diagMsg(sockDiagByFam, seq, inetDiagMsg(diagAFInet, tcpEstablished, other, 1000)), -1},
		{"another address", diagMsg(sockDiagByFam, seq, inetDiagMsg(diagAFInet, tcpEstablished, otherAddr, 1000)), -1},
		{"bytes in an IPv4 address's tail", badPad, -1},
		{"another family", diagMsg(sockDiagByFam, seq, inetDiagMsg(1, tcpEstablished, diagSock, 1000)), -1},
		{"another question", diagMsg(sockDiagByFam, seq+1, inetDiagMsg(diagAFInet, tcpEstablished, diagSock, 1000)), -1},
		{"another type", diagMsg(99, seq, inetDiagMsg(diagAFInet, tcpEstablished, diagSock, 1000)), -1},
		{"short message", diagMsg(sockDiagByFam, seq, inetDiagMsg(diagAFInet, tcpEstablished, diagSock, 1000)[:inetDiagMsgLen-1]), -1},
		{"trailing bytes", append(append([]byte{}, ok...), 1, 2, 3), -1},
		{"after done", concat(diagMsg(nlmsgDone, seq, make([]byte, 4)), ok), -1},
	} {
		t.Run(c.name, func(t *testing.T) {
			uid, err := diagAnswerUID(c.answer, diagSock, seq)
			if c.uid >= 0 && (err != nil || uid != c.uid) {
				t.Errorf("got %d, %v; want %d", uid, err, c.uid)
			}
			if c.uid < 0 && err == nil {
				t.Errorf("got uid %d, want an error", uid)
			}
		})
	}
	// Cut anywhere, a good answer is an error, never a uid.
	for i := range len(ok) - 8 {
		if uid, err := diagAnswerUID(ok[:i], diagSock, seq); err == nil {
			t.Errorf("cut at %d: uid %d", i, uid)
		}
	}
}

// TestDiagRequest: the question is a SOCK_DIAG_BY_FAMILY request for TCP,
// established only, naming the socket exactly.
func TestDiagRequest(t *testing.T) {
	b := diagRequest(diagSock, 9)
	ne := binary.NativeEndian
	if len(b) != nlmsgHdrLen+inetDiagReqLen || int(ne.Uint32(b)) != len(b) || ne.Uint16(b[4:]) != sockDiagByFam ||
		ne.Uint16(b[6:]) != nlmFRequest || ne.Uint32(b[8:]) != 9 {
		t.Fatalf("header: % x", b[:nlmsgHdrLen])
	}
	r := b[nlmsgHdrLen:]
	if r[0] != diagAFInet || r[1] != ipprotoTCP || ne.Uint32(r[4:]) != 1<<tcpEstablished {
		t.Errorf("request: % x", r[:8])
	}
	// The answer about that socket is what it names.
	m := make([]byte, inetDiagMsgLen)
	m[0], m[1] = r[0], tcpEstablished
	copy(m[4:52], r[8:56])
	if !diagSame(m, diagSock) {
		t.Error("the question's socket id is not the socket's")
	}
}

// FuzzSockDiag: whatever the kernel's answer holds, the reader does not
// panic, and gives a uid only when the answer holds exactly one
// established socket that is the question's.
func FuzzSockDiag(f *testing.F) {
	const seq = 7
	ok := diagMsg(sockDiagByFam, seq, inetDiagMsg(diagAFInet, tcpEstablished, diagSock, 1000))
	f.Add(ok)
	f.Add(diagMsg(sockDiagByFam, seq, inetDiagMsg(diagAFInet6, tcpEstablished, diagSock, 1000)))
	f.Add(concat(ok, ok))
	f.Add(diagMsg(nlmsgError, seq, diagErr(2)))
	f.Add(concat(ok, diagMsg(nlmsgDone, seq, make([]byte, 4))))
	f.Fuzz(func(t *testing.T, b []byte) {
		uid, err := diagAnswerUID(b, diagSock, seq)
		if err != nil {
			return
		}
		// Walk it again: exactly one matching established socket message.
		ne := binary.NativeEndian
		matches := 0
		for off := 0; off+nlmsgHdrLen <= len(b); {
			n := int(ne.Uint32(b[off:]))
			if n < nlmsgHdrLen || off+n > len(b) {
				t.Fatalf("a uid from a malformed answer")
			}
			body := b[off+nlmsgHdrLen : off+n]
			if ne.Uint16(b[off+4:]) == sockDiagByFam {
				if len(body) < inetDiagMsgLen || body[1] != tcpEstablished || !diagSame(body, diagSock) {
					t.Fatalf("a uid beside another socket's answer")
				}
				if int(ne.Uint32(body[64:])) != uid {
					t.Fatalf("uid %d is not the answer's", uid)
				}
				matches++
			}
			off += (n + 3) &^ 3
		}
		if matches != 1 {
			t.Fatalf("a uid from %d answers", matches)
		}
	})
}
