package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/policy"
)

func secretsCmd(u *cli.UI) *cobra.Command {
	c := &cobra.Command{
		Use:   "secrets",
		Short: "Manage the encrypted secret store (values from stdin or a prompt, never from argv)",
		Long: `secrets manages envsieve's encrypted store: an age-encrypted file in the
user's config directory whose key lives in the user's data directory, both
0600. A policy hands a stored secret to a child with
  secrets: {NAME: {from: store}}
and --secret NAME (or a tool's injects_env).

Inside an envsieve tree (an agent's: ENVSIEVE_TREE is set, or an envsieve
process is among the ancestors) every secrets verb refuses, and launches
there take secrets only from their own environment.`,
		// A mistyped verb is an error with a suggestion, not this help.
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return c.Help()
			}
			return unknownVerb(c, args[0])
		},
	}
	c.AddCommand(&cobra.Command{
		Use: "set NAME",
		// The names the policy reads from the store.
		ValidArgsFunction: completeStoreSecrets,
		Short:             "Store a secret; the value comes from stdin, or from a prompt that does not echo",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return cli.UsageError{Err: errors.New("secrets set: a value is never taken from the command line, where other processes can read it; pipe it on stdin or type it at the prompt")}
			}
			if len(args) != 1 {
				return cli.UsageError{Err: errors.New("secrets set: want one NAME")}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			name := args[0]
			if !policy.ValidName(name) {
				return cli.UsageError{Err: fmt.Errorf("secrets set: %q is not a variable name", name)}
			}
			// The store first: inside a tree it refuses, before a value is read.
			s, err := cli.UserStore()
			if err != nil {
				return err
			}
			value, err := readSecretValue(u, os.Stdin, name)
			if err != nil {
				return err
			}
			if err := s.Set(name, value); err != nil {
				return err
			}
			fmt.Fprintf(u.Err, "envsieve: stored %s (%d bytes) in %s\n", name, len(value), s.Path)
			return nil
		},
	})
	c.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the stored names (never the values)",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			s, err := cli.UserStore()
			if err != nil {
				return err
			}
			names, err := s.Names()
			if err != nil {
				return err
			}
			for _, n := range names {
				fmt.Fprintln(u.Out, n)
			}
			return nil
		},
	})
	c.AddCommand(&cobra.Command{
		Use:               "rm NAME",
		ValidArgsFunction: completeStored,
		Short:             "Remove a stored secret",
		Args:              cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			s, err := cli.UserStore()
			if err != nil {
				return err
			}
			return s.Remove(args[0])
		},
	})
	return c
}

// readSecretValue reads a value from a terminal without echo, or from
// stdin when it is not a terminal (one trailing newline removed).
func readSecretValue(u *cli.UI, in *os.File, name string) (string, error) {
	if term.IsTerminal(int(in.Fd())) {
		fmt.Fprintf(u.Err, "value for %s (not echoed): ", name)
		b, err := term.ReadPassword(int(in.Fd()))
		fmt.Fprintln(u.Err)
		if err != nil {
			return "", fmt.Errorf("read the value of %s: %w", name, err)
		}
		return checkValue(name, string(b))
	}
	b, err := io.ReadAll(bufio.NewReader(io.LimitReader(in, 1<<20+1)))
	if err != nil {
		return "", fmt.Errorf("read the value of %s from stdin: %w", name, err)
	}
	if len(b) > 1<<20 {
		return "", fmt.Errorf("the value of %s is over 1 MiB", name)
	}
	v := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
	return checkValue(name, v)
}

func checkValue(name, v string) (string, error) {
	switch {
	case v == "":
		return "", fmt.Errorf("the value of %s is empty", name)
	case strings.IndexByte(v, 0) >= 0:
		return "", fmt.Errorf("the value of %s holds a NUL byte", name)
	}
	return v, nil
}

// unknownVerb is the usage error for a verb c does not have, with the
// closest one it has.
func unknownVerb(c *cobra.Command, arg string) error {
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	return cli.UsageError{Err: fmt.Errorf("unknown command %q for %q%s", arg, c.CommandPath(), policy.DidYouMean(arg, names))}
}
