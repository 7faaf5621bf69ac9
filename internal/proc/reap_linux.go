//go:build linux

package proc

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The lifetime of a launch (docs/design.md, "The seal": lifetime): nothing
// started in the tree outlives it. A pid namespace's pid 1 gives that for
// free. Elsewhere (Landlock, unsealed) two holds do it:
//
//   - the tree's first program is started by a reaper (runReaper, the
//     Landlock init [ScopeInit] that stays): a child subreaper, so that
//     whatever the tree detaches (setsid, a double fork) is reparented to
//     it, which reaps it while the launch runs and, when the program
//     exits, kills whatever is left before it exits itself. Started by a
//     resident launcher, it watches the launcher (a pidfd) and does the
//     same the moment the launcher dies, even by SIGKILL;
//   - the resident launcher is a child subreaper too ([HoldTree]): what
//     escapes the reaper (the tree killed it; the programs the launcher
//     starts for grants, and what they start, which run outside the tree)
//     is reparented to the launcher, which kills it when the program has
//     exited.
//
// A cgroup would hold the tree without lineage, but an unprivileged user
// has one to make only where systemd delegates it (not in most containers
// or CI runners): a subreaper works for every user on every kernel since
// 3.4, and a pid namespace is the seal's first choice anyway.

// envReapParent names the resident launcher to a reaper it starts (its
// pid): the reaper ends the tree when that process ends. Never in the
// program's environment.
const envReapParent = "ENVSIEVE_INIT_PARENT"

// endWithin bounds how long ending a tree may take (a process in an
// uninterruptible sleep dies only when it wakes).
const endWithin = 5 * time.Second

// childrenOf returns the pids whose parent is pid: from the kernel's list
// of each of its threads' children (taskChildren), a read per thread; on
// a kernel built without that list, from every process's parent in /proc
// (scanChildren), a read per process on the machine: about 1.4 ms for the
// test VM's 66 processes, tens of ms for a desktop's hundreds, paid once
// at each resident launch's start and twice at its end.
func childrenOf(pid int) []int {
	if kids, ok := taskChildren(pid); ok {
		return kids
	}
	return scanChildren(pid)
}

// Children returns the pids of pid's children (childrenOf), for the
// tests that look at a launch's processes.
func Children(pid int) []int { return childrenOf(pid) }

// taskChildren reads /proc/PID/task/TID/children for each thread of pid
// (a child belongs to the thread that forked it, or to another live
// thread of the process once that one ends). ok is false where the
// kernel has no such file (CONFIG_PROC_CHILDREN) or a read fails.
func taskChildren(pid int) (kids []int, ok bool) {
	base := "/proc/" + strconv.Itoa(pid) + "/task/"
	d, err := os.Open(base)
	if err != nil {
		return nil, false
	}
	tids, err := d.Readdirnames(-1)
	d.Close()
	if err != nil || len(tids) == 0 {
		return nil, false
	}
	for _, tid := range tids {
		b, err := os.ReadFile(base + tid + "/children")
		if errors.Is(err, fs.ErrNotExist) {
			if _, serr := os.Stat(base + tid); serr == nil {
				return nil, false // the thread is there, the file is not
			}
			continue // the thread ended meanwhile: its children went to another
		}
		if err != nil {
			return nil, false
		}
		for _, f := range strings.Fields(string(b)) {
			p, err := strconv.Atoi(f)
			if err != nil {
				return nil, false
			}
			kids = append(kids, p)
		}
	}
	return kids, true
}

// scanChildren returns the pids whose parent is pid, from every
// process's /proc/PID/stat.
func scanChildren(pid int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	var kids []int
	for _, n := range names {
		if n[0] < '0' || n[0] > '9' {
			continue
		}
		p, err := strconv.Atoi(n)
		if err != nil || p == pid {
			continue
		}
		if pp, ok := parentOf(p); ok && pp == pid {
			kids = append(kids, p)
		}
	}
	return kids
}

// parentOf returns the parent pid of pid, from /proc/PID/stat.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	return statParent(b)
}

// statParent returns the parent pid in a /proc/PID/stat line: "pid (comm)
// state ppid ...", where comm is the process's own choice and may hold
// spaces and parentheses.
func statParent(b []byte) (int, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}

// Tree is a resident launcher's hold on the processes a launch starts:
// the launcher is a child subreaper, and keep are the children it had
// before the launch's program started (a broker process), which are not
// the tree's.
type Tree struct {
	keep map[int]bool
}

