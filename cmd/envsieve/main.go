// Command envsieve starts programs from an empty environment and admits only
// what a policy allows. See README.md and docs/ for the manual.
package main

import (
	"os"
	"path/filepath"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/envknob"
	"github.com/envsieve/envsieve/launch"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

func main() { os.Exit(Main()) }

// Main runs envsieve with os.Args and returns its exit status: the child's own
// status when it ran, 125 for envsieve's own errors, 126 for a program that
// cannot be executed, 127 for one that is not found, 1 for `check` on an
// invalid policy.
func Main() int {
	args := os.Args[1:]
	// The init of an isolated child's namespaces: nothing else runs.
	if len(args) > 0 && args[0] == launch.IsolateInitArg {
		return launch.IsolateInit(args[1:])
	}
	if len(args) > 0 && args[0] == launch.ScopeInitArg {
		return launch.ScopeInit(args[1:])
	}
	if len(args) > 0 && args[0] == probeArg {
		return probeMain()
	}
	if len(args) > 0 && args[0] == probeEnvArg {
		return probeEnvMain()
	}
	// Installed as a link named envsieve-sh, envsieve is a drop-in SHELL.
	if filepath.Base(os.Args[0]) == "envsieve-sh" {
		args = append([]string{"sh"}, args...)
	}
	ui := cli.NewUI(os.Stdout, os.Stderr, envknob.Debug())
	ui.Debugf("envsieve %s (%s %s/%s)", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	root := rootCmd(ui, verb(args))
	root.SetArgs(args)
	return cli.ExitCode(ui, root.Execute())
}

// verbs builds each command. Main builds only the one it runs: building all
// of them would cost every start 50-60 µs and 64 KB.
var verbs = []struct {
	name string
	cmd  func(*cli.UI) *cobra.Command
}{
	{"run", runCmd}, {"sh", shCmd}, {"explain", newExplainCmd}, {"check", checkCmd},
	{"profiles", profilesCmd}, {"manifest", manifestCmd}, {"secrets", secretsCmd},
	{"redact", redactCmd}, {"scan", scanCmd}, {"verify", newVerifyCmd},
	{"lint-env", lintEnvCmd}, {"daemon", daemonCmd}, {"client", clientCmd},
}

// verb returns the command args name when it is one of verbs, or "" when
// every command is needed (help, a flag of the root, a mistake to report).
func verb(args []string) string {
	if len(args) > 0 {
		for _, v := range verbs {
			if v.name == args[0] {
				return v.name
			}
		}
	}
	return ""
}

// rootCmd returns the command tree, holding only the command called only,
// or every command when only is "".
func rootCmd(ui *cli.UI, only string) *cobra.Command {
	root := cli.Root(ui, "envsieve", version,
		"Start programs from an empty environment, admitting only what a policy allows",
		`envsieve starts a program from an empty environment and admits only what a
policy allows: a safe base set, the variables a profile names, and secrets by
exact name. No credential passes through a wildcard.

Start with 'envsieve explain -- CMD' to see what a command would get and why.`)
	for _, v := range verbs {
		if only == "" || only == v.name {
			root.AddCommand(v.cmd(ui))
		}
	}
	return root
}
