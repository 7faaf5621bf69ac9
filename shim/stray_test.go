//go:build linux

package shim_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/internal/shimwire"
)

// TestStartStrayDescriptor: a descriptor the caller gets is used only as
// the program's pidfd that comes with "begun"; one that comes with any
// other answer is closed, so it never reaches the program the caller then
// runs itself. A launcher that declines every start with a file attached
// (SCM_RIGHTS): the program, run in the caller's place, both by a forked
// shell child (which makes the request itself) and through
// envsieve-start, holds no descriptor of that file.
func TestStartStrayDescriptor(t *testing.T) {
	lib := shimtest.Lib(t)
	dir := t.TempDir()
	stray, err := os.Create(filepath.Join(dir, "stray-descriptor"))
	if err != nil {
		t.Fatal(err)
	}
	defer stray.Close()
	sock := filepath.Join(dir, "s")
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	var declined atomic.Int32
	var served sync.WaitGroup
	served.Add(1)
	go func() {
		defer served.Done()
		for {
			c, err := ln.AcceptUnix()
			if err != nil {
				return
			}
			served.Add(1)
			go func() { defer served.Done(); declineWith(c, stray, &declined) }()
		}
	}()
	// Every caller is gone once run returns: the connections end.
	defer served.Wait()
	defer ln.Close()
	env := append(baseEnv(lib), shimwire.EnvSock+"="+sock, shimwire.EnvExec+"=1", shimwire.EnvStart+"="+startPath(lib))
	// ls is the program both times: in a child sh forked, and exec'd by
	// the sh -c that sh forked and exec'd (envsieve-start's way).
	got := run(t, env, nil, "sh", "-c", `ls -l /proc/self/fd; echo =SEP=; sh -c 'exec ls -l /proc/self/fd'`)
	if strings.Count(got, "=SEP=") != 1 || strings.Count(got, "/proc/") < 2 {
		t.Fatalf("the programs did not run:\n%s", got)
	}
	if strings.Contains(got, "stray-descriptor") {
		t.Errorf("a descriptor that came with a declined answer reached the program:\n%s", got)
	}
	if n := declined.Load(); n < 3 {
		t.Errorf("the launcher declined %d starts, want 3 (ls, sh, ls): the test did not test", n)
	}
}

// declineWith serves one connection of a stand-in launcher: a start
// request is read to its end and declined, with f attached; anything else
// is read and dropped.
func declineWith(c *net.UnixConn, f *os.File, n *atomic.Int32) {
	defer c.Close()
	buf := make([]byte, shimwire.MaxMsg+1)
	oob := make([]byte, 64)
	k, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
	// The caller's working directory, which a start request carries.
	if msgs, perr := syscall.ParseSocketControlMessage(oob[:oobn]); perr == nil {
		for _, msg := range msgs {
			fds, _ := syscall.ParseUnixRights(&msg)
			for _, fd := range fds {
				syscall.Close(fd)
			}
		}
	}
	if err != nil || k < 2 || buf[1] != 'S' {
		for err == nil {
			_, err = c.Read(buf)
		}
		return
	}
	m, err := shimwire.Parse(buf[:k])
	h, ok := m.(*shimwire.StartHead)
	if err != nil || !ok {
		return
	}
	for got := 0; got < h.Len; {
		k, err := c.Read(buf)
		if err != nil || k < 2 {
			return
		}
		got += k - 2
	}
	n.Add(1)
	c.WriteMsgUnix(shimwire.Declined("declined, with a descriptor"), syscall.UnixRights(int(f.Fd())), nil)
	c.Read(buf) // until the caller closes
}
