//go:build linux

package broker

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// churnClient opens connections to a broker one after another on each of
// conc threads, n in all: each sends a request, reads the status line and
// closes. It prints "served S refused R p50 P p99 Q" (milliseconds): a
// refused connection is one closed, reset or timed out (10 s) without an
// answer. Every fourth connection of a thread is a probe besides: opened
// and closed at once, as a client that gives up does. family6 connects
// from an IPv6 socket to the IPv4-mapped address (as dual-stack clients
// do).
var churnConc = 200

const churnClient = `
import socket, sys, threading, time
host, port, n, conc, family6 = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "6"
lock = threading.Lock()
res = {"served": 0, "refused": 0}
lat = []
req = b"GET /x HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
def worker(k):
    for i in range(k):
        if i % 4 == 0:
            p = socket.socket(socket.AF_INET6 if family6 else socket.AF_INET)
            try:
                p.connect(("::ffff:" + host if family6 else host, port))
            except OSError:
                pass
            p.close()
        t0 = time.monotonic()
        s = socket.socket(socket.AF_INET6 if family6 else socket.AF_INET)
        s.settimeout(10)
        ok = False
        try:
            s.connect(("::ffff:" + host if family6 else host, port))
            s.sendall(req)
            ok = s.recv(9) == b"HTTP/1.1 "
        except OSError:
            pass
        finally:
            s.close()
        with lock:
            res["served" if ok else "refused"] += 1
            lat.append(time.monotonic() - t0)
ts = [threading.Thread(target=worker, args=(n // conc + (1 if i < n % conc else 0),)) for i in range(conc)]
for t in ts: t.start()
for t in ts: t.join()
lat.sort()
print("served %d refused %d p50 %.2f p99 %.2f" % (res["served"], res["refused"], 1000 * lat[len(lat) // 2], 1000 * lat[len(lat) * 99 // 100]))
`

// runChurn runs churnClient as uid 65534 against b.
func runChurn(t *testing.T, b *Broker, n, conc int, family6 bool) (served, refused int, p50, p99 float64) {
	t.Helper()
	host, port, _ := strings.Cut(b.Addr(), ":")
	fam := "4"
	if family6 {
		fam = "6"
	}
	cmd := exec.Command("/usr/bin/python3", "-c", churnClient, host, port, fmt.Sprint(n), fmt.Sprint(conc), fam)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = asNobody()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("churn client: %v: %s", err, out)
	}
	if _, err := fmt.Sscanf(string(out), "served %d refused %d p50 %g p99 %g", &served, &refused, &p50, &p99); err != nil {
		t.Fatalf("churn client said %q: %v", out, err)
	}
	return served, refused, p50, p99
}

// TestOwnUserChurnServed: thousands of short connections of the launch's
// own (unprivileged) user, opened and closed as fast as they go, are each
// served, and none is taken for another user's: not even a probe that
// closed before the broker looked (the kernel lists a closed connection
// with uid 0), which the broker cannot tell and refuses as unknown.
func TestOwnUserChurnServed(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to connect as another user") // CI runs as root
	}
	n := 3000
	if testing.Short() {
		n = 500
	}
	for _, family6 := range []bool{false, true} {
		t.Run(fmt.Sprintf("ipv6-socket=%v", family6), func(t *testing.T) {
			b, log := startBrokerCfg(t, "127.0.0.1:1", nil, func(c *Config) { c.UID = 65534 })
			served, refused, p50, p99 := runChurn(t, b, n, churnConc, family6)
			t.Logf("%d connections, %d at a time: served %d, refused %d; p50 %.2f ms, p99 %.2f ms", n, churnConc, served, refused, p50, p99)
			if refused != 0 || served != n {
				t.Errorf("%d of the launch user's own connections refused", refused)
			}
			log.mu.Lock()
			defer log.mu.Unlock()
			for _, e := range log.events {
				if e.Kind == "denied" && e.Place == "peer-uid" {
					t.Errorf("a connection of the launch's own user was denied: %+v", e)
					break
				}
			}
		})
	}
}

// TestAnotherUserChurnRefused: the same churn from another uid is refused
// every time, each an audit event naming the peer's user.
func TestAnotherUserChurnRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to connect as another user") // CI runs as root
	}
	for _, family6 := range []bool{false, true} {
		t.Run(fmt.Sprintf("ipv6-socket=%v", family6), func(t *testing.T) {
			b, log := startBrokerCfg(t, "127.0.0.1:1", nil, nil) // this process's uid: root
			served, _, _, _ := runChurn(t, b, 200, 20, family6)
			if served != 0 {
				t.Errorf("another user's connections were served %d times", served)
			}
			if !log.has("denied", "", "peer-uid") {
				t.Error("no peer-uid event")
			}
		})
	}
}

// TestPeerUIDSelf: the peer of a connection this process makes to itself
// is this process's user, over IPv4 and IPv6 loopback, and from both
// ends; once the peer has closed it is unknown, never another user.
func TestPeerUIDSelf(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Logf("%s: %v", addr, err) // no IPv6 here
			continue
		}
		defer ln.Close()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
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
		c.Close()
		time.Sleep(10 * time.Millisecond)
		if uid, err := peerUID(s); err == nil {
			t.Errorf("%s: a closed peer was found, uid %d", addr, uid)
		}
	}
}
