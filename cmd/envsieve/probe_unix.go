//go:build unix

package main

import (
	"io"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"

	"github.com/envsieve/envsieve/internal/shimwire"
)

// startThrough asks the launcher, as envsieve-start does, to start path
// with argv, its output going to a pipe; it returns the launcher's answers
// and what the program printed, unmasked (see probeEnvMain).
func startThrough(sock, path string, argv []string) []byte {
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		return nil
	}
	defer c.Close()
	r, w, err := os.Pipe()
	if err != nil {
		return nil
	}
	defer r.Close()
	dir, err := os.Open(".")
	if err != nil {
		w.Close()
		return nil
	}
	var body []byte
	for _, f := range append([]string{path, strconv.Itoa(len(argv))}, argv...) {
		body = append(append(body, f...), 0)
	}
	defer w.Close()
	head := []byte{shimwire.Version, 'S'}
	head = append(head, strconv.Itoa(os.Getpid())+"\x00"+strconv.Itoa(len(body))+"\x00"...)
	_, _, err = c.WriteMsgUnix(head, syscall.UnixRights(int(dir.Fd())), nil)
	dir.Close()
	if err != nil {
		return nil
	}
	for len(body) > 0 {
		n := min(len(body), shimwire.MaxMsg-2)
		if _, err := c.Write(append([]byte{shimwire.Version, 'C'}, body[:n]...)); err != nil {
			return nil
		}
		body = body[n:]
	}
	printed := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, 1<<20))
		printed <- b
	}()
	deadline := time.Now().Add(10 * time.Second)
	c.SetReadDeadline(deadline)
	var out []byte
	buf := make([]byte, shimwire.MaxMsg)
	for {
		n, err := c.Read(buf)
		if err != nil || n == 0 {
			break
		}
		out = append(out, buf[:n]...)
		// "Granted": the program's output goes to the pipe, as 1 and 2.
		if string(buf[:n]) == string(shimwire.Granted()) {
			files := []byte{shimwire.Version, 'F', '1', '2', 0}
			if _, _, err := c.WriteMsgUnix(files, syscall.UnixRights(int(w.Fd()), int(w.Fd())), nil); err != nil {
				break
			}
			w.Close()
		}
	}
	w.Close()
	select {
	case b := <-printed:
		return append(out, unmask(b)...)
	case <-time.After(time.Until(deadline)):
		return out
	}
}
