// Package proc is the process layer under package launch: it starts a
// program with an environment that was built, never inherited, and holds
// what the program starts. It imports nothing of envsieve but package
// seal (internal/layers keeps it so), and guarantees:
//
//   - a nil environment is an error ([ErrNilEnv]), never "inherit the
//     parent's"; [LookPath] searches the child's PATH, never a relative
//     entry;
//   - an isolated or scoped program starts already inside its namespaces
//     ([Isolate]) or its Landlock domain ([Scope]), with the seal it was
//     given ([IsolateSealedWith], [ScopeSealed]) made before its first
//     instruction; an isolated one holds no capability;
//   - the tree ends with its launcher: a resident launcher ([Supervise]) is
//     a child subreaper and kills what the program left when it exits, and
//     the program it started dies with it, even by SIGKILL;
//   - the launcher can be made non-dumpable ([MakeNonDumpable]), so that
//     the user's other processes cannot read its memory or environment.
package proc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Errors callers branch on. Use errors.Is.
var (
	// ErrNilEnv is returned when a Cmd has no environment: launch never
	// falls back to inheriting the parent's.
	ErrNilEnv = errors.New("launch: nil Env (an environment must be given, never inherited)")
	// ErrNotExecutable is returned for a program that exists but cannot be
	// executed (exit status 126).
	ErrNotExecutable = errors.New("not executable")
	// errNUL is returned for an argument or environment string holding NUL.
	errNUL = errors.New("holds a NUL byte")
)

// NotFoundError reports a program that is not in the child's PATH (exit
// status 127).
type NotFoundError struct {
	Name string
	Err  error
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("%s: command not found in the child's PATH", e.Name)
}

func (e *NotFoundError) Unwrap() error { return e.Err }

// LookPath finds file in the PATH of env, the child's environment. A name
// holding a '/' is used as it is. Relative PATH entries ("", ".", "bin") are
// skipped. The error is a *NotFoundError, or wraps ErrNotExecutable when
// the only match cannot be executed.
func LookPath(file string, env []string) (string, error) {
	if file == "" {
		return "", &NotFoundError{Name: file, Err: fs.ErrNotExist}
	}
	if strings.Contains(file, "/") {
		if err := executable(file); err != nil {
			return "", err
		}
		return file, nil
	}
	var firstErr error
	for _, dir := range filepath.SplitList(getenv(env, "PATH")) {
		if !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, file)
		err := executable(p)
		if err == nil {
			return p, nil
		}
		if firstErr == nil && errors.Is(err, ErrNotExecutable) {
			firstErr = err
		}
	}
	if firstErr != nil {
		return "", firstErr
	}
	return "", &NotFoundError{Name: file, Err: fs.ErrNotExist}
}

func executable(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return &NotFoundError{Name: path, Err: err}
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return fmt.Errorf("%s: %w", path, ErrNotExecutable)
	}
	return nil
}

// getenv returns the value of the first key in env, as getenv(3) would.
func getenv(env []string, key string) string {
	for _, kv := range env {
		if len(kv) > len(key) && kv[len(key)] == '=' && kv[:len(key)] == key {
			return kv[len(key)+1:]
		}
	}
	return ""
}

// Exec replaces the current process with path, argv and env. It returns only
// on failure; env must not be nil.
func Exec(path string, argv, env []string) error {
	if env == nil {
		return ErrNilEnv
	}
	if err := CheckNUL(argv, env); err != nil {
		return err
	}
	err := syscall.Exec(path, argv, env)
	return execError(path, err)
}

// WrapStartError maps the error of starting path (exec.Cmd.Start, or exec
// in place) to the errors the exit switch knows: a *NotFoundError (127)
// for a missing program, ErrNotExecutable (126) for one that cannot run.
func WrapStartError(path string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return execError(path, pe.Err)
	}
	return execError(path, err)
}

func execError(path string, err error) error {
	switch {
	case errors.Is(err, syscall.ENOENT):
		return &NotFoundError{Name: path, Err: err}
	case errors.Is(err, syscall.EACCES), errors.Is(err, syscall.ENOEXEC), errors.Is(err, syscall.EISDIR):
		return fmt.Errorf("%s: %w: %v", path, ErrNotExecutable, err)
	case errors.Is(err, syscall.E2BIG):
		return fmt.Errorf("exec %s: argument list and environment too long for the kernel: %w", path, err)
	}
	return fmt.Errorf("exec %s: %w", path, err)
}

