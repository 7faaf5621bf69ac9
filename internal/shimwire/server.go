//go:build unix

package shimwire

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/envsieve/envsieve/internal/peercred"
)

// Limits of one server.
const (
	maxSocketPath = 107                   // sun_path's 108 bytes, less the terminating NUL (shim.MaxSocketPath)
	maxConns      = 512                   // connections served at once; more are closed
	maxStarts     = 64                    // start requests served at once; more are declined
	drain         = 50 * time.Millisecond // how long Close waits for what is queued
	startRead     = 2 * time.Second       // for a start request's body to arrive
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
	// starts counts the start requests being served: each holds up to
	// MaxStart bytes until its program has begun.
	starts int
	// door is the datagram socket through which a process that may not
	// create a socket hands over one end of a socket pair (door_linux.go).
	door     *net.UnixConn
	doorDone chan struct{}
	// known is the table of the reports the launcher has (known.go).
	known knownTable
}

var errNotSeqpacket = errors.New("not a connected unix SOCK_SEQPACKET socket")

func (s *Server) startSlot() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.starts >= maxStarts {
		return false
	}
	s.starts++
	return true
}

func (s *Server) startDone() {
	s.mu.Lock()
	s.starts--
	s.mu.Unlock()
}

// Listen creates the socket in a new 0700 directory under dir (the runtime
// directory; /tmp when dir is too deep for a socket's path) and starts
// serving h.
func Listen(dir string, h Handler) (*Server, error) {
	if dir == "" {
		dir = os.TempDir()
	}
	// The socket's path must fit a sockaddr_un: a directory too deep for
	// it (a long TMPDIR or XDG_RUNTIME_DIR) gives way to /tmp, where the
	// socket is as private, in a 0700 directory of its own.
	if len(dir)+len("/envsieve-shim-4294967295/s") > maxSocketPath {
		dir = "/tmp"
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
	if err := s.openDoor(); err != nil {
		ln.Close()
		os.RemoveAll(priv)
		return nil, fmt.Errorf("shim socket: the door: %w", err)
	}
	s.openKnown()
	go s.accept()
	return s, nil
}

// accept accepts one connection at a time. The goroutine that accepted a
// connection serves it itself and hands accepting on to a new goroutine:
// a start request is read, decided and started without waiting for a
// goroutine to be scheduled (one hand-off less on every granted exec).
// Exactly one goroutine accepts at a time; the one that finds the listener
// closed closes s.acc.
func (s *Server) accept() {
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			close(s.acc)
			return
		}
		if !s.track(c) {
			s.h.Refused("too many shim connections")
			c.Close()
			continue
		}
		s.wg.Add(1)
		go s.accept()
		s.serve(c)
		return
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
	oob := make([]byte, syscall.CmsgSpace(4*4))
	for {
		n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
		if err != nil || n == 0 {
			return
		}
		files := received(oob[:oobn])
		if flags&(syscall.MSG_TRUNC|syscall.MSG_CTRUNC) != 0 {
			closeAll(files)
			s.h.Refused(fmt.Sprintf("%s: a packet over %d bytes", ErrMessage, MaxMsg))
			continue
		}
		msg, err := Parse(buf[:n])
		if err != nil {
			closeAll(files)
			s.h.Refused(err.Error())
			continue
		}
		if h, ok := msg.(*StartHead); ok {
			// A start request has the connection to itself.
			s.start1(c, h, files, buf)
			return
		}
		closeAll(files)
		switch m := msg.(type) {
		case *Access:
			// Known first: once the handler has it, no process sends it.
			s.known.mark(m.Op, m.Name)
			s.h.Access(m)
		case *Notice:
			s.h.Notice(m)
		default:
			s.h.Refused(fmt.Sprintf("%s: %T outside a start", ErrMessage, m))
		}
	}
}

