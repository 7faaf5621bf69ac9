package shim

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/envsieve/envsieve/internal/peercred"
)

// Handler receives what the shims of a process tree send. Its methods are
// called from many goroutines at once.
type Handler interface {
	// Access records one access to the environment.
	Access(a *Access)
	// Exec returns the changes to the environment of one exec: entries
	// ("KEY=VALUE") to set and names to delete. ok false sends no answer,
	// and the exec goes ahead without grants.
	Exec(x *Exec) (set, del []string, ok bool)
	// Notice records an exec that went ahead without grants.
	Notice(n *Notice)
	// Refused records a message or a connection the server threw away:
	// a malformed packet, a peer of another user, too many connections.
	Refused(reason string)
}

// Limits of one server.
const (
	maxConns = 512                   // connections served at once; more are closed
	drain    = 50 * time.Millisecond // how long Close waits for what is queued
)

// Server is the launcher's end of the shim's socket: a SOCK_SEQPACKET unix
// socket in a private directory, serving only peers of the launcher's own
// uid.
type Server struct {
	Path string // the socket, for ENVSIEVE_SHIM_SOCK

	dir   string
	ln    *net.UnixListener
	h     Handler
	uid   int
	wg    sync.WaitGroup // connections
	acc   chan struct{}  // closed when the accept loop ends
	mu    sync.Mutex
	conns map[*net.UnixConn]bool
	done  bool
}

// Listen creates the socket in a new 0700 directory under dir (the runtime
// directory) and starts serving h.
func Listen(dir string, h Handler) (*Server, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	priv, err := os.MkdirTemp(dir, "envsieve-shim-")
	if err != nil {
		return nil, fmt.Errorf("shim socket: %w", err)
	}
	if err := os.Chmod(priv, 0o700); err != nil {
		os.RemoveAll(priv)
		return nil, fmt.Errorf("shim socket: %w", err)
	}
	path := filepath.Join(priv, "s")
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: path, Net: "unixpacket"})
	if err != nil {
		os.RemoveAll(priv)
		return nil, fmt.Errorf("shim socket: %w", err)
	}
	ln.SetUnlinkOnClose(false)
	s := &Server{Path: path, dir: priv, ln: ln, h: h, uid: os.Getuid(), conns: map[*net.UnixConn]bool{}, acc: make(chan struct{})}
	go s.accept()
	return s, nil
}

func (s *Server) accept() {
	defer close(s.acc)
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			return
		}
		s.start(c)
	}
}

func (s *Server) start(c *net.UnixConn) {
	if !s.track(c) {
		s.h.Refused("too many shim connections")
		c.Close()
		return
	}
	s.wg.Add(1)
	go s.serve(c)
}

// acceptQueued accepts, without waiting, the connections already queued on
// the listener: those of processes that reported and exited just before
// Close.
func (s *Server) acceptQueued() {
	raw, err := s.ln.SyscallConn()
	if err != nil {
		return
	}
	var fds []int
	raw.Control(func(fd uintptr) {
		for {
			nfd, err := acceptNow(int(fd))
			if err != nil {
				return
			}
			fds = append(fds, nfd)
		}
	})
	for _, fd := range fds {
		f := os.NewFile(uintptr(fd), "shim")
		c, err := net.FileConn(f)
		f.Close()
		if uc, ok := c.(*net.UnixConn); err == nil && ok {
			s.start(uc)
		} else if c != nil {
			c.Close()
		}
	}
}

func (s *Server) track(c *net.UnixConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.conns) >= maxConns {
		return false
	}
	s.conns[c] = true
	if s.done {
		c.SetReadDeadline(time.Now().Add(drain))
	}
	return true
}

func (s *Server) serve(c *net.UnixConn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		c.Close()
	}()
	if uid, err := peercred.UID(c); err != nil || uid != s.uid {
		s.h.Refused("a shim peer of another user")
		return
	}
	buf := make([]byte, MaxMsg+1)
	for {
		n, err := c.Read(buf)
		if err != nil || n == 0 {
			return
		}
		msg, err := Parse(buf[:n])
		if err != nil {
			s.h.Refused(err.Error())
			continue
		}
		switch m := msg.(type) {
		case *Access:
			s.h.Access(m)
		case *Notice:
			s.h.Notice(m)
		case *Exec:
			set, del, ok := s.h.Exec(m)
			if !ok {
				continue
			}
			b, err := Reply(set, del)
			if err != nil {
				s.h.Refused(err.Error())
				continue
			}
			c.SetWriteDeadline(time.Now().Add(time.Second))
			if _, err := c.Write(b); err != nil {
				return
			}
		}
	}
}

// Close stops serving once what is already queued has been read (up to a
// short drain window), and removes the socket and its directory.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return nil
	}
	s.done = true
	for c := range s.conns {
		c.SetReadDeadline(time.Now().Add(drain))
	}
	s.mu.Unlock()
	s.ln.SetDeadline(time.Now())
	<-s.acc
	s.acceptQueued()
	s.wg.Wait()
	err := s.ln.Close()
	// The directory holds the socket only: two calls, where RemoveAll
	// would take eight.
	if rerr := unlinkAll(s.Path, s.dir); rerr != nil {
		return fmt.Errorf("remove shim socket: %w", rerr)
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}
