//go:build linux

package proc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/envsieve/envsieve/seal"
)

// Isolate returns a Cmd that runs c in new user, pid and mount namespaces
// with a /proc of their own, so that no ancestor's /proc/PID/environ is
// reachable from the child. The launcher re-executes itself as the
// namespaces' init, which mounts /proc, drops the capability it needed for
// that, starts the program with c's environment, forwards signals, reaps
// orphans and exits with the program's status.
//
// Call it before [MakeNonDumpable]: a non-dumpable process cannot read its
// own /proc/self/exe as an unprivileged user, and Isolate resolves the
// launcher's path from it.
func Isolate(c *Cmd) (*Cmd, error) { return IsolateWith(c, "") }

// IsolateWith is [Isolate] with init as the namespaces' init: the path of
// envsieve-init (shim.LocateInit), which does what [IsolateInit] does
// without a second Go start, or "" for envsieve itself.
func IsolateWith(c *Cmd, init string) (*Cmd, error) {
	if init != "" {
		args := append([]string{"envsieve-init", c.Path}, c.Args...)
		return &Cmd{Path: init, Args: args, Env: InitEnv(c.Env), Dir: c.Dir, Stdin: c.Stdin, Stdout: c.Stdout,
			Stderr: c.Stderr, WaitDelay: c.WaitDelay, ExtraFiles: c.ExtraFiles, isolate: true}, nil
	}
	ic, err := reexec(c, IsolateInitArg)
	if err != nil {
		return nil, fmt.Errorf("isolate: %w", err)
	}
	ic.isolate = true
	return ic, nil
}

// reexec returns a Cmd that runs envsieve itself with initArg, the
// program's path and its argv, and the program's environment with its
// LD_PRELOAD set aside: envsieve must not load the shim (it would hide keys
// from envsieve, not the program), and puts it back before the program
// starts.
func reexec(c *Cmd, initArg string) (*Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find envsieve's own executable: %w", err)
	}
	args := append([]string{"envsieve", initArg, c.Path}, c.Args...)
	return &Cmd{Path: self, Args: args, Env: InitEnv(c.Env), Dir: c.Dir, Stdin: c.Stdin, Stdout: c.Stdout,
		Stderr: c.Stderr, WaitDelay: c.WaitDelay, ExtraFiles: c.ExtraFiles}, nil
}

// programEnv is the environment of the program an init started by
// [reexec] runs: its own, with the program's LD_PRELOAD put back and the
// init's own variables removed.
func programEnv() []string {
	env := make([]string, 0, len(os.Environ()))
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, InitSeal) {
			continue // the init's, not the program's
		}
		if v, ok := strings.CutPrefix(kv, initPreload); ok {
			kv = "LD_PRELOAD=" + v
		}
		env = append(env, kv)
	}
	return env
}

// applySeal makes the seal an init was given (InitSeal) with apply: the
// namespaces' masks, or Landlock's domain. sealed is false when the init
// was given none.
func applySeal(apply func(seal.Spec) error) (sealed bool, err error) {
	text, ok := os.LookupEnv(strings.TrimSuffix(InitSeal, "="))
	if !ok {
		return false, nil
	}
	spec, err := seal.Decode(text)
	if err == nil {
		err = apply(spec)
	}
	return true, err
}

// IsolateSealedWith is [Isolate] with a sealed filesystem view and init as
// the init (see IsolateWith): the init masks and write-protects spec's paths
// in the new mount namespace before the program starts (see package seal).
func IsolateSealedWith(c *Cmd, spec seal.Spec, init string) (*Cmd, error) {
	text, err := spec.Encode()
	if err != nil {
		return nil, err
	}
	ic, err := IsolateWith(c, init)
	if err != nil {
		return nil, err
	}
	ic.Env = append(ic.Env, InitSeal+text)
	return ic, nil
}

// isolateAttr returns the clone attributes of an isolated init: the user's
// uid and gid mapped to themselves, and CAP_SYS_ADMIN (to mount /proc) and
// CAP_SETPCAP (to empty the bounding set) kept across the exec as ambient
// capabilities, in the new user namespace only; the init drops both, and
// every other, before the program starts.
func isolateAttr() *syscall.SysProcAttr {
	uid, gid := os.Getuid(), os.Getgid()
	return &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWPID | syscall.CLONE_NEWNS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}},
		GidMappingsEnableSetgroups: false,
		AmbientCaps:                []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP},
		Pdeathsig:                  syscall.SIGKILL,
	}
}

