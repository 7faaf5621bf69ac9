//go:build linux

package shim_test

import (
	"math/rand/v2"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimwire"
)

// msg is one packet of the wire protocol: the version, the type, then the
// fields, each ended by a NUL byte.
func msg(typ byte, fields ...string) []byte {
	b := []byte{shimwire.Version, typ}
	for _, f := range fields {
		b = append(append(b, f...), 0)
	}
	return b
}

func dialServer(t *testing.T, srv *shimwire.Server) *net.UnixConn {
	t.Helper()
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: srv.Path, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startMsg is a start request as envsieve-start sends it: the header with
// the test's working directory, and the body in continuation packets. The
// test's own stdio as stdio names it is sent by answers, when the server
// answers "granted".
func startMsg(t *testing.T, c *net.UnixConn, stdio string, path string, argv, env []string) {
	t.Helper()
	if err := sendStart(c, stdio, path, argv, env); err != nil {
		t.Fatal(err)
	}
}

// stdioOf holds, for each connection a start request went on, which of
// the test's descriptors 0-2 it sends on "granted".
var stdioOf sync.Map

func sendStart(c *net.UnixConn, stdio string, path string, argv, env []string) error {
	var body []byte
	for _, f := range append(append([]string{path, strconv.Itoa(len(argv))}, argv...), env...) {
		body = append(append(body, f...), 0)
	}
	dir, err := os.Open(".")
	if err != nil {
		return err
	}
	defer dir.Close()
	stdioOf.Store(c, stdio)
	if _, _, err := c.WriteMsgUnix(msg('S', "1", strconv.Itoa(len(body))), syscall.UnixRights(int(dir.Fd())), nil); err != nil {
		return err
	}
	for len(body) > 0 {
		n := min(len(body), shimwire.MaxMsg-2)
		if _, err := c.Write(append([]byte{shimwire.Version, 'C'}, body[:n]...)); err != nil {
			return err
		}
		body = body[n:]
	}
	return nil
}

// sendFiles is the caller's reply to "granted": its descriptors 0-2 as
// stdio names them.
func sendFiles(c *net.UnixConn, stdio string) error {
	var fds []int
	for _, d := range stdio {
		fds = append(fds, int(d-'0'))
	}
	var oob []byte
	if len(fds) > 0 {
		oob = syscall.UnixRights(fds...)
	}
	_, _, err := c.WriteMsgUnix(msg('F', stdio), oob, nil)
	return err
}

// answers reads the launcher's answers on c until it closes, playing the
// caller: it replies to "granted" with the descriptors sendStart named,
// and leaves "granted" out of what it returns.
func answers(t *testing.T, c *net.UnixConn) []string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var out []string
	buf := make([]byte, shimwire.MaxMsg)
	for {
		n, err := c.Read(buf)
		if err != nil || n == 0 {
			return out
		}
		if string(buf[:n]) == string(shimwire.Granted()) {
			stdio, _ := stdioOf.Load(c)
			s, _ := stdio.(string)
			if err := sendFiles(c, s); err != nil {
				t.Errorf("send the descriptors: %v", err)
			}
			continue
		}
		out = append(out, string(buf[:n]))
	}
}

