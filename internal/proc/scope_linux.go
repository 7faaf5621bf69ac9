//go:build linux

package proc

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
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
// a domain that seals spec ([Restrict]) instead of the scope's empty
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

// Restrict seals s for the calling thread and every program it then
// executes: it enters the Landlock domain of s's ruleset (seal.Ruleset),
// setting no_new_privs, which Landlock requires. The caller must hold its
// OS thread locked and exec the program from it; any error leaves the
// thread unrestricted, and the caller must not start the program.
func Restrict(s seal.Spec) error {
	rfd, err := seal.Ruleset(s)
	if err != nil {
		return err
	}
	defer unix.Close(rfd)
	if err := enterRuleset(rfd); err != nil {
		return fmt.Errorf("seal: %w", err)
	}
	return nil
}

// enterRuleset puts the calling thread in the Landlock domain of the
// ruleset at rfd, setting no_new_privs first, which Landlock requires.
func enterRuleset(rfd int) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(rfd), 0, 0); errno != 0 {
		return fmt.Errorf("landlock_restrict_self: %v", errno)
	}
	return nil
}

// rulesetMin is the lowest number landlockInit gives the ruleset a
// resident launcher hands envsieve-init's Landlock init.
const rulesetMin = 256

// initLandlock names, to envsieve-init's Landlock init, the descriptor of
// the ruleset it puts the program in (shim/libenvsieve/init.c,
// landlock_main).
const initLandlock = "ENVSIEVE_INIT_LANDLOCK="

// ScopeWith is [Scope] with init as the tree's reaper: the path of
// envsieve-init (shim.LocateInit), whose Landlock init does what
// [ScopeInit] does without a second Go start, or "" for envsieve itself.
// The launcher builds the domain's ruleset and the init inherits it; the
// init stays outside the domain it puts the program in.
func ScopeWith(c *Cmd, init string) (*Cmd, error) {
	if init == "" {
		return Scope(c)
	}
	if _, err := landlockABI(); err != nil {
		return nil, err
	}
	rfd, err := scopeRuleset()
	if err != nil {
		return nil, fmt.Errorf("scope: %w", err)
	}
	return landlockInit(c, init, rfd)
}

// ScopeSealedWith is [ScopeSealed] with init as the tree's reaper (see
// [ScopeWith]): the launcher builds the seal's ruleset (seal.Ruleset).
func ScopeSealedWith(c *Cmd, spec seal.Spec, init string) (*Cmd, error) {
	if init == "" {
		return ScopeSealed(c, spec)
	}
	rfd, err := seal.Ruleset(spec)
	if err != nil {
		return nil, err
	}
	return landlockInit(c, init, rfd)
}

// landlockInit returns the Cmd that starts c by envsieve-init's Landlock
// init at init, in the ruleset at rfd, which it takes. It is inherited at
// its own number (passRuleset), which must be none the child's start
// writes: its descriptors at 0 to n-1 (stdio and c.ExtraFiles), and the
// numbers just past the highest of them that Go's forkAndExecInChild
// moves some of them to first (its pass 1), which depend on pipes
// os/exec makes at the start. So it goes high, at rulesetMin or past it,
// past all of those but in a launcher holding hundreds of descriptors;
// and should one of them land on it all the same, the init finds no
// ruleset there and fails (125): nothing starts outside the domain.
func landlockInit(c *Cmd, init string, rfd int) (*Cmd, error) {
	n := 3 + len(c.ExtraFiles)
	fd, err := unix.FcntlInt(uintptr(rfd), unix.F_DUPFD_CLOEXEC, max(rulesetMin, 2*n+1))
	if errors.Is(err, unix.EINVAL) {
		// Past the limit of open files: as high as the limit allows.
		fd, err = unix.FcntlInt(uintptr(rfd), unix.F_DUPFD_CLOEXEC, 2*n+1)
	}
	unix.Close(rfd)
	if err != nil {
		return nil, fmt.Errorf("scope: move the Landlock ruleset: %w", err)
	}
	args := append([]string{"envsieve-init", "--landlock", c.Path}, c.Args...)
	env := append(InitEnv(c.Env), initLandlock+strconv.Itoa(fd))
	return &Cmd{Path: init, Args: args, Env: env, Dir: c.Dir, Stdin: c.Stdin, Stdout: c.Stdout,
		Stderr: c.Stderr, WaitDelay: c.WaitDelay, ExtraFiles: c.ExtraFiles, reaps: true,
		ruleset: os.NewFile(uintptr(fd), "landlock-ruleset")}, nil
}

// passRuleset lets the child about to start inherit c's Landlock ruleset
// at its number (another child the launcher starts meanwhile may inherit
// it too: a ruleset gives nothing, it only restricts whoever enters it).
// The returned function, called once the start is done, closes the
// launcher's copy.
func (c *Cmd) passRuleset() (started func()) {
	if c.ruleset == nil {
		return func() {}
	}
	f := c.ruleset
	c.ruleset = nil
	if _, err := unix.FcntlInt(f.Fd(), unix.F_SETFD, 0); err != nil {
		// Left close-on-exec: the init finds no ruleset and fails (125),
		// and nothing starts unsealed.
		f.Close()
		return func() {}
	}
	return func() { f.Close() }
}

// ExecScopedEnv is what the launcher execs envsieve-init's Landlock init
// in its own place with: the variable naming the ruleset of spec's seal,
// which it leaves open across the exec (no other process is started
// meanwhile: the launch is in place). The init forks the tree's reaper,
// which watches it, and waits for it.
func ExecScopedEnv(spec seal.Spec) (string, error) {
	rfd, err := seal.Ruleset(spec)
	if err != nil {
		return "", err
	}
	if _, err := unix.FcntlInt(uintptr(rfd), unix.F_SETFD, 0); err != nil {
		unix.Close(rfd)
		return "", fmt.Errorf("seal: pass the Landlock ruleset: %w", err)
	}
	return initLandlock + strconv.Itoa(rfd), nil
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
	if sealed, err := applySeal(Restrict); sealed || err != nil {
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
// only the creation of block devices (scopeRuleset).
func enterDomain() error {
	fd, err := scopeRuleset()
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := enterRuleset(fd); err != nil {
		return fmt.Errorf("%w: %w", ErrNoScope, err)
	}
	return nil
}

// scopeRuleset returns the ruleset of a scope's own domain: it handles
// only the creation of block devices, which needs a privilege the tree
// lacks, so it restricts nothing the user can do.
func scopeRuleset() (int, error) {
	attr := unix.LandlockRulesetAttr{Handled_access_fs: unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), 8, 0)
	if errno != 0 {
		return -1, fmt.Errorf("%w: create a ruleset: %v", ErrNoScope, errno)
	}
	return int(fd), nil
}