// HoldTree makes this process a child subreaper and returns its hold. An
// error (a kernel before 3.4) leaves what the tree detaches to the
// system's init: the launch goes on, and the reaper in the tree, where
// there is one, still ends it.
func HoldTree() (*Tree, error) {
	t := &Tree{keep: map[int]bool{}}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return t, fmt.Errorf("become a child subreaper: %w", err)
	}
	if hasChildren() {
		for _, p := range childrenOf(os.Getpid()) {
			t.keep[p] = true
		}
	}
	return t, nil
}

// hasChildren reports whether this process has a child, running or not:
// waitid fails with ECHILD only when it has none.
func hasChildren() bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_ALL, 0, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	return !errors.Is(err, syscall.ECHILD)
}

// End kills every child of this process but those kept, and those that
// become its children meanwhile (reparented orphans), and reaps them,
// until none is left. It returns how many it killed, and an error when
// some are left after endWithin. Other waiters of this process (the
// programs started for grants) may lose their child to it: it runs when
// the launch is over.
func (t *Tree) End() (int, error) {
	if t == nil {
		return 0, nil
	}
	self := os.Getpid()
	killed := map[int]bool{}
	deadline := time.Now().Add(endWithin)
	for {
		if !hasChildren() {
			return len(killed), nil
		}
		left := 0
		for _, p := range childrenOf(self) {
			if t.keep[p] {
				continue
			}
			left++
			if killPidfd(p, self) {
				killed[p] = true
			}
		}
		if left == 0 {
			// The kernel's list may miss a child while another exits or
			// forks (proc(5)): read it once more before the tree is taken
			// as ended.
			if again, ok := taskChildren(self); !ok || !slices.ContainsFunc(again, func(p int) bool { return !t.keep[p] }) {
				return len(killed), nil
			}
			continue
		}
		if time.Now().After(deadline) {
			return len(killed), fmt.Errorf("%d processes of the launch's tree did not end within %v of SIGKILL", left, endWithin)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// killPidfd sends SIGKILL to pid, if it is still a child of self, and
// reaps it if it has ended. Through a pidfd: another goroutine may reap
// the child meanwhile, and its pid then names another process.
func killPidfd(pid, self int) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, syscall.ENOSYS) {
		// A kernel before 5.3: by pid, and the race is open.
		if pp, ok := parentOf(pid); !ok || pp != self {
			return false
		}
		_ = syscall.Kill(pid, syscall.SIGKILL)
		_, _ = syscall.Wait4(pid, nil, syscall.WNOHANG, nil)
		return true
	}
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	if pp, ok := parentOf(pid); !ok || pp != self {
		return false
	}
	_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
	var info unix.Siginfo
	_ = unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG, nil)
	return true
}

// runReaper runs the program at path in this process's place as the
// tree's reaper (see the top of this file), and returns the status for
// main to exit with: the program's (128+N for a signal N), 127 or 126
// when it cannot start. The calling thread is locked and already in the
// tree's Landlock domain, which the program inherits. fds are the
// descriptors it inherits at the same numbers (inheritedFDs, taken
// before anything else was opened).
func runReaper(path string, argv, env []string, fds []uintptr) int {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		fmt.Fprintf(os.Stderr, "envsieve: scope: become a child subreaper: %v\n", err)
		return 125
	}
	launcher := -1
	prog := make([]string, 0, len(env))
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, envReapParent+"="); ok {
			launcher, _ = strconv.Atoi(v)
			continue
		}
		prog = append(prog, kv)
	}
	parent := -1
	if launcher > 0 {
		// Opened before the check: a launcher gone before it would be
		// seen as gone, never mistaken for the pid's next holder.
		fd, err := unix.PidfdOpen(launcher, 0)
		if err == nil && os.Getppid() != launcher {
			unix.Close(fd)
			fmt.Fprintln(os.Stderr, "envsieve: scope: the launcher ended before the program started")
			return 125
		}
		if err != nil {
			// No pidfd (a kernel before 5.3): the launcher's death
			// kills this process, and its program with it (below).
			if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(syscall.SIGKILL), 0, 0, 0); err != nil || os.Getppid() != launcher {
				return 125
			}
		}
		parent = fd
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)
	_, ttyErr := unix.IoctlGetTermios(0, unix.TCGETS)
	pid, err := syscall.ForkExec(path, argv, &syscall.ProcAttr{
		Env:   prog,
		Files: fds,
		// Killed with this process, whoever kills it: what the program
		// started is reparented to the launcher, which ends it.
		Sys: &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		err = execError(path, err)
		fmt.Fprintf(os.Stderr, "envsieve: %v\n", err)
		var nf *NotFoundError
		if errors.As(err, &nf) {
			return 127
		}
		return 126
	}
	go func() {
		for s := range sigs {
			// A terminal sent SIGINT and SIGQUIT to the whole process
			// group, the program included: not twice (as Supervise).
			if (s == syscall.SIGINT || s == syscall.SIGQUIT) && ttyErr == nil {
				continue
			}
			_ = syscall.Kill(pid, s.(syscall.Signal))
		}
	}()
	if parent >= 0 {
		go func() {
			fds := []unix.PollFd{{Fd: int32(parent), Events: unix.POLLIN}}
			for {
				if n, err := unix.Poll(fds, -1); n > 0 || (err != nil && err != unix.EINTR) {
					break
				}
			}
			// The launcher is gone: end the program, and the loop below
			// ends the rest.
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}()
	}
	status := 125
	var sig syscall.Signal
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			break
		}
		if got == pid {
			status = ws.ExitStatus()
			if ws.Signaled() {
				sig = ws.Signal()
				status = 128 + int(sig)
			}
			break
		}
	}
	if err := endChildren(); err != nil {
		fmt.Fprintf(os.Stderr, "envsieve: scope: %v\n", err)
	}
	if sig != 0 {
		raise(sig)
	}
	return status
}