// TestServerGarbage: a process of the tree may write anything to the
// socket. The server drops what it cannot parse, still records a
// well-formed report on the same connection afterwards, and answers a start
// request with "begun" and the exit status only: never a value. An exec
// request of version 1, which got the granted values back, gets nothing.
func TestServerGarbage(t *testing.T) {
	rec := &recorder{start: func(r *shimwire.StartRequest) (shimwire.Process, string) {
		if r.Argv[0] == "gh" {
			return startWith(r, []string{"GITHUB_TOKEN=secret-value-9f2", "PATH=/usr/bin:/bin"})
		}
		return nil, "no rule"
	}}
	srv := listen(t, rec)
	c := dialServer(t, srv)
	defer c.Close()
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 2000; i++ {
		b := make([]byte, 1+r.IntN(300))
		for j := range b {
			b[j] = byte(r.IntN(256))
		}
		if r.IntN(2) == 0 {
			b[0] = shimwire.Version
		}
		if len(b) > 1 && b[1] == 'S' {
			b[1] = 'Z' // a start request takes the connection over
		}
		if _, err := c.Write(b); err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	// An oversized packet, version 1's exec request, then a report.
	if _, err := c.Write(make([]byte, shimwire.MaxMsg+100)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(append([]byte{1}, msg('X', "1", "/usr/bin/gh", "gh")[1:]...)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(msg('A', "1", "g", "AFTER_GARBAGE")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for rec.seen('g', "AFTER_GARBAGE") == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a report after garbage was not recorded")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, err := c.Read(make([]byte, 64)); err == nil {
		t.Errorf("an answer to garbage or to a version 1 request: %d bytes", n)
	}
	// The start request of a program the handler starts: the answer is
	// "begun" and its exit, whatever the program had.
	sc := dialServer(t, srv)
	defer sc.Close()
	startMsg(t, sc, "", "/usr/bin/true", []string{"gh", "pr"}, []string{"HOME=/"})
	got := answers(t, sc)
	if want := []string{string(msg('B', "o")), string(msg('E', "x0"))}; !slices.Equal(got, want) {
		t.Errorf("answers %q, want %q", got, want)
	}
	for _, a := range got {
		if strings.Contains(a, "secret-value") {
			t.Error("an answer carries the value")
		}
	}
	rec.mu.Lock()
	refused := len(rec.refused)
	rec.mu.Unlock()
	if refused == 0 {
		t.Error("nothing was refused")
	}
}

// TestServerStartMalformed: a start request with the wrong descriptors, a
// body cut short or longer than announced, or a body that does not parse,
// is refused, and no program starts.
func TestServerStartMalformed(t *testing.T) {
	rec := &recorder{start: func(r *shimwire.StartRequest) (shimwire.Process, string) {
		return startWith(r, nil)
	}}
	srv := listen(t, rec)
	send := func(t *testing.T, f func(c *net.UnixConn)) {
		c := dialServer(t, srv)
		defer c.Close()
		f(c)
		if got := answers(t, c); len(got) != 0 {
			t.Errorf("answered %q", got)
		}
	}
	t.Run("descriptors missing", func(t *testing.T) {
		send(t, func(c *net.UnixConn) { c.Write(msg('S', "1", "5")) })
	})
	t.Run("body longer than announced", func(t *testing.T) {
		send(t, func(c *net.UnixConn) {
			dir, _ := os.Open(".")
			defer dir.Close()
			c.WriteMsgUnix(msg('S', "1", "3"), syscall.UnixRights(int(dir.Fd())), nil)
			c.Write(append([]byte{shimwire.Version, 'C'}, "/x\x001\x00x\x00"...))
		})
	})
	t.Run("body that does not parse", func(t *testing.T) {
		send(t, func(c *net.UnixConn) {
			dir, _ := os.Open(".")
			defer dir.Close()
			body := "/x\x009\x00x\x00"
			c.WriteMsgUnix(msg('S', "1", strconv.Itoa(len(body))), syscall.UnixRights(int(dir.Fd())), nil)
			c.Write(append([]byte{shimwire.Version, 'C'}, body...))
		})
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.starts) != 0 {
		t.Errorf("started %d programs", len(rec.starts))
	}
}

// TestServerManyConnections: connections beyond the limit are closed, not
// queued forever, and the server still answers afterwards.
func TestServerManyConnections(t *testing.T) {
	rec := &recorder{}
	srv := listen(t, rec)
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
		// A connection over the limit is closed at once: the request may
		// not even be written.
		c := dialServer(t, srv)
		var got []string
		if err := sendStart(c, "", "/bin/true", []string{"true"}, nil); err == nil {
			got = answers(t, c)
		}
		c.Close()
		if len(got) == 1 && got[0] == string(msg('D', "no rule")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no answer 10 s after the connections closed: %q", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// listen starts a launcher's server for h in a temporary directory, closed
// when the test ends.
func listen(t *testing.T, h shimwire.Handler) *shimwire.Server {
	t.Helper()
	srv, err := shimwire.Listen(t.TempDir(), h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}
