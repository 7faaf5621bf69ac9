package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/spf13/pflag"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/dotenv"
	"github.com/envsieve/envsieve/internal/envknob"
	"github.com/envsieve/envsieve/internal/proc"
	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/secret"
	"github.com/envsieve/envsieve/sieve"
)

// policyFlags are the flags of every verb that builds an environment.
type policyFlags struct {
	policy  string
	profile string
	mode    string
	tool    string
	secrets []string
	// envFiles are run's --env-file files: each name in them is
	// requested, with the file's value as its source.
	envFiles []string
	audit    string
	isolate  bool
	seal     bool
	noShim   bool
	noBroker bool
	// forceMask masks output whatever redact.enabled says (envsieve
	// redact); it is not a flag.
	forceMask bool
}

// Which of policyFlags a verb registers: each verb lists only the flags
// it uses. --policy is always there.
const (
	flagRequest = 1 << iota // --profile, --tool, --secret
	flagMode                // --mode
	flagSandbox             // --no-broker, --no-shim, --isolate, --seal
	flagAudit               // --audit: only a verb that writes the audit log
	flagsLaunch = flagRequest | flagMode | flagSandbox | flagAudit
)

func (f *policyFlags) register(fs *pflag.FlagSet, which int) {
	fs.StringVar(&f.policy, "policy", "", "policy `file` (default: $ENVSIEVE_POLICY, then $XDG_CONFIG_HOME/envsieve/policy.yaml, then the embedded default)")
	if which&flagRequest != 0 {
		fs.StringVar(&f.profile, "profile", "", "profile `name` (default: $ENVSIEVE_PROFILE; none means the global level only)")
		fs.StringVar(&f.tool, "tool", "", "give the secrets the policy's tools.`NAME`.injects_env names")
		fs.StringArrayVar(&f.secrets, "secret", nil, "give the secret `NAME`, from the source the policy names (repeatable)")
	}
	if which&flagMode != 0 {
		fs.StringVar(&f.mode, "mode", "", "override the policy's mode: enforce or audit")
	}
	if which&flagAudit != 0 {
		fs.StringVar(&f.audit, "audit", "", "write the audit log to `PATH` (- for stderr), instead of the policy's audit.path")
	}
	if which&flagSandbox != 0 {
		fs.BoolVar(&f.noBroker, "no-broker", false, "hand brokered secrets over as their real values instead of fakes (the broker does not run)")
		fs.BoolVar(&f.noShim, "no-shim", false, "do not load the shim (libenvsieve.so): no hiding, no access reports, no exec-time grants")
		fs.BoolVar(&f.isolate, "isolate", false, "run in new user, pid and mount namespaces with their own /proc, so no ancestor's /proc/PID/environ is reachable")
		fs.BoolVar(&f.seal, "seal", false, "with --isolate (implied): mask the credential files of HOME and envsieve's store and keys, and make the envsieve config directory read-only")
	}
}

// request turns the flags into an engine request for commands.
func (f *policyFlags) request(commands [][]string) (sieve.Request, error) {
	req := sieve.Request{Commands: commands, Profile: f.profile, Tool: f.tool, Secrets: f.secrets}
	if req.Profile == "" {
		req.Profile = envknob.Profile()
	}
	switch policy.Mode(f.mode) {
	case "", policy.Enforce, policy.Audit:
		req.Mode = policy.Mode(f.mode)
	default:
		return req, cli.UsageError{Err: fmt.Errorf("--mode: want enforce or audit, got %q", f.mode)}
	}
	return req, nil
}

// host is what a launch of the CLI needs from the user's configuration.
func host(u *cli.UI, f *policyFlags) *launch.Host {
	exe, _ := os.Executable()
	auditPath := f.audit
	if auditPath == "" {
		auditPath = envknob.Audit()
	}
	var brokerFn func(launch.BrokerRequest, func(launch.BrokerEvent)) (launch.BrokerRun, error)
	if prog, err := findDaemonProgram(); err == nil {
		brokerFn = launch.BrokerProcess(prog)
	}
	h := &launch.Host{
		Broker: brokerFn,
		Report: u,
		Stderr: u.Err,
		Key:    func() ([]byte, error) { return cli.InstallKeyFor(u) },
		Store:  func() (secret.Source, error) { return cli.UserStore() },
		// --secret NAME finds what `envsieve secrets set NAME` stored.
		DefaultStore: true,
		HelperEnv:    os.Environ(),
		RuntimeDir:   envknob.RuntimeDir(),
		SocketDir:    envknob.SocketDir(),
		Shim:         envknob.Shim(),
		Exe:          exe,
		Home:         envknob.Home(),
		ConfigDir:    envknob.ConfigDir(),
		DataDir:      envknob.DataDir(),
		AuditPath:    auditPath,
	}
	if why := cli.Nested(); why != "" {
		// Inside an envsieve tree: only what the launch was given (no
		// store, no helper), and a key for this launch only.
		h.Nested, h.Key, h.Store, h.HelperEnv = why, nil, nil, nil
		u.Debugf("nested: %s: secrets come only from this launch's environment", why)
	}
	return h
}

// build loads the policy and builds the launch of argv; Start finds the
// program in the child's PATH.
func build(u *cli.UI, f *policyFlags, argv []string) (*launch.Plan, error) {
	p, err := cli.LoadPolicy(u, f.policy)
	if err != nil {
		return nil, err
	}
	return buildWith(u, p, f, [][]string{argv}, nil, runsCommand)
}

