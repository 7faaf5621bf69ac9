package daemoncli

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/daemon"
	"github.com/envsieve/envsieve/internal/envknob"
	"github.com/envsieve/envsieve/internal/proc"
)

// clientFlags are the flags every client subcommand shares.
type clientFlags struct {
	socket string
	wait   time.Duration
}

// dial connects to the daemon, retrying until --wait has passed while the
// socket is missing or nobody answers yet.
func (f *clientFlags) dial(ctx context.Context) (*daemon.Client, error) {
	// The client holds a session id or a client secret in its environment:
	// no process of the user (a session's own command among them) may read
	// it there. Elsewhere than Linux this cannot be done, and is said once.
	if err := proc.MakeNonDumpable(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return nil, err
	}
	path := f.socket
	if path == "" {
		path = daemon.DefaultSocket(envknob.RuntimeDir())
	}
	deadline := time.Now().Add(f.wait)
	for {
		c, err := daemon.Dial(ctx, path)
		if err == nil {
			return c, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%w (is 'envsieve daemon' running? --socket names its socket)", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// execFlags are the flags of a command run in a session.
type execFlags struct {
	tool    string
	secrets []string
	cwd     string
	timeout time.Duration
	stdin   bool
	shell   string
}

func (e *execFlags) register(c *cobra.Command) {
	c.Flags().StringVar(&e.tool, "tool", "", "give the secrets the policy's tools.`NAME`.injects_env names")
	c.Flags().StringArrayVar(&e.secrets, "secret", nil, "give the secret `NAME` (repeatable)")
	c.Flags().StringVar(&e.cwd, "cwd", "", "working `directory` of the command (default: the snapshot's PWD)")
	c.Flags().DurationVar(&e.timeout, "timeout", 0, "kill the command's process group after `DURATION` (0: none)")
	c.Flags().BoolVar(&e.stdin, "stdin", false, "send this command's standard input (read to the end first) to the command")
	c.Flags().StringVarP(&e.shell, "command", "c", "", "run the shell `STRING` with the policy's shell instead of ARGV")
}

// exec runs the command and returns its exit status as an exitStatus.
func (e *execFlags) exec(ctx context.Context, u *cli.UI, c *daemon.Client, sid string, argv []string) error {
	if (len(argv) == 0) == (e.shell == "") {
		return cli.UsageError{Err: errors.New("give either -c STRING or -- ARGV")}
	}
	cwd := e.cwd
	if cwd == "" {
		if wd, err := os.Getwd(); err == nil {
			cwd = wd
		}
	}
	p := daemon.ExecParams{SessionID: sid, Argv: argv, Shell: e.shell, Tool: e.tool, Secrets: e.secrets,
		Cwd: cwd, Timeout: e.timeout.Seconds()}
	if e.stdin {
		in, err := io.ReadAll(os.Stdin)
		if err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		p.StdinB64 = base64.StdEncoding.EncodeToString(in)
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := c.Exec(ctx, p, u.Out, u.Err)
	if err != nil {
		return daemonError(u, err)
	}
	if res.TimedOut {
		u.Warnf("the command timed out after %s: its process group was killed", e.timeout)
	}
	if res.ExitCode != 0 {
		return cli.ExitStatus(res.ExitCode)
	}
	return nil
}

// daemonError says where an error came from. A program not found or not
// executable keeps its type through the wrap (daemon.Error maps its codes
// to the launch package's errors), so cli.ExitCode gives 127 or 126, as
// for run.
func daemonError(_ *cli.UI, err error) error {
	var de *daemon.Error
	if err == nil || errors.As(err, &de) {
		return err // its message says its code
	}
	return fmt.Errorf("daemon: %w", err)
}

// sessionID returns ENVSIEVE_SESSION, or an error saying how to give it.
func sessionID() (string, error) {
	if sid := envknob.Session(); sid != "" {
		return sid, nil
	}
	return "", cli.UsageError{Err: errors.New("client: no session: set ENVSIEVE_SESSION to the id 'envsieve client new' printed")}
}

// errSessionFlag: --session is gone.
var errSessionFlag = errors.New("client: --session is gone: a session id is a capability, and argv is readable by every process (and so by the session's own commands); give it in ENVSIEVE_SESSION")

// noSessionFlag keeps --session as a flag that explains it is gone, so
// that a script written for it fails with the way out instead of "unknown
// flag".
func noSessionFlag(c *cobra.Command) {
	var s string
	c.Flags().StringVar(&s, "session", "", "gone: use ENVSIEVE_SESSION")
	_ = c.Flags().MarkHidden("session")
	c.PreRunE = func(cmd *cobra.Command, _ []string) error {
		if cmd.Flags().Changed("session") {
			return cli.UsageError{Err: errSessionFlag}
		}
		return nil
	}
}

func clientCmd(u *cli.UI) *cobra.Command {
	var f clientFlags
	root := &cobra.Command{
		Use:   "client",
		Short: "Drive a running envsieve daemon from a shell",
		Long: `client speaks to 'envsieve daemon' over its socket, one connection per
invocation. Client ids and session ids outlive connections, so a shell can
register its environment once, open sessions, and run commands in them. A
session id and a client secret are capabilities: they travel in the
environment (ENVSIEVE_SESSION, ENVSIEVE_CLIENT_SECRET), never in argv, which
every process can read:

  set -- $(envsieve client init)      # prints the client id and its secret
  export ENVSIEVE_CLIENT_SECRET=$2
  export ENVSIEVE_SESSION=$(envsieve client new --client "$1" --profile claude)
  envsieve client exec -- env
  envsieve client close

'envsieve client run' does all four on one connection. The exit status of
exec and run is the command's own; 125 for an error of envsieve or the
daemon, 126 and 127 for a program that cannot be run or is not found.`,
	}
	root.PersistentFlags().StringVar(&f.socket, "socket", "", "daemon socket `path` (default here: "+daemon.DefaultSocket(envknob.RuntimeDir())+")")
	root.PersistentFlags().DurationVar(&f.wait, "wait", 0, "wait up to `DURATION` for the daemon's socket to answer")

	root.AddCommand(newClientInitCmd(u, &f), newClientNewCmd(u, &f), newClientExecCmd(u, &f), newClientEnvCmd(u, &f),
		newClientCloseCmd(u, &f), newClientRunCmd(u, &f), newClientShutdownCmd(u, &f))
	return root
}

// clientInitOptions are the flags of client init.
type clientInitOptions struct{ id string }

func newClientInitCmd(u *cli.UI, f *clientFlags) *cobra.Command {
	var o clientInitOptions
	c := &cobra.Command{
		Use:   "init [--id ID]",
		Short: "Register this shell's environment; print the client id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClientInit(cmd.Context(), u, f, &o)
		},
	}
	c.Flags().StringVar(&o.id, "id", "", "register under this client `id` (again, with its secret in ENVSIEVE_CLIENT_SECRET: replace its snapshot)")
	return c
}

// runClientInit registers the shell's environment and prints the client
// id, and its secret when the daemon made one.
func runClientInit(ctx context.Context, u *cli.UI, f *clientFlags, o *clientInitOptions) error {
	c, err := f.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	if o.id != "" {
		c.SetClientSecret(o.id, envknob.ClientSecret())
	}
	id, err := c.Initialize(ctx, o.id, os.Environ())
	if err != nil {
		return daemonError(u, err)
	}
	if secret := c.ClientSecret(id); secret != "" && secret != envknob.ClientSecret() {
		fmt.Fprintln(u.Out, id, secret)
	} else {
		fmt.Fprintln(u.Out, id)
	}
	return nil
}

// clientNewOptions are the flags of client new.
type clientNewOptions struct{ client, profile, parent string }

func newClientNewCmd(u *cli.UI, f *clientFlags) *cobra.Command {
	var o clientNewOptions
	c := &cobra.Command{
		Use:   "new --client ID [--profile NAME] [--parent SESSION]",
		Short: "Open a session; print the session id",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClientNew(cmd.Context(), u, f, &o)
		},
	}
	c.Flags().StringVar(&o.client, "client", "", "client `id` from init (required; its secret in ENVSIEVE_CLIENT_SECRET)")
	c.Flags().StringVar(&o.profile, "profile", "", "profile `name` (default: the global level only)")
	_ = c.RegisterFlagCompletionFunc("profile", completeProfiles)
	c.Flags().StringVar(&o.parent, "parent", "", "parent `session`: a sub-agent's session, whose profile may only narrow the parent's")
	_ = c.MarkFlagRequired("client")
	return c
}

// runClientNew opens a session and prints its id.
func runClientNew(ctx context.Context, u *cli.UI, f *clientFlags, o *clientNewOptions) error {
	c, err := f.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetClientSecret(o.client, envknob.ClientSecret())
	sid, err := c.NewSession(ctx, o.client, o.profile, o.parent)
	if err != nil {
		return daemonError(u, err)
	}
	fmt.Fprintln(u.Out, sid)
	return nil
}

func newClientExecCmd(u *cli.UI, f *clientFlags) *cobra.Command {
	var o execFlags
	c := &cobra.Command{
		Use:   "exec [flags] (-c STRING | -- CMD [ARGS...])",
		Short: "Run a command in the session of ENVSIEVE_SESSION; its output is streamed back, masked",
		RunE: func(cmd *cobra.Command, argv []string) error {
			return runClientExec(cmd.Context(), u, f, &o, argv)
		},
	}
	c.Flags().SetInterspersed(false)
	noSessionFlag(c)
	o.register(c)
	return c
}

// runClientExec runs argv in the session of ENVSIEVE_SESSION.
func runClientExec(ctx context.Context, u *cli.UI, f *clientFlags, o *execFlags, argv []string) error {
	sid, err := sessionID()
	if err != nil {
		return err
	}
	c, err := f.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return o.exec(ctx, u, c, sid, argv)
}

// clientEnvOptions are the flags of client env.
type clientEnvOptions struct{ json bool }

func newClientEnvCmd(u *cli.UI, f *clientFlags) *cobra.Command {
	var o clientEnvOptions
	c := &cobra.Command{
		Use:   "env [--json]",
		Short: "Show what the commands of the session of ENVSIEVE_SESSION get: names, masked values and their layer",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClientEnv(cmd.Context(), u, f, &o)
		},
	}
	noSessionFlag(c)
	c.Flags().BoolVar(&o.json, "json", false, "print the session/env result as JSON")
	return c
}

// runClientEnv prints the session's environment by layer, values masked.
func runClientEnv(ctx context.Context, u *cli.UI, f *clientFlags, o *clientEnvOptions) error {
	sid, err := sessionID()
	if err != nil {
		return err
	}
	c, err := f.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	r, err := c.Env(ctx, sid)
	if err != nil {
		return daemonError(u, err)
	}
	if o.json {
		enc := json.NewEncoder(u.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	for _, e := range r.Env {
		fmt.Fprintf(u.Out, "%-7s %s=%s\n", e.Layer, e.Name, e.Value)
	}
	return nil
}

func newClientCloseCmd(u *cli.UI, f *clientFlags) *cobra.Command {
	c := &cobra.Command{
		Use:   "close",
		Short: "Close the session of ENVSIEVE_SESSION and its sub-agent sessions, killing their commands",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClientClose(cmd.Context(), u, f)
		},
	}
	noSessionFlag(c)
	return c
}

// runClientClose closes the session of ENVSIEVE_SESSION.
func runClientClose(ctx context.Context, u *cli.UI, f *clientFlags) error {
	sid, err := sessionID()
	if err != nil {
		return err
	}
	c, err := f.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return daemonError(u, c.CloseSession(ctx, sid))
}

// clientRunOptions are the flags of client run.
type clientRunOptions struct {
	execFlags
	profile, id string
}

func newClientRunCmd(u *cli.UI, f *clientFlags) *cobra.Command {
	var o clientRunOptions
	c := &cobra.Command{
		Use:   "run [--profile NAME] [flags] (-c STRING | -- CMD [ARGS...])",
		Short: "Register this shell's environment, open a session, run one command, close it",
		RunE: func(cmd *cobra.Command, argv []string) error {
			if o.profile == "" {
				o.profile = envknob.Profile()
			}
			return runClientRun(cmd.Context(), u, f, &o, argv)
		},
	}
	c.Flags().SetInterspersed(false)
	c.Flags().StringVar(&o.profile, "profile", "", "profile `name` (default: $ENVSIEVE_PROFILE; none means the global level only)")
	_ = c.RegisterFlagCompletionFunc("profile", completeProfiles)
	c.Flags().StringVar(&o.id, "id", "", "register under this client `id`")
	o.register(c)
	return c
}

// runClientRun registers, opens a session, runs argv and closes the
// session, on one connection.
func runClientRun(ctx context.Context, u *cli.UI, f *clientFlags, o *clientRunOptions, argv []string) error {
	c, err := f.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	id, err := c.Initialize(ctx, o.id, os.Environ())
	if err != nil {
		return daemonError(u, err)
	}
	sid, err := c.NewSession(ctx, id, o.profile, "")
	if err != nil {
		return daemonError(u, err)
	}
	defer c.CloseSession(context.Background(), sid)
	return o.exec(ctx, u, c, sid, argv)
}

func newClientShutdownCmd(u *cli.UI, f *clientFlags) *cobra.Command {
	return &cobra.Command{
		Use:   "shutdown",
		Short: "Stop the daemon: running commands are killed, the socket is removed",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runClientShutdown(cmd.Context(), u, f)
		},
	}
}

// runClientShutdown asks the daemon to stop.
func runClientShutdown(ctx context.Context, u *cli.UI, f *clientFlags) error {
	c, err := f.dial(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return daemonError(u, c.Shutdown(ctx))
}

// completeProfiles completes a profile name from the policy envsieve would
// load here (the daemon's is usually the same user's); nothing, silently,
// when it does not load.
func completeProfiles(_ *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
	p, err := cli.LoadPolicy(cli.NewUI(io.Discard, io.Discard, false), "")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, n := range p.ProfileNames() {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
