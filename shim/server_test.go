//go:build linux

package shim_test

import (
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/envsieve/envsieve/shim"
)

func dialServer(t *testing.T, srv *shim.Server) *net.UnixConn {
	t.Helper()
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: srv.Path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestServerGarbage: a process of the tree may write anything to the
// socket. The server drops what it cannot parse, answers a well-formed
// exec request on the same connection afterwards, and gives a request
// exactly what the handler grants.
func TestServerGarbage(t *testing.T) {
	rec := &recorder{grant: func(x *shim.Exec) ([]string, []string, bool) {
		if x.Argv[0] == "gh" {
			return []string{"GITHUB_TOKEN=t"}, []string{"OLD"}, true
		}
		return nil, nil, true
	}}
	srv, err := shim.Listen(t.TempDir(), rec)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := dialServer(t, srv)
	defer c.Close()
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		b := make([]byte, 1+r.IntN(300))
		for j := range b {
			b[j] = byte(r.IntN(256))
		}
		if r.IntN(2) == 0 {
			b[0] = shim.Version
		}
		if _, err := c.Write(b); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	// An oversized packet, then a request.
	if _, err := c.Write(make([]byte, shim.MaxMsg+100)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(msg('X', "1", "/usr/bin/gh", "gh", "pr")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, shim.MaxMsg)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatalf("no answer after garbage: %v", err)
	}
	if want := string(msg('R', "+GITHUB_TOKEN=t", "-OLD")); string(buf[:n]) != want {
		t.Errorf("answer %q, want %q", buf[:n], want)
	}
	rec.mu.Lock()
	refused := len(rec.refused)
	rec.mu.Unlock()
	if refused == 0 {
		t.Error("nothing was refused")
	}
}

// TestServerManyConnections: connections beyond the limit are closed, not
// queued forever, and the server still answers afterwards.
func TestServerManyConnections(t *testing.T) {
	rec := &recorder{}
	srv, err := shim.Listen(t.TempDir(), rec)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var conns []*net.UnixConn
	for i := 0; i < 600; i++ {
		conns = append(conns, dialServer(t, srv))
	}
	for _, c := range conns {
		c.Close()
	}
	// The server notices the closed connections as it reads them: until
	// then a new one may still be over the limit and refused.
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, buf, err := ask(t, srv)
		if err == nil && string(buf[:n]) == string([]byte{shim.Version, 'R'}) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer 10 s after the connections closed: %q, %v", buf[:n], err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// ask sends an exec request on a new connection and reads the answer.
func ask(t *testing.T, srv *shim.Server) (int, []byte, error) {
	c := dialServer(t, srv)
	defer c.Close()
	buf := make([]byte, 64)
	if _, err := c.Write(msg('X', "1", "/bin/true", "true")); err != nil {
		return 0, buf, err
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := c.Read(buf)
	return n, buf, err
}
