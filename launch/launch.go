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
// The lower layer is the process layer, package internal/proc: a program
// looked up in the child's PATH, exec'd in place, started as a child,
// supervised by a resident launcher, isolated in namespaces of its own or
// scoped in a Landlock domain, and its tree ended with the launch. A
// program that starts sealed launches is re-executed as their init: its
// main hands such a process to [IsolateInit] or [ScopeInit] first.
//
// # Security
//
// os/exec has one trap for a tool like this: a nil exec.Cmd.Env means "inherit
// the parent's environment". [Cmd] reverses it: a nil Env is an error
// ([ErrNilEnv]) and never a fallback, so a caller that forgets to build an
// environment starts nothing rather than leaking everything.
//
// A program is looked up in the child's PATH, not the launcher's, and
// relative entries such as "." or "" are ignored: a program found in the
// working directory by accident is a classic way to run the wrong binary.
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
	"errors"
	"fmt"
	"os"

	"github.com/envsieve/envsieve/internal/proc"
	"github.com/envsieve/envsieve/internal/trust"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
)

// Errors callers branch on. Use errors.Is.
var (
	// ErrNilEnv is returned when a Cmd has no environment: launch never
	// falls back to inheriting the parent's.
	ErrNilEnv = proc.ErrNilEnv
	// ErrNotExecutable is returned for a program that exists but cannot be
	// executed (exit status 126).
	ErrNotExecutable = proc.ErrNotExecutable
	// ErrEmpty is returned (in a [FetchError]) for a secret whose source
	// gives an empty value: an error, never an empty variable.
	ErrEmpty = errors.New("its value is empty")
	// ErrNested is returned (in a [FetchError]) for a secret a nested
	// launch ([Host.Nested]) does not find in the environment it was
	// given: inside an envsieve tree a secret comes from nowhere else.
	ErrNested = errors.New("not in the environment this launch was given, and inside an envsieve tree envsieve opens no store and runs no helper")
)

// NotFoundError reports a program that is not in the child's PATH (exit
// status 127). Use errors.As.
type NotFoundError = proc.NotFoundError

// IsolateInitArg is the argument with which the launcher re-executes itself
// as the init of an isolated child's namespaces. main hands such a process to
// [IsolateInit] before anything else runs.
const IsolateInitArg = proc.IsolateInitArg

// IsolateInit is the init of an isolated child: args are the program's path
// and argv. It returns the exit status for main to exit with.
func IsolateInit(args []string) int { return proc.IsolateInit(args) }

// ScopeInitArg is the argument with which the launcher re-executes itself
// to put the program in a Landlock domain of its own before it starts. main
// hands such a process to [ScopeInit] before anything else runs.
const ScopeInitArg = proc.ScopeInitArg

// ScopeInit is the process a scoped or Landlock-sealed launch starts: args
// are the program's path and argv. It returns the status for main to exit
// with: the program's, or 125-127 when it could not start.
func ScopeInit(args []string) int { return proc.ScopeInit(args) }

// Cmd is the library's one-shot command ([Command]): exec.Cmd with a
// policy, a program to run with an environment that was built, never
// inherited. Its fields and its Start, Wait, Run and ProcessState work
// as exec.Cmd's, but a nil Env is an error ([ErrNilEnv]).
type Cmd struct {
	proc.Cmd
	// Result is the engine's result that built Env.
	Result *sieve.Result
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
		if path, err := proc.LookPath(argv[0], parent); err == nil {
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
	return &Cmd{Cmd: proc.Cmd{Path: path, Args: argv, Env: res.Env}, Result: res}, nil
}

// resolveProgram looks the program up in the built environment's PATH and checks that
// a rule chosen by path still matches the program that will run: the child's
// PATH may find another binary than the one the rule was chosen for.
func resolveProgram(prog string, res *sieve.Result, rulePath string) (string, error) {
	path, err := proc.LookPath(prog, res.Env)
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
