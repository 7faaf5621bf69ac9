package daemoncli

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/daemon"
	"github.com/envsieve/envsieve/internal/envknob"
	"github.com/envsieve/envsieve/internal/proc"
	"github.com/envsieve/envsieve/secret"
)

func daemonCmd(u *cli.UI) *cobra.Command {
	var socket, policyPath string
	c := &cobra.Command{
		Use:   "daemon [--socket PATH] [--policy FILE]",
		Short: "Serve sessions to agents over a unix socket (JSON-RPC 2.0, one message per line)",
		Long: `daemon serves agents over a unix socket: a client registers a snapshot of its
environment (initialize), opens sessions with a profile (session/new; a
sub-agent's session may only narrow its parent's profile), and runs commands
in them (session/exec). A command's environment is built in two layers: the
daemon's own base-set variables (and the profile's shell_env_passthrough),
then the client's snapshot through the policy, which wins on conflict. Its
output is masked as 'envsieve run' masks it and streamed back as
session/output notifications. docs/protocol.md describes every method.

The socket (default $XDG_RUNTIME_DIR/envsieve.sock; without
XDG_RUNTIME_DIR, envsieve-UID/envsieve.sock in /dev/shm or /tmp; --socket
shows the one used here) is created 0600 in a directory only this user can
enter; a process of another user is refused
(SO_PEERCRED). A stale socket left by a dead daemon is replaced; a live one
is not. The daemon is non-dumpable: commands cannot read the environments it
holds from /proc. SIGTERM, SIGINT or the shutdown method end it: running
commands are killed and the socket is removed.

The policy is loaded once, as for every verb (--policy, ENVSIEVE_POLICY, the
user's policy file, the embedded default; .envsieve.yaml in the directory the
daemon starts in narrows it).

Started inside an envsieve tree, the daemon only narrows, as a nested
envsieve does: no store, no install key, no user policy file, no helper;
its commands take secrets only from their session's snapshot.`,
		Example: `  envsieve daemon &
  envsieve client run --profile claude -- env`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			p, err := cli.LoadPolicy(u, policyPath)
			if err != nil {
				return err
			}
			key, err := cli.InstallKeyFor(u)
			if err != nil {
				u.Warnf("redaction tokens use a key for this daemon only: %v", err)
				key = nil
			}
			var store secret.Source
			if st, err := cli.UserStore(); err == nil {
				store = st
			}
			if socket == "" {
				socket = daemon.DefaultSocket(envknob.RuntimeDir())
			}
			level := slog.LevelInfo
			if u.Debug {
				level = slog.LevelDebug
			}
			srv, err := daemon.New(daemon.Config{
				Policy:       p,
				Env:          os.Environ(),
				RedactKey:    key,
				Store:        store,
				RuntimeDir:   envknob.RuntimeDir(),
				Shim:         envknob.Shim(),
				AuditPath:    envknob.Audit(),
				Home:         envknob.Home(),
				ConfigDir:    envknob.ConfigDir(),
				DataDir:      envknob.DataDir(),
				HelperStderr: u.Err,
				Log:          slog.New(slog.NewTextHandler(u.Err, &slog.HandlerOptions{Level: level})),
				Nested:       cli.Nested(),
			})
			if err != nil {
				return err
			}
			if err := proc.MakeNonDumpable(); errors.Is(err, errors.ErrUnsupported) {
				u.Warnf("%v", err)
			} else if err != nil {
				return err
			}
			if err := srv.Listen(socket); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
			defer stop()
			go func() {
				<-ctx.Done()
				srv.Shutdown()
			}()
			return srv.Serve()
		},
	}
	c.Flags().StringVar(&socket, "socket", "", "socket `path` (default here: "+daemon.DefaultSocket(envknob.RuntimeDir())+")")
	c.Flags().StringVar(&policyPath, "policy", "", "policy `file` (default: $ENVSIEVE_POLICY, then $XDG_CONFIG_HOME/envsieve/policy.yaml, then the embedded default)")
	return c
}