// start1 serves one start request: it reads the body, asks the handler
// (which asks the caller for its descriptors 0-2 only once it will start
// the program), answers, then passes the caller's signals on until the
// program ends, and kills it when the caller goes away first. buf is the
// connection's read buffer, MaxMsg+1 bytes; files holds the caller's
// working directory.
func (s *Server) start1(c *net.UnixConn, h *StartHead, files []*os.File, buf []byte) {
	defer func() { closeAll(files) }()
	if len(files) != 1 {
		s.h.Refused(fmt.Sprintf("%s: a start with %d descriptors, not 1 (its working directory)", ErrMessage, len(files)))
		return
	}
	if !s.startSlot() {
		s.h.Refused("too many start requests at once")
		// The body is read, and dropped, before the answer: a socket closed
		// with unread packets resets its peer, which would lose the answer.
		c.SetReadDeadline(time.Now().Add(startRead))
		for got := 0; got < h.Len; {
			n, err := c.Read(buf)
			if err != nil || n < 2 {
				return
			}
			got += n - 2
		}
		c.Write(Declined("too many start requests at once"))
		return
	}
	defer s.startDone()
	c.SetReadDeadline(time.Now().Add(startRead))
	body := make([]byte, 0, h.Len)
	for len(body) < h.Len {
		n, err := c.Read(buf)
		if err != nil || n < 2 || n > MaxMsg || buf[0] != Version || buf[1] != 'C' || len(body)+n-2 > h.Len {
			s.h.Refused(fmt.Sprintf("%s: a start request's body cut short or malformed", ErrMessage))
			return
		}
		body = append(body, buf[2:n]...)
	}
	// From here the connection waits on the program, for as long as it
	// runs, unless Close (which sets every deadline) has begun.
	s.noDeadline(c)
	st, err := ParseStart(body)
	if err != nil {
		s.h.Refused(err.Error())
		return
	}
	r := &StartRequest{Start: st, PID: h.PID, Peer: peerPID(c), Dir: files[0]}
	var lost bool // the caller gave up, or broke the exchange, after "granted"
	r.ask = func() ([3]*os.File, error) {
		got, stdio, err := s.askStdio(c, buf)
		files = append(files, got...)
		if errors.Is(err, ErrMessage) {
			s.h.Refused(err.Error())
		}
		lost = err != nil
		return stdio, err
	}
	r.gone = func() bool {
		g := gone(c)
		lost = lost || g
		return g
	}
	p, reason := s.h.Start(r)
	// The caller's descriptors are closed before the answer: a caller told
	// "declined" runs the program itself, and nothing here may hold its
	// output open.
	closeAll(files)
	files = nil
	c.SetWriteDeadline(time.Now().Add(time.Second))
	if p == nil {
		// No answer once the exchange after "granted" failed: a caller
		// still there (stopped past the wait for its descriptors) then
		// finds the connection closed and runs the program as it would
		// without a launcher, minus what the rules deny, not as declined.
		if !lost {
			c.Write(Declined(reason))
		}
		return
	}
	// The program's pid, where its caller can see it, lets the caller see
	// it end without the launcher (a launcher stopped then holds the
	// caller at most the bound).
	pid := 0
	if v, ok := p.(interface{ CallerPID() int }); ok {
		pid = v.CallerPID()
	}
	// Where the caller cannot see it (the namespace seal), a pidfd of the
	// program instead, which it can only poll (launch's endHandle).
	var handle *os.File
	if v, ok := p.(interface{ EndHandle() *os.File }); ok && pid == 0 {
		handle = v.EndHandle()
	}
	if err := writeBegun(c, begunAt(p.Joined(), pid), handle); err != nil {
		p.Kill()
	}
	c.SetWriteDeadline(time.Time{})
	// The caller's packets (signals to pass on, or its going away) are read
	// by a goroutine of their own; this one waits for the program, so that
	// its end is answered without a hand-off between goroutines.
	var ended atomic.Bool
	go func() {
		for {
			n, err := c.Read(buf)
			if err != nil || n == 0 {
				break
			}
			if m, err := Parse(buf[:n]); err == nil {
				if k, ok := m.(*Kill); ok {
					p.Signal(syscall.Signal(k.Signal))
				}
			}
		}
		// The caller is gone (killed, or the tree torn down): nothing
		// waits for the program any more, and nothing may outlive it
		// unseen. Once the program has ended, the read ends because the
		// connection is closed, and there is nothing to kill.
		if !ended.Load() {
			p.Kill()
		}
	}()
	code, sig := p.Wait()
	ended.Store(true)
	c.SetWriteDeadline(time.Now().Add(time.Second))
	c.Write(Ended(code, sig))
}