// IsolateInit is the init of an isolated child: args are the program's path
// and argv. It returns the exit status for main to exit with.
func IsolateInit(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "envsieve: isolate init: no program")
		return 125
	}
	// Capabilities and mounts act per thread: do everything, and start the
	// program, from this one.
	runtime.LockOSThread()
	if err := mountProc(); err != nil {
		fmt.Fprintf(os.Stderr, "envsieve: isolate: %v\n", err)
		return 125
	}
	if sealed, err := applySeal(seal.Apply); err != nil {
		fmt.Fprintf(os.Stderr, "envsieve: %v\n", err)
		return 125
	} else if sealed {
		if err := enterSealedCwd(); err != nil {
			fmt.Fprintf(os.Stderr, "envsieve: isolate: seal: %v\n", err)
			return 125
		}
	}
	// The program must hold no capability: not the one the mount needed,
	// and none at all when envsieve runs as root (uid 0 in the namespace
	// regains every capability of the bounding set at exec, enough to
	// umount /proc and see the host's processes).
	if err := dropCapabilities(); err != nil {
		fmt.Fprintf(os.Stderr, "envsieve: isolate: drop capabilities: %v\n", err)
		return 125
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, forwarded...)
	cmd := exec.Command(args[0])
	cmd.Args = args[1:]
	// The launcher built it: the init runs with the child's environment,
	// its LD_PRELOAD set aside.
	cmd.Env = programEnv()
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "envsieve: isolate: %v\n", execError(args[0], err))
		var nf *NotFoundError
		if errors.As(execError(args[0], err), &nf) {
			return 127
		}
		return 126
	}
	pid := cmd.Process.Pid
	go func() {
		for s := range sigs {
			_ = syscall.Kill(pid, s.(syscall.Signal))
		}
	}()
	// As pid 1, reap every orphan until the program itself exits.
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 125
		}
		if got == pid {
			if ws.Signaled() {
				return 128 + int(ws.Signal())
			}
			return ws.ExitStatus()
		}
	}
}

// enterSealedCwd moves the init into its working directory as the sealed
// view names it (as envsieve-init's enter_sealed_cwd): the directory it
// was started in is the real one beneath the seal's mounts (HOME itself,
// a held directory's copy is mounted over it), and a relative path from
// it would reach the real files. Where the path no longer leads anywhere
// in the view, the program does not start.
func enterSealedCwd() error {
	wd, err := unix.Getwd()
	if err != nil {
		return fmt.Errorf("find the working directory: %w", err)
	}
	if err := unix.Chdir(wd); err != nil {
		return fmt.Errorf("enter the working directory in the sealed view %s: %w", wd, err)
	}
	return nil
}

// dropCapabilities empties, for this thread and what it starts, the
// ambient, inheritable and bounding sets. At exec, a program's permitted set
// is then empty whatever its uid (root's implicit file capabilities are
// masked by the bounding set) and whatever file capabilities it carries.
func dropCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return fmt.Errorf("clear ambient: %w", err)
	}
	for c := 0; c <= unix.CAP_LAST_CAP; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && err != unix.EINVAL {
			return fmt.Errorf("drop %d from the bounding set: %w", c, err)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capget: %w", err)
	}
	data[0].Inheritable, data[1].Inheritable = 0, 0
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("capset: %w", err)
	}
	return nil
}

// mountProc gives the namespace a private mount tree and a /proc that shows
// only its own processes.
func mountProc() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("mount /proc: %w", err)
	}
	return nil
}

// NoSeccomp reports whether this process runs under no seccomp filter (a
// filter that refuses to say counts as one). A filter, a container's, may
// refuse user namespaces that the kernel's switches allow (seal.Available);
// without one only a limit or a security module can, rare enough to be
// met after the exec.
func NoSeccomp() bool {
	mode, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	return err == nil && mode == 0
}
