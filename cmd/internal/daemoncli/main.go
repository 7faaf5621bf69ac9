// Package daemoncli is the command line of envsieve-daemon, the program
// behind `envsieve daemon` and `envsieve client`. It lives apart from
// envsieve because the JSON-RPC library it links (jrpc2) pulls in net/http
// and crypto/tls, whose package initialisers would otherwise cost every
// start of envsieve, the launcher of each agent command, about half a
// millisecond.
package daemoncli

import (
	"os"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/envknob"
	"github.com/envsieve/envsieve/launch"
)

// Main runs envsieve-daemon with os.Args and returns its exit status:
// "daemon ARGS" serves, "client ARGS" talks to a daemon. envsieve hands
// over to it with the verb and arguments it was given.
func Main(version string) int {
	// A session command's Landlock domain (proc.Scope): nothing else runs.
	if len(os.Args) > 1 && os.Args[1] == launch.ScopeInitArg {
		return launch.ScopeInit(os.Args[2:])
	}
	u := cli.NewUI(os.Stdout, os.Stderr, envknob.Debug())
	u.Debugf("envsieve-daemon %s (%s %s/%s)", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	root := cli.Root(u, "envsieve-daemon", version,
		"The daemon and client behind 'envsieve daemon' and 'envsieve client'", "")
	root.AddCommand(daemonCmd(u), clientCmd(u), brokerCmd(u), standInCmd())
	root.SetArgs(os.Args[1:])
	return cli.ExitCode(u, root.Execute())
}

// DocCommands returns the daemon and client commands for envsieve's man
// pages (make man), whose flags are these, not those of envsieve's
// hand-over stubs. Their --socket says the default in words: the path
// DefaultSocket gives depends on the machine the pages are made on.
func DocCommands(u *cli.UI) []*cobra.Command {
	const socket = "socket `path` (default: $XDG_RUNTIME_DIR/envsieve.sock; without XDG_RUNTIME_DIR, envsieve-UID/envsieve.sock in /dev/shm or /tmp)"
	d, c := daemonCmd(u), clientCmd(u)
	d.Flags().Lookup("socket").Usage = socket
	c.PersistentFlags().Lookup("socket").Usage = "daemon " + socket
	return []*cobra.Command{d, c}
}
