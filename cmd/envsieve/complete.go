package main

import (
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/policy"
)

// Completions with values: the shell scripts of `envsieve completion` ask
// `envsieve __complete ARGS...` for the words that fit where the cursor is.
// Names come from the policy the command would load (its --policy when
// given) and, for secrets, from the store; never a value. A policy or store
// that cannot be read completes nothing, silently: a completion must not
// print errors into the user's command line.

// completePolicy loads the policy c would load, quietly; nil on any error.
func completePolicy(c *cobra.Command) *policy.Policy {
	path := ""
	if f := c.Flags().Lookup("policy"); f != nil {
		path = f.Value.String()
	}
	p, err := cli.LoadPolicy(cli.NewUI(io.Discard, io.Discard, false), path)
	if err != nil {
		return nil
	}
	return p
}

// matching returns the names that start with prefix, sorted, without
// duplicates.
func matching(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

const noFiles = cobra.ShellCompDirectiveNoFileComp

func completeProfiles(c *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	p := completePolicy(c)
	if p == nil {
		return nil, noFiles
	}
	return matching(p.ProfileNames(), prefix), noFiles
}

func completeTools(c *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	p := completePolicy(c)
	if p == nil {
		return nil, noFiles
	}
	return matching(slices.Collect(maps.Keys(p.Tools)), prefix), noFiles
}

// storedNames are the names in the user's store; none inside a tree or
// when the store cannot be read.
func storedNames() []string {
	s, err := cli.UserStore()
	if err != nil {
		return nil
	}
	names, err := s.Names()
	if err != nil {
		return nil
	}
	return names
}

// completeSecrets offers the secrets the policy declares and those the
// store holds.
func completeSecrets(c *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	var names []string
	if p := completePolicy(c); p != nil {
		names = slices.Collect(maps.Keys(p.Secrets))
	}
	return matching(append(names, storedNames()...), prefix), noFiles
}

// completeStored offers the store's names, for the first argument only.
func completeStored(_ *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, noFiles
	}
	return matching(storedNames(), prefix), noFiles
}

// completeRequestFlags registers the value completions of the flags
// policyFlags.register made on c.
func completeRequestFlags(c *cobra.Command) {
	for name, fn := range map[string]cobra.CompletionFunc{
		"profile": completeProfiles, "tool": completeTools, "secret": completeSecrets,
	} {
		if c.Flags().Lookup(name) != nil {
			_ = c.RegisterFlagCompletionFunc(name, fn)
		}
	}
	if c.Flags().Lookup("mode") != nil {
		_ = c.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions([]string{"enforce", "audit"}, noFiles))
	}
}

// completeStoreSecrets offers, for `secrets set`, the secrets the policy
// reads from the store (from: store, or no source named).
func completeStoreSecrets(c *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, noFiles
	}
	p := completePolicy(c)
	if p == nil {
		return nil, noFiles
	}
	var names []string
	for n, s := range p.Secrets {
		if s.From == policy.FromStore || s.FromDefault {
			names = append(names, n)
		}
	}
	return matching(names, prefix), noFiles
}
