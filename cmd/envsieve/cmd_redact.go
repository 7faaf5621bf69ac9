package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
)

func redactCmd(u *cli.UI) *cobra.Command {
	var f policyFlags
	c := &cobra.Command{
		Use:   "redact [--secret NAME ...] [--policy FILE] [--profile NAME]",
		Short: "Mask secrets in stdin, as run masks a child's output",
		Long: `redact copies stdin to stdout, masking the values run would mask: every
sensitive value of the current environment that the policy drops, and the
secrets named with --secret and --tool, in their encoded forms too, and (with
the policy's redact.entropy, on by default) credential-looking strings nobody
named, as [MASKED:xxxxxxxx]. Useful to clean a log before an agent reads it.`,
		Example: `  some-build 2>&1 | envsieve redact --secret NPM_TOKEN`,
		Args:    cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			p, err := cli.LoadPolicy(u, f.policy)
			if err != nil {
				return err
			}
			// Masking is what this verb is for, whatever redact.enabled
			// says; the policy itself is never changed.
			f.forceMask = true
			l, err := buildWith(u, p, &f, nil, nil, 0)
			if err != nil {
				return err
			}
			l.Cleanup()
			w, _, flush, err := l.Filter(u.Out, io.Discard)
			if err != nil {
				return err
			}
			if _, err := io.Copy(w, os.Stdin); err != nil {
				return fmt.Errorf("redact: %w", err)
			}
			return flush()
		},
	}
	f.register(c.Flags(), flagRequest)
	completeRequestFlags(c)
	return c
}
