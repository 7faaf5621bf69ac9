package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
)

// completion builds the whole tree, so it joins verbs at init (a direct
// entry would make verbs refer to itself).
func init() {
	verbs = append(verbs, struct {
		name string
		cmd  func(*cli.UI) *cobra.Command
	}{"completion", completionCmd})
}

// completionCmd prints a shell's completion script for every command
// (`make install` writes them where bash, zsh and fish look).
func completionCmd(u *cli.UI) *cobra.Command {
	return &cobra.Command{
		Use:       "completion bash|zsh|fish",
		Short:     "Print the shell completion script for bash, zsh or fish",
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"bash", "zsh", "fish"},
		RunE: func(_ *cobra.Command, args []string) error {
			root := rootCmd(u, "") // every command, for their names and flags
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(u.Out, true)
			case "zsh":
				return root.GenZshCompletion(u.Out)
			case "fish":
				return root.GenFishCompletion(u.Out, true)
			}
			return cli.UsageError{Err: fmt.Errorf("completion: want bash, zsh or fish, got %q", args[0])}
		},
	}
}
