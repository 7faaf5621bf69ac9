package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/envsieve/envsieve/internal/envknob"
	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
)

// policyFlags are the flags of every verb that builds an environment.
type policyFlags struct {
	policy  string
	profile string
	mode    string
	tool    string
	secrets []string
}

func (f *policyFlags) register(fs *pflag.FlagSet, request bool) {
	fs.StringVar(&f.policy, "policy", "", "policy `file` (default: $ENVSIEVE_POLICY, then $XDG_CONFIG_HOME/envsieve/policy.yaml, then the embedded default)")
	if !request {
		return
	}
	fs.StringVar(&f.profile, "profile", "", "profile `name` (default: $ENVSIEVE_PROFILE; none means the global level only)")
	fs.StringVar(&f.mode, "mode", "", "override the policy's mode: enforce or audit")
	fs.StringVar(&f.tool, "tool", "", "give the secrets the policy's tools.`NAME`.injects_env names")
	fs.StringArrayVar(&f.secrets, "secret", nil, "give the secret `NAME` from the launcher's environment (repeatable)")
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
		return req, usageError{fmt.Errorf("--mode: want enforce or audit, got %q", f.mode)}
	}
	return req, nil
}

// loadPolicy finds and loads the policy: --policy, else ENVSIEVE_POLICY, else
// $XDG_CONFIG_HOME/envsieve/policy.yaml, else the embedded default; then
// narrows it with ./.envsieve.yaml when that file exists.
func loadPolicy(u *ui, flagPath string) (*policy.Policy, error) {
	path, from := flagPath, "--policy"
	if path == "" {
		path, from = envknob.Policy(), "ENVSIEVE_POLICY"
	}
	if path == "" {
		if dir := envknob.ConfigDir(); dir != "" {
			cand := filepath.Join(dir, "policy.yaml")
			if _, err := os.Stat(cand); err == nil {
				path, from = cand, "the user's config directory"
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("load policy %s: %w", cand, err)
			}
		}
	}
	var p *policy.Policy
	var err error
	if path == "" {
		p, err = policy.Default()
		u.debugf("policy: embedded default (no --policy, ENVSIEVE_POLICY or user policy file)")
	} else {
		p, err = policy.Load(path)
		u.debugf("policy: %s (from %s)", path, from)
	}
	if err != nil {
		return nil, err
	}
	src, err := os.ReadFile(policy.LocalName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return p, nil
	case err != nil:
		return nil, fmt.Errorf("load project-local policy %s: %w", policy.LocalName, err)
	}
	u.debugf("project-local policy: %s", policy.LocalName)
	return p.Narrow(policy.LocalName, src)
}

// secretsFromEnv fetches the values of the named secrets from the launcher's
// own environment, the only secret source of this version. A missing name is
// left out; the engine reports it.
func secretsFromEnv(parent, names []string) map[string]string {
	if len(names) == 0 {
		return nil
	}
	vals := make(map[string]string, len(names))
	for _, n := range names {
		for _, kv := range parent {
			if len(kv) > len(n) && kv[len(n)] == '=' && kv[:len(n)] == n {
				vals[n] = kv[len(n)+1:]
				break
			}
		}
	}
	return vals
}

// build loads the policy and builds the environment for argv. It returns the
// result and the program path to exec, found in the child's PATH.
func build(u *ui, f *policyFlags, argv []string) (*sieve.Result, string, error) {
	p, err := loadPolicy(u, f.policy)
	if err != nil {
		return nil, "", err
	}
	res, req, err := buildWith(u, p, f, [][]string{argv})
	if err != nil {
		return nil, "", err
	}
	path, err := launch.Resolve(argv[0], res, req.Path)
	return res, path, err
}

// buildWith builds the environment for commands under a loaded policy.
func buildWith(u *ui, p *policy.Policy, f *policyFlags, commands [][]string) (*sieve.Result, sieve.Request, error) {
	req, err := f.request(commands)
	if err != nil {
		return nil, req, err
	}
	parent := os.Environ()
	if len(commands) > 0 && len(commands[0]) > 0 {
		if path, err := launch.LookPath(commands[0][0], parent); err == nil {
			req.Path = path
		}
	}
	names, err := sieve.SecretNames(p, req)
	if err != nil {
		return nil, req, err
	}
	res, err := sieve.Build(sieve.Input{Parent: parent, Policy: p, Request: req, SecretValues: secretsFromEnv(parent, names)})
	if err != nil {
		return nil, req, err
	}
	u.debugf("environment built: %d of %d parent entries kept, %d variables", kept(res), len(parent), len(res.Env))
	return res, req, nil
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
