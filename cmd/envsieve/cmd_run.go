package main

import (
	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
)

func runCmd(u *cli.UI) *cobra.Command {
	var f policyFlags
	c := &cobra.Command{
		Use:   "run [flags] -- CMD [ARGS...]",
		Short: "Run a command with the environment the policy allows",
		Long: `run builds the environment for CMD (the base set, the profile's variables,
the first matching command rule, the tool's and the requested secrets), looks
CMD up in that environment's PATH, and replaces itself with CMD. When a
secret the policy withheld or injected could show up in CMD's output, it
stays resident instead (non-dumpable) and masks those values in CMD's stdout
and stderr as [HIDDEN:xxxxxxxx]; when stdout is a terminal, CMD runs on a pty.

The exit status is CMD's own; 125 when envsieve fails, 126 when CMD cannot be
executed, 127 when it is not found.`,
		Example: `  envsieve run --profile claude -- claude
  envsieve run --secret GITHUB_TOKEN -- gh pr list`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, argv []string) error {
			l, path, err := build(u, &f, argv)
			if err != nil {
				return err
			}
			return start(l, path, argv)
		},
	}
	c.Flags().SetInterspersed(false)
	f.register(c.Flags(), true)
	return c
}
