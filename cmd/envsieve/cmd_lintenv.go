package main

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/envknob"
	"github.com/envsieve/envsieve/internal/proc"
	"github.com/envsieve/envsieve/internal/shimwire"
	"github.com/envsieve/envsieve/shim"
)

// universal are the unprefixed variables any tool may read (docs/design.md
// section 8).
var universal = map[string]bool{"NO_COLOR": true, "CI": true, "HOME": true, "USER": true, "PATH": true,
	"SHELL": true, "TERM": true, "XDG_CONFIG_HOME": true, "XDG_DATA_HOME": true, "XDG_CACHE_HOME": true,
	"HTTP_PROXY": true, "HTTPS_PROXY": true, "NO_PROXY": true}

// isVarName reports whether s is a variable name: a letter or _, then
// letters, digits and _.
func isVarName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || c == '_' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return s != ""
}

func lintEnvCmd(u *cli.UI) *cobra.Command {
	var prefix string
	c := &cobra.Command{
		Use:   "lint-env --prefix PREFIX -- CMD [ARGS...]",
		Short: "List the unprefixed environment variables a command reads",
		Long: `lint-env runs CMD under the shim, with the current environment unchanged,
and lists every variable CMD (or a program it starts) reads through getenv or
secure_getenv that is neither PREFIX or PREFIX_* nor one of the universal
exceptions: NO_COLOR CI HOME USER PATH SHELL TERM XDG_CONFIG_HOME XDG_DATA_HOME
XDG_CACHE_HOME HTTP_PROXY HTTPS_PROXY NO_PROXY.

The exit status is 1 when it found any, 0 when it found none. It cannot see
into programs that do not read through libc's getenv (Go programs, static
binaries, and interpreters that copy the environment at start: python, perl,
bash, sh); for those it says so and exits 125 instead of reporting a clean
result.`,
		Example: `  envsieve lint-env --prefix MY_TOOL -- ./my-tool --version`,
		Args:    cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, argv []string) error {
			if !isVarName(prefix) {
				return cli.UsageError{Err: fmt.Errorf("--prefix: want a variable name prefix such as MY_TOOL, got %q", prefix)}
			}
			return lintEnv(u, strings.TrimSuffix(prefix, "_"), argv)
		},
	}
	c.Flags().SetInterspersed(false)
	c.Flags().StringVar(&prefix, "prefix", "", "the tool's own variable `PREFIX` (required)")
	_ = c.MarkFlagRequired("prefix")
	return c
}

// readSet is a shimwire.Handler that keeps the names read.
type readSet struct {
	mu    sync.Mutex
	names map[string]bool
}

func (r *readSet) Access(a *shimwire.Access) {
	if shimwire.Reads(a.Op) {
		r.mu.Lock()
		r.names[a.Name] = true
		r.mu.Unlock()
	}
}
func (r *readSet) Start(*shimwire.StartRequest) (shimwire.Process, string) {
	return nil, "lint-env grants nothing"
}
func (r *readSet) Notice(*shimwire.Notice) {}
func (r *readSet) Refused(string)          {}

func lintEnv(u *cli.UI, prefix string, argv []string) error {
	parent := os.Environ()
	path, err := proc.LookPath(argv[0], parent)
	if err != nil {
		return err
	}
	if why := unseen(path); why != "" {
		return fmt.Errorf("lint-env: %s %s, so its reads cannot be seen; no result", path, why)
	}
	exe, _ := os.Executable()
	lib, err := shim.Locate(envknob.Shim(), exe)
	if err != nil {
		return fmt.Errorf("lint-env: %w", err)
	}
	reads := &readSet{names: map[string]bool{}}
	srv, err := shimwire.Listen(envknob.RuntimeDir(), reads)
	if err != nil {
		return err
	}
	env := make([]string, 0, len(parent)+2)
	for _, kv := range parent {
		if !strings.HasPrefix(kv, shimwire.EnvPreload+"=") && !strings.HasPrefix(kv, "ENVSIEVE_SHIM_") {
			env = append(env, kv)
		}
	}
	env = append(env, shimwire.EnvPreload+"="+shim.Preload(lib, parent), shimwire.EnvSock+"="+srv.Path)
	c := &proc.Cmd{Path: path, Args: argv, Env: env}
	status, runErr := proc.Supervise(c, proc.Resident{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	srv.Close()
	if runErr != nil {
		return runErr
	}
	var found []string
	for name := range reads.names {
		if name == prefix || strings.HasPrefix(name, prefix+"_") || universal[name] {
			continue
		}
		found = append(found, name)
	}
	sort.Strings(found)
	if status != 0 {
		u.Warnf("lint-env: %s exited with status %d; the list covers what it read until then", argv[0], status)
	}
	if len(found) == 0 {
		fmt.Fprintf(u.Err, "envsieve: lint-env: %s read no variable outside %s_* and the universal exceptions\n", argv[0], prefix)
		return nil
	}
	for _, name := range found {
		fmt.Fprintln(u.Out, name)
	}
	fmt.Fprintf(u.Err, "envsieve: lint-env: %s read %d variable(s) outside %s_* and the universal exceptions\n", argv[0], len(found), prefix)
	return cli.ExitStatus(1)
}

// copiesEnv reports whether the interpreter called name copies the
// environment at start and never reads it through getenv: python and perl,
// with or without a version (python3.12), and the shells.
func copiesEnv(name string) bool {
	switch name {
	case "bash", "sh", "dash", "zsh", "ksh":
		return true
	}
	for _, lang := range []string{"python", "perl"} {
		if version, ok := strings.CutPrefix(name, lang); ok {
			return strings.Trim(version, "0123456789.") == ""
		}
	}
	return false
}

// unseen says why the shim cannot see the reads of the program at path, or
// "" when it can.
func unseen(path string) string {
	static, err := shim.Static(path)
	if err != nil {
		return "cannot be inspected (" + err.Error() + ")"
	}
	if static {
		return "is statically linked (the shim cannot load)"
	}
	goProgram, err := shim.GoProgram(path)
	if err != nil {
		return "cannot be inspected (" + err.Error() + ")"
	}
	if goProgram {
		return "is a Go program (it reads its own copy of the environment)"
	}
	if interp := scriptInterpreter(path); interp != "" && copiesEnv(filepath.Base(interp)) {
		return "runs under " + filepath.Base(interp) + ", which reads its own copy of the environment"
	}
	return ""
}

// scriptInterpreter returns the interpreter of a #! script ("python3" for
// "#!/usr/bin/env python3"), or "".
func scriptInterpreter(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && !errors.Is(err, bufio.ErrBufferFull) && line == "" {
		return ""
	}
	rest, ok := strings.CutPrefix(line, "#!")
	if !ok {
		return ""
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return ""
	}
	if filepath.Base(fields[0]) == "env" {
		for _, f := range fields[1:] {
			if !strings.HasPrefix(f, "-") {
				return f
			}
		}
		return ""
	}
	return fields[0]
}
