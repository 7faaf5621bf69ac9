//go:build linux

package launch

import (
	"errors"
	"os"
	"strconv"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/envsieve/envsieve/internal/pin"
	"github.com/envsieve/envsieve/internal/shimwire"
)

// granted is a program the launcher started for a start request.
type granted struct {
	p *os.Process
	// pidfd is the program's pidfd, registered with Go's poller: the
	// program is waited for without a thread blocked in waitid, which
	// keeps the runtime's scheduler quiet while it runs. nil: wait through
	// p.
	pidfd  *os.File
	joined bool
	// visible is the program's pid when its caller shares the launcher's
	// pid namespace (unsealed, or sealed by Landlock), else 0: under the
	// namespace seal the tree cannot see it.
	visible int
	// handle is a pidfd of the program for its caller, when the caller
	// cannot see the program and has no power over it (endHandle); nil
	// otherwise. The shim's server sends it with "begun" and closes it.
	handle *os.File
	once   sync.Once
	code   int
	sig    int
}

func (g *granted) Joined() bool { return g.joined }

// CallerPID is the program's pid as its caller's pid namespace numbers
// it, 0 when the caller cannot see it: the shim's server sends it with
// "begun", so that the caller sees the program end without the launcher.
func (g *granted) CallerPID() int { return g.visible }

// EndHandle hands over the program's pidfd for its caller (nil when it
// gets none): the shim's server sends it with "begun" and closes it.
func (g *granted) EndHandle() *os.File {
	h := g.handle
	g.handle = nil
	return h
}

// ownPidNS is the inode of the launcher's pid namespace; 0 when unknown.
var ownPidNS = sync.OnceValue(func() uint64 { return pidNS("self") })

// pidNS returns the inode of the pid namespace of the process proc names
// under /proc; 0 when unknown.
func pidNS(proc string) uint64 { return nsInode(proc, "pid") }

// visiblePID returns pid when the caller (peer, as the launcher numbers
// it) is in the launcher's pid namespace, else 0.
func visiblePID(peer, pid int) int {
	if peer <= 0 {
		return 0
	}
	if own := ownPidNS(); own == 0 || pidNS(strconv.Itoa(peer)) != own {
		return 0
	}
	return pid
}

