package peercred

import (
	"net"
	"os"
	"path/filepath"
	"testing"
)

// TestUID: both ends of a real unix socket see the process's own uid.
func TestUID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	done := make(chan *net.UnixConn, 1)
	go func() {
		c, _ := ln.AcceptUnix()
		done <- c
	}()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := <-done
	defer s.Close()
	for _, conn := range []*net.UnixConn{c, s} {
		if uid, err := UID(conn); err != nil || uid != os.Getuid() {
			t.Errorf("UID = %d, %v; want %d", uid, err, os.Getuid())
		}
	}
}
