package daemoncli

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/daemon"
	"github.com/envsieve/envsieve/launch"
)

// brokerCmd is the hidden verb behind launch.BrokerProcess: one launch's
// credential broker, the other end of its pipe (launch.ServeBroker). It
// reads the request (real values included) from stdin, answers the
// child's variables on stdout, then writes one line per event, until
// stdin closes.
func brokerCmd(u *cli.UI) *cobra.Command {
	return &cobra.Command{
		Use:    launch.BrokerArg,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return launch.ServeBroker(os.Stdin, os.Stdout, daemon.StartBroker)
		},
	}
}
