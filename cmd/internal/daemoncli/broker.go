package daemoncli

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"sync"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/daemon"
	"github.com/envsieve/envsieve/launch"
)

// brokerCmd is the hidden verb behind launch.BrokerProcess: one launch's
// credential broker. It reads the request (real values included) from
// stdin, answers the child's variables on stdout, then writes one line per
// event, until stdin closes.
func brokerCmd(u *cli.UI) *cobra.Command {
	return &cobra.Command{
		Use:    launch.BrokerArg,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runBroker(os.Stdin, os.Stdout)
		},
	}
}

func runBroker(in io.Reader, out io.Writer) error {
	// The real values live in this process: no process of the user, the
	// agent's tree among them, may read its memory.
	if err := launch.MakeNonDumpable(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	r := bufio.NewReader(in)
	var req launch.BrokerRequest
	dec := json.NewDecoder(r)
	var mu sync.Mutex
	enc := json.NewEncoder(out)
	send := func(v any) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(v)
	}
	if err := dec.Decode(&req); err != nil {
		send(map[string]string{"error": "broker: read the request: " + err.Error()})
		return nil
	}
	b, err := daemon.StartBroker(req, func(e launch.BrokerEvent) { send(e) })
	if err != nil {
		send(map[string]string{"error": err.Error()})
		return nil
	}
	defer b.Close()
	send(map[string]any{"env": b.ChildEnv()})
	// Until the launcher closes its end (or dies).
	_, _ = io.Copy(io.Discard, io.MultiReader(dec.Buffered(), r))
	return nil
}
