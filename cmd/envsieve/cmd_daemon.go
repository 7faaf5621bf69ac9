package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/shim"
)

// daemonProgram holds the daemon and its client (cmd/internal/daemoncli says
// why it is a program of its own).
const daemonProgram = "envsieve-daemon"

func daemonCmd(*cli.UI) *cobra.Command {
	return handOver("daemon", "Serve sessions to agents over a unix socket (JSON-RPC 2.0, one message per line)")
}

func clientCmd(*cli.UI) *cobra.Command {
	return handOver("client", "Talk to a running daemon: register, open sessions, run commands")
}

// handOver returns the command that replaces envsieve with envsieve-daemon,
// passing it the verb and every argument untouched ('envsieve daemon
// --help' is the daemon's own help).
func handOver(verb, short string) *cobra.Command {
	return &cobra.Command{
		Use:                verb + " [flags]",
		Short:              short,
		Long:               short + ".\n\nenvsieve hands over to " + daemonProgram + ", found next to its own binary or in ../lib/envsieve/; '" + "envsieve " + verb + " --help' lists its flags.",
		DisableFlagParsing: true,
		// Completion is envsieve-daemon's: its commands know their flags.
		ValidArgsFunction: func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
			return forwardComplete(verb, args, toComplete)
		},
		RunE: func(_ *cobra.Command, args []string) error {
			path, err := findDaemonProgram()
			if err != nil {
				return err
			}
			argv := append([]string{path, verb}, args...)
			if err := syscall.Exec(path, argv, os.Environ()); err != nil {
				return fmt.Errorf("start %s: %w", path, err)
			}
			return nil
		},
	}
}

// findDaemonProgram looks for envsieve-daemon next to envsieve's binary,
// then in ../lib/envsieve/ (a packaged install); never in PATH, which the
// caller controls.
func findDaemonProgram() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find %s: %w", daemonProgram, err)
	}
	cands := shim.Companions(exe, daemonProgram)
	for _, c := range cands {
		if fi, err := os.Stat(c); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return c, nil
		} else if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("find %s: %w", daemonProgram, err)
		}
	}
	return "", fmt.Errorf("%s is not installed: looked in %s and %s ('make build' builds it into bin/; 'go install github.com/envsieve/envsieve/cmd/...@latest' installs it beside envsieve)", daemonProgram, cands[0], cands[1])
}

// forwardComplete asks envsieve-daemon for the completions of `envsieve
// VERB ARGS... TOCOMPLETE` (cobra's __complete protocol: one completion a
// line, then :DIRECTIVE); nothing when it is not installed or says
// something else.
func forwardComplete(verb string, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	path, err := findDaemonProgram()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	argv := append(append([]string{cobra.ShellCompRequestCmd, verb}, args...), toComplete)
	cmd := exec.Command(path, argv...)
	cmd.Env = os.Environ()
	out, err := cmd.Output()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	last := lines[len(lines)-1]
	d, err := strconv.Atoi(strings.TrimPrefix(last, ":"))
	if !strings.HasPrefix(last, ":") || err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return lines[:len(lines)-1], cobra.ShellCompDirective(d)
}