// writeBegun sends "begun" on c, with handle (then closed) as its
// SCM_RIGHTS when it is not nil.
func writeBegun(c *net.UnixConn, msg []byte, handle *os.File) error {
	if handle == nil {
		_, err := c.Write(msg)
		return err
	}
	defer handle.Close()
	_, _, err := c.WriteMsgUnix(msg, syscall.UnixRights(int(handle.Fd())), nil)
	return err
}

// noDeadline clears c's read deadline, unless Close (which sets every
// deadline) has begun.
func (s *Server) noDeadline(c *net.UnixConn) {
	s.mu.Lock()
	if !s.done {
		c.SetReadDeadline(time.Time{})
	}
	s.mu.Unlock()
}

// askStdio answers a start request [Granted] and reads the caller's reply:
// one 'F' packet carrying the descriptors it names. It returns every
// descriptor received (for the caller to close) and, by number, the
// caller's 0-2. An error: the caller gave up (its connection is closed),
// did not answer in time, or sent something else.
func (s *Server) askStdio(c *net.UnixConn, buf []byte) (got []*os.File, stdio [3]*os.File, err error) {
	c.SetWriteDeadline(time.Now().Add(time.Second))
	_, err = c.Write(Granted())
	c.SetWriteDeadline(time.Time{})
	if err != nil {
		return nil, stdio, fmt.Errorf("the caller is gone: %w", err)
	}
	s.mu.Lock()
	if !s.done {
		c.SetReadDeadline(time.Now().Add(startRead))
	}
	s.mu.Unlock()
	defer s.noDeadline(c)
	oob := make([]byte, syscall.CmsgSpace(4*4))
	n, oobn, flags, _, err := c.ReadMsgUnix(buf, oob)
	got = received(oob[:oobn])
	if err != nil || n == 0 {
		return got, stdio, errors.New("the caller is gone: it sent no descriptors")
	}
	if flags&(syscall.MSG_TRUNC|syscall.MSG_CTRUNC) != 0 {
		return got, stdio, fmt.Errorf("%w: a packet over %d bytes", ErrMessage, MaxMsg)
	}
	msg, err := Parse(buf[:n])
	if err != nil {
		return got, stdio, err
	}
	f, ok := msg.(*Files)
	if !ok {
		return got, stdio, fmt.Errorf("%w: %T where the descriptors were due", ErrMessage, msg)
	}
	if len(got) != len(f.Stdio) {
		return got, stdio, fmt.Errorf("%w: %d descriptors, not %d", ErrMessage, len(got), len(f.Stdio))
	}
	for i, fd := range f.Stdio {
		stdio[fd-'0'] = got[i]
	}
	return got, stdio, nil
}

// received returns the descriptors a packet carried, as files.
func received(oob []byte) []*os.File {
	if len(oob) == 0 {
		return nil
	}
	msgs, err := syscall.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	var files []*os.File
	for _, m := range msgs {
		fds, err := syscall.ParseUnixRights(&m)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			syscall.CloseOnExec(fd)
			files = append(files, os.NewFile(uintptr(fd), "shim-fd"))
		}
	}
	return files
}

func closeAll(files []*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
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
	s.closeDoor()
	s.acceptQueued()
	s.wg.Wait()
	s.closeKnown()
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
