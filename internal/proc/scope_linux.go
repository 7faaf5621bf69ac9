//go:build linux

package proc

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/envsieve/envsieve/seal"
)

// Scope returns a Cmd that runs c in a Landlock domain of its own: the
// launcher re-executes itself, restricts its thread, and execs the program
// from it. A process in a Landlock domain cannot ptrace, nor read the
// /proc/PID/environ or /proc/PID/mem of, a process outside it; so the
// programs the launcher starts with real values (exec-time grants) are out
// of the tree's reach even where Yama allows any same-user ptrace. The
// domain restricts nothing else the user can do (it handles only the
// creation of block devices, which needs a privilege the tree lacks). It
// sets no_new_privs, which Landlock requires: setuid programs (sudo) do not
// gain privileges in the tree.
//
// Call it before [MakeNonDumpable], for the same reason as [Isolate].
func Scope(c *Cmd) (*Cmd, error) {
	if _, err := landlockABI(); err != nil {
		return nil, err
	}
	sc, err := reexec(c, ScopeInitArg)
	if err != nil {
		return nil, fmt.Errorf("scope: %w", err)
	}
	sc.reaps = true
	return sc, nil
}

// landlockABI returns the kernel's Landlock ABI version, or an error
// wrapping ErrNoScope.
func landlockABI() (int, error) {
	abi, err := seal.LandlockABI()
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrNoScope, err)
	}
	return abi, nil
}

// ScopeSealed is [Scope] with the seal made by Landlock: the init enters
// a domain that seals spec (seal.Restrict) instead of the scope's empty
// one, which keeps the tree out of launcher-started programs all the same.
// The init fails, and nothing starts, where the seal cannot be made.
func ScopeSealed(c *Cmd, spec seal.Spec) (*Cmd, error) {
	text, err := spec.Encode()
	if err != nil {
		return nil, err
	}
	sc, err := reexec(c, ScopeInitArg)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	sc.Env = append(sc.Env, InitSeal+text)
	sc.reaps = true
	return sc, nil
}

// ScopeInit is the process [Scope] starts: args are the program's path and
// argv. It enters a new Landlock domain and starts the program from the
// same thread, so the program starts in the domain; then it stays as the
// tree's reaper, and ends whatever the tree left when the program exits
// (see reap_linux.go). It returns the status for main to exit with: the
// program's, or 125-127 when it could not start.
func ScopeInit(args []string) int {
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "envsieve: scope: no program")
		return 125
	}
	// What the program inherits, before anything here is opened.
	fds := inheritedFDs()
	// no_new_privs and the domain are the thread's: set both, and start
	// the program, from this one.
	runtime.LockOSThread()
	if sealed, err := applySeal(seal.Restrict); sealed || err != nil {
		if err != nil {
			fmt.Fprintf(os.Stderr, "envsieve: %v\n", err)
			return 125
		}
	} else if err := enterDomain(); err != nil {
		fmt.Fprintf(os.Stderr, "envsieve: scope: %v\n", err)
		return 125
	}
	// This process stays, as the tree's reaper: nothing the tree starts
	// outlives the program (reap_linux.go).
	return runReaper(args[0], args[1:], programEnv(), fds)
}

// enterDomain puts the calling thread in a new Landlock domain that handles
// only the creation of block devices.
func enterDomain() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	attr := unix.LandlockRulesetAttr{Handled_access_fs: unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), 8, 0)
	if errno != 0 {
		return fmt.Errorf("%w: create a ruleset: %v", ErrNoScope, errno)
	}
	defer unix.Close(int(fd))
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); errno != 0 {
		return fmt.Errorf("%w: restrict: %v", ErrNoScope, errno)
	}
	return nil
}
