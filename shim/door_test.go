//go:build linux

package shim_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimwire"
)

// throughDoor makes a connected SOCK_SEQPACKET pair, sends one end through
// srv's door as a process that may not create a socket would, and returns
// the other.
func throughDoor(t *testing.T, srv *shimwire.Server) *net.UnixConn {
	t.Helper()
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	sendDoor(t, srv, []byte{shimwire.Version, 'O'}, pair[1])
	syscall.Close(pair[1])
	f := os.NewFile(uintptr(pair[0]), "pair")
	defer f.Close()
	c, err := net.FileConn(f)
	if err != nil {
		t.Fatal(err)
	}
	return c.(*net.UnixConn)
}

// sendDoor sends one datagram to srv's door from a socket pair's end, as
// the shim does where socket(AF_UNIX) is refused; fd, when >= 0, goes with
// it.
func sendDoor(t *testing.T, srv *shimwire.Server, payload []byte, fd int) {
	t.Helper()
	dg, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_DGRAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(dg[0])
	defer syscall.Close(dg[1])
	var oob []byte
	if fd >= 0 {
		oob = syscall.UnixRights(fd)
	}
	door := &syscall.SockaddrUnix{Name: filepath.Join(filepath.Dir(srv.Path), shimwire.DoorName)}
	if err := syscall.Sendmsg(dg[0], payload, oob, door, 0); err != nil {
		t.Fatal(err)
	}
}

// TestServerDoor: a connection handed over through the door is served as
// an accepted one (a start request answered, an access recorded); any
// other datagram is refused and nothing is served from it.
func TestServerDoor(t *testing.T) {
	rec := &recorder{}
	srv := listen(t, rec)

	c := throughDoor(t, srv)
	startMsg(t, c, "", "/bin/true", []string{"true"}, nil)
	if got := answers(t, c); len(got) != 1 || got[0] != string(msg('D', "no rule")) {
		t.Errorf("a start through the door: %q, want declined for no rule", got)
	}
	c.Close()
	c = throughDoor(t, srv)
	c.Write(msg('A', "7", "g", "THROUGH_DOOR"))
	c.Close()
	deadline := time.Now().Add(5 * time.Second)
	for rec.seen('g', "THROUGH_DOOR") == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if rec.seen('g', "THROUGH_DOOR") != 1 {
		t.Errorf("an access report through the door was not recorded")
	}

	// What is not one connected SOCK_SEQPACKET socket is refused.
	file, err := os.Open("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	dgram, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(dgram[0])
	defer syscall.Close(dgram[1])
	lone, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_SEQPACKET, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(lone)
	pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET, 0)
	if err != nil {
		t.Fatal(err)
	}
	// pair[0] is closed by p below, once: a second close here would let
	// p's finalizer close whatever reused the number later (another
	// test's connection).
	defer syscall.Close(pair[1])
	for _, tc := range []struct {
		name    string
		payload []byte
		fd      int
	}{
		{"no descriptor", []byte{shimwire.Version, 'O'}, -1},
		{"a file", []byte{shimwire.Version, 'O'}, int(file.Fd())},
		{"a datagram socket", []byte{shimwire.Version, 'O'}, dgram[1]},
		{"an unconnected socket", []byte{shimwire.Version, 'O'}, lone},
		{"another version", []byte{1, 'O'}, pair[1]},
		{"another message", []byte{shimwire.Version, 'X'}, pair[1]},
		{"a longer message", []byte{shimwire.Version, 'O', 0}, pair[1]},
	} {
		before := len(refusals(rec))
		sendDoor(t, srv, tc.payload, tc.fd)
		deadline := time.Now().Add(5 * time.Second)
		for len(refusals(rec)) == before && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if got := refusals(rec); len(got) != before+1 || !strings.Contains(got[len(got)-1], "door") {
			t.Errorf("%s: refusals %q, want one naming the door", tc.name, got[before:])
		}
	}
	// Nothing was served on the pair that was sent with the wrong message:
	// its other end reads nothing, and sees it closed.
	p := os.NewFile(uintptr(pair[0]), "pair")
	pc, err := net.FileConn(p)
	p.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	pc.Write(msg('A', "7", "g", "NOT_SERVED"))
	time.Sleep(50 * time.Millisecond)
	if rec.seen('g', "NOT_SERVED") != 0 {
		t.Errorf("a connection sent with the wrong message was served")
	}
}

func refusals(r *recorder) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.refused...)
}

// FuzzServerDoor: whatever a datagram to the door holds, with a pair's end
// or without, the server serves a connection only for {Version, 'O'} with
// the end, and refuses the rest.
func FuzzServerDoor(f *testing.F) {
	f.Add([]byte{shimwire.Version, 'O'}, true)
	f.Add([]byte{shimwire.Version, 'O'}, false)
	f.Add([]byte{1, 'X', '1', 0}, true)
	f.Add([]byte{}, false)
	rec := &recorder{}
	srv, err := shimwire.Listen(f.TempDir(), rec)
	if err != nil {
		f.Fatal(err)
	}
	defer srv.Close()
	f.Fuzz(func(t *testing.T, payload []byte, withEnd bool) {
		if len(payload) == 0 || len(payload) > 64 {
			return
		}
		pair, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_SEQPACKET|syscall.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		fd := -1
		if withEnd {
			fd = pair[1]
		}
		before := len(refusals(rec))
		sendDoor(t, srv, payload, fd)
		syscall.Close(pair[1])
		valid := withEnd && len(payload) == 2 && payload[0] == shimwire.Version && payload[1] == 'O'
		if valid {
			// Served: the server answers a start on it.
			c := os.NewFile(uintptr(pair[0]), "pair")
			conn, err := net.FileConn(c)
			c.Close()
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			startMsg(t, conn.(*net.UnixConn), "", "/bin/true", []string{"true"}, nil)
			if got := answers(t, conn.(*net.UnixConn)); len(got) != 1 {
				t.Errorf("a valid door connection got %q", got)
			}
			return
		}
		defer syscall.Close(pair[0])
		deadline := time.Now().Add(5 * time.Second)
		for len(refusals(rec)) == before && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		if len(refusals(rec)) == before {
			t.Errorf("door datagram %q (with an end: %v) was not refused", payload, withEnd)
		}
	})
}