// raise ends this process by sig, as the program ended, so that whoever
// waits for it (a shell, envsieve-daemon) sees the signal and not 128+N;
// without a core (the program dumped its own, if any). A signal Go's
// runtime takes for a fault of its own (SIGSEGV, SIGBUS, SIGFPE, SIGILL,
// SIGTRAP, SIGSYS) would print a crash instead: for those, and for one
// this process started out ignoring, it returns and the caller exits with
// 128+N.
func raise(sig syscall.Signal) {
	switch sig {
	case syscall.SIGSEGV, syscall.SIGBUS, syscall.SIGFPE, syscall.SIGILL, syscall.SIGTRAP, syscall.SIGSYS:
		return
	}
	_ = unix.Setrlimit(unix.RLIMIT_CORE, &unix.Rlimit{})
	RaiseSelf(sig)
}

// endChildren kills every child of this process, and every process that
// becomes its child meanwhile, and reaps them, until none is left: for a
// reaper, the only waiter of its children (no pid it signals can have
// been reused: its children stay until it reaps them).
func endChildren() error {
	self := os.Getpid()
	deadline := time.Now().Add(endWithin)
	for {
		for {
			got, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if errors.Is(err, syscall.ECHILD) {
				return nil
			}
			if err != nil || got <= 0 {
				break
			}
		}
		kids := childrenOf(self)
		for _, p := range kids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d processes of the tree did not end within %v of SIGKILL", len(kids), endWithin)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// inheritedFDs returns what a program started by this process inherits:
// descriptors 0-2 and every other one open without close-on-exec, at
// their numbers, ^uintptr(0) for the gaps. Call it before anything else
// is opened.
func inheritedFDs() []uintptr {
	fds := []uintptr{0, 1, 2}
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return fds
	}
	names, _ := d.Readdirnames(-1)
	dfd := int(d.Fd())
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd < 3 || fd == dfd || fd > 1<<16 {
			continue
		}
		flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0)
		if err != nil || flags&unix.FD_CLOEXEC != 0 {
			continue
		}
		for len(fds) <= fd {
			fds = append(fds, ^uintptr(0))
		}
		fds[fd] = uintptr(fd)
	}
	d.Close()
	return fds
}

// lifetimeAttr sets what ties a resident launcher's first program to the
// launcher, for a Cmd Supervise starts (not for a library caller's, nor an
// isolated one, whose init dies with it by the
// namespaces' own attributes): a reaper learns the launcher's pid, to end
// the tree when the launcher ends; any other program is killed then
// (PR_SET_PDEATHSIG). It returns the environment to start c with.
func (c *Cmd) lifetimeAttr(a *syscall.SysProcAttr, env []string) []string {
	if c.isolate || !c.tied {
		return env
	}
	if c.reaps {
		return append(env[:len(env):len(env)], envReapParent+"="+strconv.Itoa(os.Getpid()))
	}
	a.Pdeathsig = syscall.SIGKILL
	return env
}