// endHandle returns a pidfd of the program (a copy of pidfd, the
// launcher's) for a caller (peer, as the launcher numbers it) that cannot
// see it: under the namespace seal the tree is in a pid namespace and a
// user namespace below the launcher's, and the caller learns from the
// pidfd only that the program has ended (poll). The kernel keeps the rest
// from it: pidfd_send_signal refuses a signaller whose pid namespace is
// not the program's or an ancestor of it, and what would read or take
// from the program (pidfd_getfd, process_madvise, its namespaces) asks for
// ptrace access, which a process without capabilities in the program's
// user namespace does not have (TestEndHandlePowers). So a caller in the
// launcher's own pid or user namespace, or in one that is not below it,
// gets nil: it sees the program by its pid, or not at all.
func endHandle(peer, pidfd int) *os.File {
	if peer <= 0 || pidfd < 0 {
		return nil
	}
	proc := strconv.Itoa(peer)
	if !belowOwn(proc, "pid") || !belowOwn(proc, "user") {
		return nil
	}
	fd, err := unix.FcntlInt(uintptr(pidfd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	return os.NewFile(uintptr(fd), "pidfd")
}

// belowOwn reports whether the namespace of kind ("pid", "user") of the
// process proc names under /proc is strictly below the launcher's own:
// its parent, or its parent's parent, and so on, is the launcher's.
func belowOwn(proc, kind string) bool {
	own := nsInode("self", kind)
	fd, err := unix.Open("/proc/"+proc+"/ns/"+kind, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil || own == 0 {
		if err == nil {
			unix.Close(fd)
		}
		return false
	}
	for depth := 0; depth < 33; depth++ { // the kernel nests at most 32
		var st unix.Stat_t
		if unix.Fstat(fd, &st) != nil {
			break
		}
		if st.Ino == own {
			unix.Close(fd)
			return depth > 0
		}
		// NS_GET_PARENT fails (EPERM) above the launcher's own namespace.
		parent, err := unix.IoctlRetInt(fd, unix.NS_GET_PARENT)
		unix.Close(fd)
		if err != nil {
			return false
		}
		fd = parent
	}
	unix.Close(fd)
	return false
}

// nsInode returns the inode of the namespace of kind ("pid", "user") of
// the process proc names under /proc; 0 when unknown.
func nsInode(proc, kind string) uint64 {
	var st unix.Stat_t
	if unix.Stat("/proc/"+proc+"/ns/"+kind, &st) != nil {
		return 0
	}
	return st.Ino
}

func (g *granted) Signal(sig syscall.Signal) { g.p.Signal(sig) }

func (g *granted) Kill() { g.p.Kill() }

func (g *granted) Wait() (code, sig int) {
	g.once.Do(func() {
		if g.handle != nil { // not sent: the caller could see the program
			g.handle.Close()
			g.handle = nil
		}
		if g.pidfd != nil {
			g.code, g.sig = g.waitPidfd()
			return
		}
		st, err := g.p.Wait()
		if err != nil {
			g.code = 125
			return
		}
		ws, _ := st.Sys().(syscall.WaitStatus)
		switch {
		case ws.Signaled():
			g.sig = int(ws.Signal())
		default:
			g.code = ws.ExitStatus()
		}
	})
	return g.code, g.sig
}

// si_code of a child's end (linux/signal.h)
const (
	cldExited = 1
	cldKilled = 2
	cldDumped = 3
)

// sigchld is the part of siginfo_t that waitid fills for a child.
type sigchld struct {
	Signo, Errno, Code, _ int32
	Pid                   int32
	UID                   uint32
	Status                int32
	_                     [100]byte
}

// waitPidfd waits for the program through its pidfd: the poller wakes this
// goroutine when the program has ended, and waitid reaps it.
func (g *granted) waitPidfd() (code, sig int) {
	defer g.p.Release()
	defer g.pidfd.Close()
	rc, err := g.pidfd.SyscallConn()
	if err != nil {
		return 125, 0
	}
	var info sigchld
	var werr error
	err = rc.Read(func(fd uintptr) bool {
		info = sigchld{}
		werr = unix.Waitid(unix.P_PIDFD, int(fd), (*unix.Siginfo)(unsafe.Pointer(&info)), unix.WEXITED|unix.WNOHANG, nil)
		if errors.Is(werr, syscall.EINTR) {
			return false
		}
		// Not ended yet (WNOHANG filled nothing): wait for the pidfd to
		// become readable.
		return werr != nil || info.Pid != 0
	})
	if err != nil || werr != nil {
		return 125, 0
	}
	switch info.Code {
	case cldExited:
		return int(info.Status), 0
	case cldKilled, cldDumped:
		return 0, int(info.Status)
	}
	return 125, 0
}

// errCallerGone: the start request's caller closed its connection before
// the program started.
var errCallerGone = errors.New("the caller gave up waiting before the start")

// startGranted starts the program at path for a start request: with the
// caller's descriptors 0-2 (/dev/null where it had none), in its working
// directory (by descriptor, so a directory the caller's mount namespace
// names differently is still the same one), in its process group when the
// kernel allows it (same session), else in one of its own. The program is
// killed if the launcher dies first. When prog is not nil (the rule pins
// the program's bytes), its sealed copy starts in place of path, inherited
// as descriptor 3 (a script's interpreter opens it by that name).
func startGranted(path string, argv, env []string, r *shimwire.StartRequest, prog *pin.Program) (shimwire.Process, error) {
	files := make([]*os.File, 3, 4)
	var null *os.File
	for i, f := range r.Stdio {
		if f == nil {
			if null == nil {
				var err error
				if null, err = os.Open(os.DevNull); err != nil {
					return nil, err
				}
				defer null.Close()
			}
			f = null
		}
		files[i] = f
	}
	if prog != nil {
		files = append(files, prog.File)
		path = pin.FDPath(3)
	}
	attr := &os.ProcAttr{
		Dir:   "/proc/self/fd/" + strconv.Itoa(int(r.Dir.Fd())),
		Env:   env,
		Files: files,
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	pidfd := -1
	attr.Sys.PidFD = &pidfd
	// The caller that gave up waiting (a launcher stopped or slow between
	// its decision and here) runs the program itself, or failed closed:
	// this start would be a second run.
	if r.Gone() {
		return nil, errCallerGone
	}
	pgid := pgrpOf(r.Peer)
	if pgid > 0 {
		attr.Sys.Pgid = pgid
		if p, err := os.StartProcess(path, argv, attr); err == nil {
			closeStdio(r)
			return newGranted(p, pidfd, true), nil
		} else if !errors.Is(err, syscall.EPERM) {
			return nil, err
		}
		attr.Sys.Pgid = 0
		pidfd = -1
	}
	p, err := os.StartProcess(path, argv, attr)
	if err != nil {
		return nil, err
	}
	closeStdio(r)
	return newGranted(p, pidfd, false), nil
}

// seenBy sets what the caller (peer, as the launcher numbers it) may see
// of the program p just started: its pid (visiblePID) or, when it cannot,
// a pidfd (endHandle). It reads the caller's /proc entry, so it runs on
// one of the launcher's ordinary threads: from the granter's, which the
// seal's Landlock domain confines, the kernel refuses it (a sibling
// domain's process cannot be inspected), and the caller would see
// nothing.
func seenBy(p shimwire.Process, peer int) {
	g, ok := p.(*granted)
	if !ok {
		return
	}
	if g.visible = visiblePID(peer, g.p.Pid); g.visible > 0 || g.pidfd == nil {
		return
	}
	rc, err := g.pidfd.SyscallConn()
	if err != nil {
		return
	}
	rc.Control(func(fd uintptr) { g.handle = endHandle(peer, int(fd)) })
}

// closeStdio closes the launcher's copies of the caller's descriptors 0-2
// as soon as the program has them: a launcher stopped from here on holds
// none of the caller's output open (the server closes them again, which
// does nothing).
func closeStdio(r *shimwire.StartRequest) {
	for _, f := range r.Stdio {
		if f != nil {
			f.Close()
		}
	}
}

// newGranted wraps a program just started; pidfd is its pidfd (the
// launcher's own copy), -1 when the kernel gave none.
func newGranted(p *os.Process, pidfd int, joined bool) *granted {
	g := &granted{p: p, joined: joined}
	if pidfd >= 0 {
		if err := syscall.SetNonblock(pidfd, true); err == nil {
			g.pidfd = os.NewFile(uintptr(pidfd), "pidfd")
		} else {
			syscall.Close(pidfd)
		}
	}
	return g
}

// pgrpOf returns the process group of pid, as the launcher's pid
// namespace numbers it; 0 when unknown.
func pgrpOf(pid int) int {
	if pid <= 0 {
		return 0
	}
	pg, err := unix.Getpgid(pid)
	if err != nil {
		return 0
	}
	return pg
}

// dirOf returns the path of the directory open at f.
func dirOf(f *os.File) (string, error) {
	return os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
}
