package main

import (
	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/proc"
)

func runCmd(u *cli.UI) *cobra.Command {
	var f policyFlags
	c := &cobra.Command{
		Use:   "run [flags] -- CMD [ARGS...]",
		Short: "Run a command with the environment the policy allows",
		Long: `run builds the environment for CMD (the base set, the profile's variables,
the first matching command rule, the tool's and the requested secrets), looks
CMD up in that environment's PATH, and replaces itself with CMD. When a
secret the policy dropped or injected could show up in CMD's output, it
stays resident instead (non-dumpable) and masks those values in CMD's stdout
and stderr as [MASKED:xxxxxxxx]; when stdout is a terminal, CMD runs on a pty.

--env-file FILE reads a dotenv file (KEY=VALUE lines, "export KEY=VALUE",
# comments, 'single' and "double" quotes, as docker run and op run read one):
each name in it is requested as --secret NAME is, with the file's value as
its source; the policy's deny entries, masking and audit apply to it as to
any secret. A line that does not parse is an error at FILE:LINE:COLUMN, and
nothing starts.

The exit status is CMD's own; 125 when envsieve fails, 126 when CMD cannot be
executed, 127 when it is not found.`,
		Example: `  envsieve run --profile claude -- claude
  envsieve run --secret GITHUB_TOKEN -- gh pr list
  envsieve run --env-file .env -- npm start`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, argv []string) error {
			if !f.noShim {
				// A launch with the shim stays resident to serve it:
				// its signals are registered while the rest is set up.
				proc.EarlySignals()
			}
			l, err := build(u, &f, argv)
			if err != nil {
				return err
			}
			return start(l)
		},
	}
	c.Flags().SetInterspersed(false)
	f.register(c.Flags(), flagsLaunch)
	completeRequestFlags(c)
	c.Flags().StringArrayVar(&f.envFiles, "env-file", nil, "give each secret a dotenv `FILE` names (KEY=VALUE lines), with the file's value as its source (repeatable)")
	return c
}