// How a launch is built: whether it runs its first command itself (run,
// explain) and whether it is a dry run (explain).
const (
	runsCommand = 1 << iota // a rule may pin the program's bytes (launch.Options.RunsCommand)
	dryRun                  // fetch no secret that has a side effect
)

// buildWith builds the launch of commands under a loaded policy. On success
// the caller owns the plan's Cleanup. shell is the command line that runs
// the commands when it is not the first of them (launch.Options.Argv); how
// is a set of the flags above.
func buildWith(u *cli.UI, p *policy.Policy, f *policyFlags, commands [][]string, shell []string, how int) (*launch.Plan, error) {
	req, err := f.request(commands)
	if err != nil {
		return nil, err
	}
	envFile, names, err := readEnvFiles(u, f.envFiles)
	if err != nil {
		return nil, err
	}
	req.Secrets = append(req.Secrets, names...)
	parent := os.Environ()
	l, err := launch.Build(context.Background(), host(u, f), launch.Options{
		Policy: p, Parent: parent, Request: req, Argv: shell, DryRun: how&dryRun != 0, RunsCommand: how&runsCommand != 0,
		Isolate: f.isolate, Seal: f.seal, NoShim: f.noShim, NoBroker: f.noBroker, ForceMask: f.forceMask,
		EnvFile: envFile,
	})
	if err != nil {
		return nil, didYouMean(err, p, f, parent)
	}
	u.Debugf("environment built: %d of %d parent entries kept, %d variables", kept(l.Result), len(parent), len(l.Result.Env))
	return l, nil
}

// start runs a built launch (launch.Plan.Start) with the launcher's own
// stdin, stdout and stderr, and turns the child's exit status into the
// CLI's. It returns only on failure when the launch execs in place.
func start(l *launch.Plan) error {
	r, err := l.Start(context.Background(), launch.Stdio{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
	var stopped *proc.InterruptedError
	if errors.As(err, &stopped) {
		// A Ctrl-C or a SIGTERM during the set-up: nothing started, and
		// the launch cleaned up. End as the signal would have ended us.
		proc.RaiseSelf(stopped.Signal)
		if s, ok := stopped.Signal.(syscall.Signal); ok {
			return cli.ExitStatus(128 + int(s))
		}
		return cli.ExitStatus(130)
	}
	if err != nil {
		return err
	}
	status, err := r.Wait()
	if err != nil {
		return err
	}
	if status != 0 {
		return cli.ExitStatus(status)
	}
	return nil
}

func kept(res *sieve.Result) int {
	n := 0
	for _, d := range res.Decisions {
		if d.Kept && !d.Added {
			n++
		}
	}
	return n
}

// readEnvFiles reads dotenv files (dotenv.Parse) and returns their
// values by name and the names in file order; nil, nil when there are
// none. An op:// reference is read with 1Password's op, as the `from: op`
// source reads it (readOpRef). A name in two files, a malformed reference
// and one op cannot read are errors at their position; no value is ever in
// an error.
func readEnvFiles(u *cli.UI, paths []string) (map[string]string, []string, error) {
	if len(paths) == 0 {
		return nil, nil, nil
	}
	values := map[string]string{}
	where := map[string]string{}
	var names []string
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("--env-file: %w", err)
		}
		entries, err := dotenv.Parse(path, data)
		if err != nil {
			return nil, nil, fmt.Errorf("--env-file: %w", err)
		}
		for _, e := range entries {
			pos := fmt.Sprintf("%s:%d:%d", path, e.Line, e.Col)
			if first, ok := where[e.Key]; ok {
				return nil, nil, fmt.Errorf("--env-file: %s: %s is given twice (first at %s)", pos, e.Key, first)
			}
			if strings.HasPrefix(e.Value, "op://") {
				v, err := readOpRef(u, e.Key, e.Value)
				if err != nil {
					return nil, nil, fmt.Errorf("--env-file: %s: %w", pos, err)
				}
				e.Value = v
			}
			values[e.Key], where[e.Key] = e.Value, pos
			names = append(names, e.Key)
		}
	}
	return values, names, nil
}

// readOpRef reads the 1Password reference ref for the secret name as the
// policy's `from: op` source does: `op read REF`, a trusted op found in
// PATH, a minimal environment. Inside an envsieve tree no helper runs.
func readOpRef(u *cli.UI, name, ref string) (string, error) {
	argv, err := secret.OnePasswordArgv(ref)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if why := cli.Nested(); why != "" {
		return "", fmt.Errorf("%s is an op:// reference, and inside an envsieve tree (%s) envsieve runs no helper: give %s its value", name, why, name)
	}
	cmd := &secret.Command{Argv: argv, Env: os.Environ(), Stderr: u.Err}
	return cmd.Fetch(context.Background(), name)
}

// didYouMean adds the closest known name to an unknown tool's error, and
// to that of a secret no source has (the policy's secrets and the names of
// the launcher's environment; names only, never a value).
func didYouMean(err error, p *policy.Policy, f *policyFlags, parent []string) error {
	var se *sieve.SecretError
	switch {
	case errors.Is(err, sieve.ErrUnknownTool):
		if s := policy.DidYouMean(f.tool, slices.Collect(maps.Keys(p.Tools))); s != "" {
			return fmt.Errorf("%w%s", err, s)
		}
	case errors.As(err, &se) && strings.HasPrefix(se.Reason, "not found"):
		names := slices.Collect(maps.Keys(p.Secrets))
		for _, kv := range parent {
			if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
				names = append(names, k)
			}
		}
		slices.Sort(names)
		if s := policy.DidYouMean(se.Name, slices.Compact(names)); s != "" {
			return fmt.Errorf("%w%s", err, s)
		}
	}
	return err
}