func CheckNUL(argv, env []string) error {
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("argument %d: %w", i, errNUL)
		}
	}
	for _, kv := range env {
		if strings.IndexByte(kv, 0) >= 0 {
			key, _, _ := strings.Cut(kv, "=")
			return fmt.Errorf("environment variable %s: %w", key, errNUL)
		}
	}
	return nil
}

// Cmd is exec.Cmd with a policy: a program to run with an environment that was
// built, never inherited. Create one with [Command], or fill the fields and
// call Start.
type Cmd struct {
	// Path is the program to run. Command sets it from the child's PATH.
	Path string
	// Args holds the arguments, including the program name as Args[0].
	Args []string
	// Env is the child's whole environment. A nil Env is an error
	// ([ErrNilEnv]); an empty, non-nil Env starts the child with nothing.
	Env []string
	// Dir is the working directory; "" means the caller's.
	Dir string
	// Stdin, Stdout and Stderr are as in exec.Cmd: nil means the null device.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// WaitDelay bounds how long Wait waits for I/O after the child exits
	// (a grandchild holding a pipe cannot hang the caller). Zero means 5s.
	WaitDelay time.Duration
	// ExtraFiles are open files the child gets as its descriptors 3 and
	// on, as in exec.Cmd; nil gives it none besides the inheritable ones.
	ExtraFiles []*os.File

	cmd     *exec.Cmd
	isolate bool // set by Isolate: start in new namespaces
	reaps   bool // set by Scope: the tree's reaper, watching the launcher
	tied    bool // set by Supervise: ends with the launcher (lifetimeAttr)
	// ruleset is the Landlock ruleset envsieve-init's Landlock init enters
	// ([ScopeWith]): inherited at its own number, and closed here once
	// the init has started (passRuleset).
	ruleset *os.File
}

// Start starts the command. It fails with ErrNilEnv when Env is nil.
func (c *Cmd) Start() error { return c.startContext(context.Background()) }

// startContext is Start with a context that kills the child when done.
func (c *Cmd) startContext(ctx context.Context) error {
	if c.Env == nil {
		return ErrNilEnv
	}
	if c.cmd != nil {
		return errors.New("launch: already started")
	}
	if err := CheckNUL(c.Args, c.Env); err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, c.Path)
	cmd.Args = c.Args
	cmd.Env = c.Env
	if len(c.Env) == 0 {
		cmd.Env = []string{} // never nil: nil would inherit
	}
	cmd.Dir = c.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	cmd.ExtraFiles = c.ExtraFiles
	cmd.WaitDelay = c.WaitDelay
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 5 * time.Second
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{}
	if c.isolate {
		cmd.SysProcAttr = isolateAttr()
	}
	cmd.Env = c.lifetimeAttr(cmd.SysProcAttr, cmd.Env)
	c.cmd = cmd
	started := c.passRuleset()
	err := cmd.Start()
	started()
	if err != nil {
		return c.startError(err)
	}
	return nil
}

func (c *Cmd) startError(err error) error {
	if c.isolate && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EUSERS)) {
		return fmt.Errorf("isolate: %w: %v (user namespaces may be disabled: see /proc/sys/user/max_user_namespaces)", ErrNamespaces, err)
	}
	return WrapStartError(c.Path, err)
}

// Wait waits for the command to exit; see exec.Cmd.Wait.
func (c *Cmd) Wait() error {
	if c.cmd == nil {
		return errors.New("launch: not started")
	}
	return c.cmd.Wait()
}

// Run starts the command and waits for it.
func (c *Cmd) Run() error {
	if err := c.Start(); err != nil {
		return err
	}
	return c.Wait()
}

// ProcessState returns the exited process's state, or nil before Wait.
func (c *Cmd) ProcessState() *os.ProcessState {
	if c.cmd == nil {
		return nil
	}
	return c.cmd.ProcessState
}
