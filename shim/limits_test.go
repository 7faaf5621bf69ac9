//go:build linux

package shim_test

import (
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimwire"
)

// held is a shimwire.Process that runs until released: a program the launcher
// started and that has not ended.
type held struct {
	once    sync.Once
	release chan struct{}
}

func newHeld() *held                  { return &held{release: make(chan struct{})} }
func (h *held) Joined() bool          { return true }
func (h *held) Signal(syscall.Signal) {}
func (h *held) Wait() (int, int)      { <-h.release; return 0, 0 }
func (h *held) Kill()                 { h.done() }
func (h *held) done()                 { h.once.Do(func() { close(h.release) }) }

// TestServerStartLimit: the server serves 64 start requests at once; the
// 65th is declined at once with its reason (the caller runs the program
// without grants), and a slot that frees is served again.
func TestServerStartLimit(t *testing.T) {
	var mu sync.Mutex
	var running []*held
	rec := &recorder{start: func(*shimwire.StartRequest) (shimwire.Process, string) {
		h := newHeld()
		mu.Lock()
		running = append(running, h)
		mu.Unlock()
		return h, ""
	}}
	srv := listen(t, rec)
	defer func() {
		mu.Lock()
		for _, h := range running {
			h.done()
		}
		mu.Unlock()
	}()
	begun := func(c *net.UnixConn) string {
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, shimwire.MaxMsg)
		n, err := c.Read(buf)
		if err != nil {
			return "error: " + err.Error()
		}
		return string(buf[:n])
	}
	var conns []*net.UnixConn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 64; i++ {
		c := dialServer(t, srv)
		conns = append(conns, c)
		startMsg(t, c, "", "/bin/true", []string{"true"}, nil)
		if got := begun(c); got != string(shimwire.Begun(true)) {
			t.Fatalf("start %d: %q, want begun", i+1, got)
		}
	}
	over := dialServer(t, srv)
	startMsg(t, over, "", "/bin/true", []string{"true"}, nil)
	if got := answers(t, over); len(got) != 1 || got[0] != string(shimwire.Declined("too many start requests at once")) {
		t.Fatalf("the 65th start: %q, want declined", got)
	}
	over.Close()
	// One program ends: its caller gets the status, and the slot serves
	// the next request.
	mu.Lock()
	running[0].done()
	mu.Unlock()
	if got := answers(t, conns[0]); len(got) != 1 || got[0] != string(shimwire.Ended(0, 0)) {
		t.Fatalf("the first program's end: %q", got)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := dialServer(t, srv)
		startMsg(t, c, "", "/bin/true", []string{"true"}, nil)
		got := begun(c)
		c.Close()
		if got == string(shimwire.Begun(true)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a freed slot was not served again: %q", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestServerStartBodyTimeout: a start request whose body never comes holds
// its slot for two seconds at most; then it is refused, its connection
// closed, and nothing starts.
func TestServerStartBodyTimeout(t *testing.T) {
	t.Parallel() // it waits out the two-second deadline
	rec := &recorder{start: func(*shimwire.StartRequest) (shimwire.Process, string) { return newHeld(), "" }}
	srv := listen(t, rec)
	c := dialServer(t, srv)
	defer c.Close()
	dir, err := os.Open(".")
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	if _, _, err := c.WriteMsgUnix(msg('S', "1", "100"), syscall.UnixRights(int(dir.Fd())), nil); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	got := answers(t, c)
	took := time.Since(began)
	if len(got) != 0 || took < 1500*time.Millisecond || took > 5*time.Second {
		t.Errorf("a start without its body: answered %q, closed after %v; want nothing, after about 2 s", got, took)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.starts) != 0 {
		t.Errorf("started %d programs", len(rec.starts))
	}
	if !strings.Contains(strings.Join(rec.refused, "\n"), "cut short") {
		t.Errorf("refused %q, want the body cut short", rec.refused)
	}
}
