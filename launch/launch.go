// Package launch starts programs with an environment built by the sieve
// engine. It is the edge where the engine's pure result meets the operating
// system, and it owns one launch from request to exit, in two steps:
// [Build] fetches the request's secrets from the sources the policy names
// (file-delivered ones as sealed memory files) and builds the environment;
// [Plan.Start] settles the seal, starts the broker, opens the audit log,
// serves the shim and its exec-time grants, and starts the program with
// its output masked, in place or as the child of a resident, non-dumpable
// launcher; [Running.Wait] ends it. `envsieve run`, `envsieve sh`, every
// command of an envsieve-daemon session and a library caller take these
// same two steps, with one set of semantics; a [Host] says where each finds
// its secrets, keys and files, and whether it is a server that runs
// launches side by side ([Host.Server]).
//
// The lower layer is os/exec's: [LookPath] in the child's PATH, [Exec] in
// place, [Cmd] as a child process, [Supervise] as a resident launcher,
// [Isolate] in namespaces of its own.
//
// # Security
//
// os/exec has one trap for a tool like this: a nil exec.Cmd.Env means "inherit
// the parent's environment". [Cmd] reverses it: a nil Env is an error
// ([ErrNilEnv]) and never a fallback, so a caller that forgets to build an
// environment starts nothing rather than leaking everything.
//
// [LookPath] searches the child's PATH, not the launcher's, and ignores
// relative entries such as "." or "": a program found in the working
// directory by accident is a classic way to run the wrong binary.
//
// # Nesting
//
// Every environment [Build] makes (the first program's, each program the
// launcher starts for an exec-time grant, each command of a daemon
// session) carries the marker ENVSIEVE_TREE=1 (package internal/nest), so
// that an envsieve started inside the tree knows it is nested. A nested
// launch ([Host.Nested]) only narrows: its secrets come from nothing but
// the environment it was given ([ErrNested]). [Command], the library's
// one-shot form, sets no marker: it starts a child of the Go program that
// calls it, not of envsieve.
package launch

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

	"github.com/envsieve/envsieve/internal/trust"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
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
	// ErrEmpty is returned (in a [FetchError]) for a secret whose source
	// gives an empty value: an error, never an empty variable.
	ErrEmpty = errors.New("its value is empty")
	// ErrNested is returned (in a [FetchError]) for a secret a nested
	// launch ([Host.Nested]) does not find in the environment it was
	// given: inside an envsieve tree a secret comes from nowhere else.
	ErrNested = errors.New("not in the environment this launch was given, and inside an envsieve tree envsieve opens no store and runs no helper")
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
	if err := checkNUL(argv, env); err != nil {
		return err
	}
	err := syscall.Exec(path, argv, env)
	return execError(path, err)
}

// wrapStartError maps the error of starting path (exec.Cmd.Start, or exec
// in place) to the errors the exit switch knows: a *NotFoundError (127)
// for a missing program, ErrNotExecutable (126) for one that cannot run.
func wrapStartError(path string, err error) error {
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

func checkNUL(argv, env []string) error {
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
	// Result is the engine's result that built Env, when Command built it.
	Result *sieve.Result

	cmd     *exec.Cmd
	isolate bool // set by Isolate: start in new namespaces
	reaps   bool // set by Scope: the tree's reaper, watching the launcher
	tied    bool // set by Supervise: ends with the launcher (lifetimeAttr)
}

// Command builds the environment for argv under p from the parent environment
// and the request, and returns a Cmd ready to start. The parent environment
// is a value (pass os.Environ() to use the caller's own). Secret values for
// the request's tool and secrets come from secretValues.
func Command(p *policy.Policy, parent []string, req sieve.Request, secretValues map[string]string, argv ...string) (*Cmd, error) {
	if len(argv) == 0 {
		return nil, errors.New("launch: no command")
	}
	if req.Commands == nil {
		req.Commands = [][]string{argv}
	}
	if req.Path == "" {
		if path, err := LookPath(argv[0], parent); err == nil {
			req.Path = path
		}
	}
	res, err := sieve.Build(sieve.Input{Parent: parent, Policy: p, Request: req, SecretValues: secretValues})
	if err != nil {
		return nil, err
	}
	path, err := resolveProgram(argv[0], res, req.Path)
	if err != nil {
		return nil, err
	}
	return &Cmd{Path: path, Args: argv, Env: res.Env, Result: res}, nil
}

// resolveProgram looks the program up in the built environment's PATH and checks that
// a rule chosen by path still matches the program that will run: the child's
// PATH may find another binary than the one the rule was chosen for.
func resolveProgram(prog string, res *sieve.Result, rulePath string) (string, error) {
	path, err := LookPath(prog, res.Env)
	if err != nil {
		return "", err
	}
	if r := res.Rule; r != nil && r.ByPath {
		name := path
		if n, _, err := trust.Program(path, os.Geteuid()); err == nil {
			name = n // the identity the rule was chosen by
		}
		if !r.MatchProgram(name) {
			return "", fmt.Errorf("rule %s was chosen for %s, but the child's PATH finds %s", r.Name, rulePath, path)
		}
	}
	return path, nil
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
	if err := checkNUL(c.Args, c.Env); err != nil {
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
	if err := cmd.Start(); err != nil {
		return c.startError(err)
	}
	return nil
}

func (c *Cmd) startError(err error) error {
	if c.isolate && (errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EUSERS)) {
		return fmt.Errorf("isolate: %w: %v (user namespaces may be disabled: see /proc/sys/user/max_user_namespaces)", errNamespaces, err)
	}
	return wrapStartError(c.Path, err)
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
