//go:build envsieve_docs

package main

import (
	"os"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/cmd/internal/daemoncli"
)

// With the envsieve_docs build tag (make man), `envsieve __man DIR` writes
// a man page per command into DIR. The binary users run is built without
// it: cobra/doc links a Markdown renderer that every start would pay for.
func init() {
	verbs = append(verbs, struct {
		name string
		cmd  func(*cli.UI) *cobra.Command
	}{"__man", manCmd})
}

func manCmd(u *cli.UI) *cobra.Command {
	return &cobra.Command{
		Use:    "__man DIR",
		Hidden: true,
		Args:   cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if err := os.MkdirAll(args[0], 0o755); err != nil {
				return err
			}
			root := rootCmd(u, "")
			root.DisableAutoGenTag = true
			// daemon and client hand over to envsieve-daemon: their pages
			// are its commands', with their flags.
			for _, c := range root.Commands() {
				if c.Name() == "daemon" || c.Name() == "client" {
					root.RemoveCommand(c)
				}
			}
			root.AddCommand(daemoncli.DocCommands(u)...)
			// No Title: each page is titled by its command (ENVSIEVE-RUN).
			return doc.GenManTree(root, &doc.GenManHeader{Section: "1", Source: "envsieve " + version, Manual: "envsieve manual"}, args[0])
		},
	}
}
