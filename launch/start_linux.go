//go:build linux

package launch

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/envsieve/envsieve/pin"
	"github.com/envsieve/envsieve/shim"
)

// granted is a program the launcher started for a start request.
type granted struct {
	p      *os.Process
	joined bool
	once   sync.Once
	code   int
	sig    int
}

func (g *granted) Joined() bool { return g.joined }

func (g *granted) Signal(sig syscall.Signal) { g.p.Signal(sig) }

func (g *granted) Kill() { g.p.Kill() }

func (g *granted) Wait() (code, sig int) {
	g.once.Do(func() {
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

// startGranted starts the program at path for a start request: with the
// caller's descriptors 0-2 (/dev/null where it had none), in its working
// directory (by descriptor, so a directory the caller's mount namespace
// names differently is still the same one), in its process group when the
// kernel allows it (same session), else in one of its own. The program is
// killed if the launcher dies first. When prog is not nil (the rule pins
// the program's bytes), its sealed copy starts in place of path, inherited
// as descriptor 3 (a script's interpreter opens it by that name).
func startGranted(path string, argv, env []string, r *shim.StartRequest, prog *pin.Program) (shim.Process, error) {
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
	pgid := pgrpOf(r.Peer)
	if pgid > 0 {
		attr.Sys.Pgid = pgid
		if p, err := os.StartProcess(path, argv, attr); err == nil {
			return &granted{p: p, joined: true}, nil
		} else if !errors.Is(err, syscall.EPERM) {
			return nil, err
		}
		attr.Sys.Pgid = 0
	}
	p, err := os.StartProcess(path, argv, attr)
	if err != nil {
		return nil, err
	}
	return &granted{p: p}, nil
}

// pgrpOf returns the process group of pid (field 5 of /proc/PID/stat), as
// the launcher's pid namespace numbers it; 0 when unknown.
func pgrpOf(pid int) int {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return 0
	}
	pg, _ := strconv.Atoi(f[2])
	return pg
}

// dirOf returns the path of the directory open at f.
func dirOf(f *os.File) (string, error) {
	return os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd())))
}
