package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/envsieve/envsieve/internal/envknob"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/secret"
)

// userStore returns the user's encrypted secret store.
func userStore() (*secret.Store, error) {
	cfg, data := envknob.ConfigDir(), envknob.DataDir()
	if cfg == "" || data == "" {
		return nil, errors.New("secret store: set HOME (or XDG_CONFIG_HOME and XDG_DATA_HOME) to an absolute path")
	}
	return &secret.Store{Path: filepath.Join(cfg, "secrets.age"), KeyPath: filepath.Join(data, "store.key")}, nil
}

func secretsCmd(u *ui) *cobra.Command {
	c := &cobra.Command{
		Use:   "secrets",
		Short: "Manage the encrypted secret store (values from stdin or a prompt, never from argv)",
		Long: `secrets manages envsieve's encrypted store: an age-encrypted file in the
user's config directory whose key lives in the user's data directory, both
0600. A policy hands a stored secret to a child with
  secrets: {NAME: {from: store}}
and --secret NAME (or a tool's injects_env).`,
	}
	c.AddCommand(&cobra.Command{
		Use:   "set NAME",
		Short: "Store a secret; the value comes from stdin, or from a prompt that does not echo",
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usageError{errors.New("secrets set: a value is never taken from the command line, where other processes can read it; pipe it on stdin or type it at the prompt")}
			}
			if len(args) != 1 {
				return usageError{errors.New("secrets set: want one NAME")}
			}
			return nil
		},
		RunE: func(_ *cobra.Command, args []string) error {
			name := args[0]
			if !policy.ValidName(name) {
				return usageError{fmt.Errorf("secrets set: %q is not a variable name", name)}
			}
			value, err := readSecretValue(u, os.Stdin, name)
			if err != nil {
				return err
			}
			s, err := userStore()
			if err != nil {
				return err
			}
			if err := s.Set(name, value); err != nil {
				return err
			}
			fmt.Fprintf(u.err, "envsieve: stored %s (%d bytes) in %s\n", name, len(value), s.Path)
			return nil
		},
	})
	c.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the stored names (never the values)",
		Args:  cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			s, err := userStore()
			if err != nil {
				return err
			}
			names, err := s.Names()
			if err != nil {
				return err
			}
			for _, n := range names {
				fmt.Fprintln(u.out, n)
			}
			return nil
		},
	})
	c.AddCommand(&cobra.Command{
		Use:   "rm NAME",
		Short: "Remove a stored secret",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			s, err := userStore()
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
func readSecretValue(u *ui, in *os.File, name string) (string, error) {
	if term.IsTerminal(int(in.Fd())) {
		fmt.Fprintf(u.err, "value for %s (not echoed): ", name)
		b, err := term.ReadPassword(int(in.Fd()))
		fmt.Fprintln(u.err)
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
