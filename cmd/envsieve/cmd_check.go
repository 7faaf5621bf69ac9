package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/policy"
)

func checkCmd(u *cli.UI) *cobra.Command {
	var f policyFlags
	c := &cobra.Command{
		Use:   "check [--policy FILE]",
		Short: "Validate a policy (and ./.envsieve.yaml); exit 0 when valid, 1 when not",
		Long: `check loads the policy the other commands would load (or FILE), and the
project-local .envsieve.yaml when present, and prints every error with its
file, line, column and a source excerpt, and counts what it validated: the
user's profiles, the built-in profiles, rules and tools. Exit status 0 when the policy is
valid, 1 when it is not.`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			p, err := cli.LoadPolicy(u, f.policy)
			var pe policy.ErrorList
			if errors.As(err, &pe) {
				u.PrintError(err)
				return cli.ExitStatus(1)
			}
			if err != nil {
				return err
			}
			// The built-in profiles are compiled when first asked for:
			// merge each one's effective policy, so that check validates
			// what a launch could use.
			user, builtin := 0, 0
			for _, pr := range p.Profiles() {
				if _, err := p.Effective(pr.Name); err != nil {
					return err
				}
				if strings.HasPrefix(pr.Name, "builtin:") {
					builtin++
				} else {
					user++
				}
			}
			fmt.Fprintf(u.Out, "%s: ok (%d profiles, %d built-in profiles, %d rules, %d tools)\n", p.File, user, builtin, len(p.Rules), len(p.Tools))
			if p.Local != "" {
				fmt.Fprintf(u.Out, "%s: ok (narrows %s)\n", p.Local, p.File)
			}
			for _, h := range p.BrokerHints() {
				fmt.Fprintf(u.Out, "hint: %s\n", h)
			}
			return nil
		},
	}
	f.register(c.Flags(), 0)
	return c
}
