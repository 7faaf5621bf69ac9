package daemon

import (
	"slices"
	"strings"

	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
)

// layered is one command's environment, built in the daemon's two layers.
type layered struct {
	// Env is the child's environment, sorted, one entry per key.
	Env []string
	// Client is the engine's build of the snapshot (layer 2): its Rule,
	// its Decisions (in snapshot order) and its Injected secrets.
	Client *sieve.Result
	// layer records where each key of Env came from: "daemon", "client",
	// "policy" (a set value) or "secret".
	layer map[string]string
}

// buildEnv builds a command's environment (docs/design.md section 2, step 8):
//
//   - Layer 1, from the daemon's own environment: the keys of the effective policy's
//     base set (through the engine, so their values face the value test and
//     every deny entry applies), plus the profile's shell_env_passthrough
//     names, exact names the policy's author wrote (only a deny entry
//     removes them).
//   - Layer 2, the session's snapshot of the client's environment through
//     the whole pipeline (the rule chosen for the command, the tool's and the
//     requested secrets, set values), or, when the profile says
//     `client_env: full`, the snapshot as it is minus the code-injection
//     floor (the engine's audit mode).
//
// Layer 2 wins on conflict. The merged environment must fit the limits the
// engine resolved for layer 2.
func (s *Server) buildEnv(ss *session, req sieve.Request, values, files map[string]string) (*layered, error) {
	p := s.cfg.Policy
	l1req := sieve.Request{Commands: req.Commands, Path: req.Path, Profile: req.Profile, Mode: req.Mode}
	r1, err := sieve.Build(sieve.Input{Parent: s.layer1[ss.eff.Base], Policy: p, Request: l1req})
	if err != nil {
		return nil, err
	}
	if ss.eff.ClientEnv == policy.ClientFull {
		req.Mode = policy.Audit
	}
	r2, err := sieve.Build(sieve.Input{Parent: ss.snapshot, Policy: p, Request: req, SecretValues: values, SecretFiles: files})
	if err != nil {
		return nil, err
	}
	out := &layered{Client: r2, layer: make(map[string]string, len(r1.Env)+len(r2.Env))}
	merged := make(map[string]string, len(r1.Env)+len(r2.Env))
	for _, kv := range r1.Env {
		k, _, _ := strings.Cut(kv, "=")
		merged[k], out.layer[k] = kv, "daemon"
	}
	if len(ss.eff.ShellEnvPassthrough) > 0 {
		own := firstCopies(s.cfg.Env)
		for _, name := range ss.eff.ShellEnvPassthrough {
			v, ok := own[name]
			if !ok || strings.IndexByte(v, 0) >= 0 || denied(ss.eff, r2.Rule, name) {
				continue
			}
			merged[name], out.layer[name] = name+"="+v, "daemon"
		}
	}
	for _, kv := range r2.Env {
		k, _, _ := strings.Cut(kv, "=")
		merged[k], out.layer[k] = kv, "client"
	}
	for _, d := range r2.Decisions {
		switch {
		case d.Kept && d.Reason == sieve.Set:
			out.layer[d.Key] = "policy"
		case d.Kept && d.Reason == sieve.Secret:
			out.layer[d.Key] = "secret"
		}
	}
	env := make([]string, 0, len(merged))
	for _, kv := range merged {
		env = append(env, kv)
	}
	slices.SortFunc(env, func(a, b string) int {
		ka, _, _ := strings.Cut(a, "=")
		kb, _, _ := strings.Cut(b, "=")
		return strings.Compare(ka, kb)
	})
	if err := sieve.CheckLimits(env, r2.Limits); err != nil {
		return nil, err
	}
	out.Env = env
	return out, nil
}

// denied reports whether the effective policy or the rule has a deny entry for name.
func denied(eff *policy.Effective, rule *policy.Rule, name string) bool {
	if _, ok := eff.Deny(name); ok {
		return true
	}
	if rule != nil {
		if _, ok := rule.Tables.Deny(name); ok {
			return true
		}
	}
	return false
}
