package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/pflag"

	"github.com/envsieve/envsieve/internal/cli"
	"github.com/envsieve/envsieve/internal/envknob"
	"github.com/envsieve/envsieve/internal/trust"
	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/redact"
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
	audit   string
	isolate bool
	seal    bool
	noShim  bool
}

func (f *policyFlags) register(fs *pflag.FlagSet, request bool) {
	fs.StringVar(&f.policy, "policy", "", "policy `file` (default: $ENVSIEVE_POLICY, then $XDG_CONFIG_HOME/envsieve/policy.yaml, then the embedded default)")
	if !request {
		return
	}
	fs.StringVar(&f.profile, "profile", "", "profile `name` (default: $ENVSIEVE_PROFILE; none means the global level only)")
	fs.StringVar(&f.mode, "mode", "", "override the policy's mode: enforce or audit")
	fs.StringVar(&f.tool, "tool", "", "give the secrets the policy's tools.`NAME`.injects_env names")
	fs.StringArrayVar(&f.secrets, "secret", nil, "give the secret `NAME`, from the source the policy names (repeatable)")
	fs.StringVar(&f.audit, "audit", "", "write the audit log to `PATH` (- for stderr), instead of the policy's audit.path")
	fs.BoolVar(&f.noShim, "no-shim", false, "do not load the shim (libenvsieve.so): no hiding, no access reports, no exec-time grants")
	fs.BoolVar(&f.isolate, "isolate", false, "run in new user, pid and mount namespaces with their own /proc, so no ancestor's /proc/PID/environ is reachable")
	fs.BoolVar(&f.seal, "seal", false, "with --isolate (implied): mask the credential files of HOME and envsieve's store and keys, and make the envsieve config directory read-only")
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

// launchPlan is one built launch: the engine's result and what the launcher
// must do while the child runs.
type launchPlan struct {
	policy *policy.Policy
	parent []string
	res    *sieve.Result
	req    sieve.Request
	// injected holds the fetched secret values by name, for redaction.
	injected map[string]string
	// files holds file-delivered secrets where they are written to a
	// private directory (no memfd); nil when there are none.
	files *secret.Files
	// fds holds the memory files of file-delivered secrets, inherited by
	// the child as /dev/fd/N.
	fds []*os.File
	// auditPath is --audit; "" means the policy's audit.path.
	auditPath string
	// isolate runs the child in namespaces of its own (--isolate); seal
	// also masks the user's secret material there (--seal).
	isolate, seal bool
	// sealMode is the seal the launch asked for (chooseSeal).
	sealMode policy.SealMode
	// noShim keeps the shim out of the child (--no-shim).
	noShim bool
	// secretEnv and secretFiles are the secrets the build was given, for
	// the builds of exec-time grants.
	secretEnv, secretFiles map[string]string
	// mask caches masked(): nil until computed.
	mask []redact.Secret
	// forceMask masks output even where the policy's redact.enabled is
	// off (envsieve redact).
	forceMask bool
}

// cleanup removes file-delivered secrets.
func (l *launchPlan) cleanup() {
	if l == nil {
		return
	}
	if l.files != nil {
		_ = l.files.Remove()
	}
	for _, f := range l.fds {
		f.Close()
	}
}

// notFetched stands in for a secret that explain does not fetch: it starts
// nothing, so it runs no helper and opens no store.
const notFetched = "<not fetched by explain>"

// fetchSecrets fetches the named secrets from the sources the policy names.
// File-delivered ones become sealed memory files the child inherits (fds,
// named /dev/fd/N in files), made once every helper has run so that none
// inherits one; where there are none (not Linux), files in a private
// directory. With dryRun (explain) only the launcher's own environment is
// read, and nothing is written.
func fetchSecrets(u *cli.UI, p *policy.Policy, parent, names []string, dryRun bool) (values, files map[string]string, dir *secret.Files, fds []*os.File, err error) {
	values = map[string]string{}
	ctx := context.Background()
	var store *secret.Store
	for _, name := range names {
		spec := p.SecretSpec(name)
		if dryRun {
			if spec.From == policy.FromEnv {
				if v, err := secret.Env(parent).Fetch(ctx, name); err == nil {
					values[name] = v
				}
			} else {
				values[name] = notFetched
			}
			continue
		}
		var src secret.Source
		switch spec.From {
		case policy.FromStore:
			if store == nil {
				if store, err = cli.UserStore(); err != nil {
					return nil, nil, dir, nil, err
				}
			}
			src = store
		case policy.FromCommand:
			src = &secret.Command{Argv: spec.Command, Timeout: spec.Timeout, Env: parent, Stderr: u.Err}
		default:
			src = secret.Env(parent)
		}
		v, ferr := src.Fetch(ctx, name)
		if errors.Is(ferr, secret.ErrNotFound) && spec.From == policy.FromEnv {
			continue // the engine reports a missing secret by name
		}
		if ferr != nil {
			return nil, nil, dir, nil, ferr
		}
		values[name] = v
		u.Debugf("secret %s: fetched from %s, delivered as %s", name, spec.From, spec.Deliver)
	}
	for _, name := range names {
		v, ok := values[name]
		if !ok || dryRun || p.SecretSpec(name).Deliver != policy.DeliverFile {
			continue
		}
		if files == nil {
			files = map[string]string{}
		}
		if secret.MemfdSupported {
			f, err := secret.Memfd(name, v)
			if err == nil {
				fds = append(fds, f)
				err = secret.Inherit(f)
			}
			if err != nil {
				return nil, nil, dir, fds, err
			}
			files[name] = secret.FDPath(int(f.Fd()))
			continue
		}
		if dir == nil {
			if dir, err = secret.NewFiles(envknob.RuntimeDir()); err != nil {
				return nil, nil, nil, fds, err
			}
		}
		path, werr := dir.Write(name, v)
		if werr != nil {
			return nil, nil, dir, fds, werr
		}
		files[name] = path
	}
	return values, files, dir, fds, nil
}

// build loads the policy and builds the launch of argv. The program path is
// found in the child's PATH.
func build(u *cli.UI, f *policyFlags, argv []string) (*launchPlan, string, error) {
	p, err := cli.LoadPolicy(u, f.policy)
	if err != nil {
		return nil, "", err
	}
	l, err := buildWith(u, p, f, [][]string{argv}, false)
	if err != nil {
		return nil, "", err
	}
	path, err := launch.Resolve(argv[0], l.res, l.req.Path)
	if err != nil {
		l.cleanup()
		return nil, "", err
	}
	return l, path, nil
}

// buildWith builds the launch of commands under a loaded policy. On success
// the caller owns the plan's cleanup. dryRun fetches no secret that has a
// side effect (see fetchSecrets).
func buildWith(u *cli.UI, p *policy.Policy, f *policyFlags, commands [][]string, dryRun bool) (*launchPlan, error) {
	req, err := f.request(commands)
	if err != nil {
		return nil, err
	}
	parent := os.Environ()
	if len(commands) > 0 && len(commands[0]) > 0 {
		if path, err := launch.LookPath(commands[0][0], parent); err == nil {
			req.Path = path
			// The program a rule would grant to: named as an administrator
			// named it, and one the agent's tree cannot have written.
			if name, writable, err := trust.Program(path, os.Geteuid()); err == nil {
				req.Path, req.Untrusted = name, writable != nil
				if writable != nil {
					u.Debugf("rules: %s is not a program a rule grants to: %v", path, writable)
				}
			}
		}
	}
	names, err := sieve.SecretNames(p, req)
	if err != nil {
		return nil, err
	}
	l := &launchPlan{policy: p, parent: parent, req: req, auditPath: f.audit, isolate: f.isolate, seal: f.seal, noShim: f.noShim}
	values, files, dir, fds, err := fetchSecrets(u, p, parent, names, dryRun)
	l.files, l.fds, l.injected = dir, fds, values
	if err != nil {
		l.cleanup()
		return nil, err
	}
	env := map[string]string{}
	for name, v := range values {
		if _, asFile := files[name]; !asFile {
			env[name] = v
		}
	}
	l.secretEnv, l.secretFiles = env, files
	res, err := sieve.Build(sieve.Input{Parent: parent, Policy: p, Request: req, SecretValues: env, SecretFiles: files})
	if err != nil {
		l.cleanup()
		return nil, err
	}
	l.res = res
	u.Debugf("environment built: %d of %d parent entries kept, %d variables", kept(res), len(parent), len(res.Env))
	return l, nil
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
