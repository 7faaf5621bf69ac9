package launch

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/envsieve/envsieve/login"
	"github.com/envsieve/envsieve/policy"
)

// AWSLogin is one AWS profile's keys, which the broker re-signs with
// rather than swaps (broker.AWSCred, docs/broker.md "AWS"): the real keys,
// the fakes the tree's ~/.aws/credentials holds, and the hosts besides
// AWS's own its requests are re-signed for (the profile's endpoint_url
// hosts in ~/.aws/config).
type AWSLogin struct {
	Name  string       `json:"name"`
	Real  login.AWSKey `json:"real"`
	Fake  login.AWSKey `json:"fake"`
	Hosts []string     `json:"hosts,omitempty"`
}

// awsLogins returns the AWS profiles among creds, each with the
// endpoint_url hosts ~/.aws/config (under home, read here, outside the
// tree) gives its profile. A config that cannot be read or understood
// adds no host: the profile is re-signed for AWS's endpoints only.
func awsLogins(creds []login.Cred, home string) []AWSLogin {
	var out []AWSLogin
	var hosts map[string][]string
	for _, c := range creds {
		if c.AWS == nil {
			continue
		}
		if hosts == nil {
			hosts = map[string][]string{}
			if data, err := os.ReadFile(filepath.Join(home, ".aws", "config")); err == nil {
				if h, err := login.AWSEndpointHosts(data); err == nil {
					hosts = h
				}
			}
		}
		profile := strings.TrimPrefix(c.Name, "aws:")
		out = append(out, AWSLogin{Name: c.Name, Real: c.AWS.Real, Fake: c.AWS.Fake, Hosts: hosts[profile]})
	}
	return out
}

// AWSReloader returns, for the broker, the current real keys of an AWS
// profile of the faked files: it stats the real ~/.aws/credentials at
// each call, and re-reads and parses it when it changed (a tool such as
// saml2aws writing new temporary keys in the user's terminal). It answers
// the keys and true, or false when it has nothing newer to say (the file
// is gone, cannot be read or understood, or no longer holds the profile):
// the broker then keeps the keys it has.
func AWSReloader(files []LoginFile) func(name string) (login.AWSKey, bool) {
	f, _ := login.ByPath(".aws/credentials")
	type state struct {
		path  string
		stamp [5]int64
		keys  map[string]login.AWSKey
		ok    bool
	}
	byName := map[string]*state{}
	for _, lf := range files {
		if lf.Format != f.Name {
			continue
		}
		s := &state{path: lf.Path}
		for _, n := range lf.Names {
			byName[n] = s
		}
	}
	var mu sync.Mutex
	anyFake := func(_, real string) string { return strings.Repeat("x", len(real)) }
	return func(name string) (login.AWSKey, bool) {
		s := byName[name]
		if s == nil {
			return login.AWSKey{}, false
		}
		mu.Lock()
		defer mu.Unlock()
		stamp, err := fileStamp(s.path)
		if err != nil {
			return login.AWSKey{}, false
		}
		if !s.ok || stamp != s.stamp {
			real, err := os.ReadFile(s.path)
			if err != nil {
				return login.AWSKey{}, false
			}
			_, creds, err := f.Fake(real, anyFake)
			if err != nil {
				return login.AWSKey{}, false
			}
			s.keys = map[string]login.AWSKey{}
			for _, c := range creds {
				if c.AWS != nil {
					s.keys[c.Name] = c.AWS.Real
				}
			}
			s.stamp, s.ok = stamp, true
		}
		k, ok := s.keys[name]
		return k, ok
	}
}

// awsEnvVars are the variables of AWS keys a tree's environment may hold
// (login.AWSEnv): the broker keeps their real values and re-signs.
var awsEnvVars = []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"}

// awsEnvKeys are the AWS keys of the child's environment, once faked.
type awsEnvKeys struct {
	// fakes are the variables' fakes, by name.
	fakes map[string]string
	login AWSLogin
}

// awsEnvLogin fakes the AWS keys of env (the child's environment, as the
// policy admitted it): nil when it holds none. The keys are re-signed for
// AWS's endpoints and the endpoint_url hosts of the profile the
// environment selects (AWS_PROFILE, else "default") in ~/.aws/config
// under home. An id without a secret, or the other way round, is an
// error: the launch then drops the variables rather than hand one over.
func awsEnvLogin(env []string, home string, faker login.Faker) (*awsEnvKeys, error) {
	vars := map[string]string{}
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && (slices.Contains(awsEnvVars, k) || k == "AWS_PROFILE") {
			vars[k] = v
		}
	}
	fakes, c, ok, err := login.AWSEnv(vars, faker)
	if err != nil || !ok {
		return nil, err
	}
	a := AWSLogin{Name: c.Name, Real: c.AWS.Real, Fake: c.AWS.Fake}
	if home != "" {
		if data, err := os.ReadFile(filepath.Join(home, ".aws", "config")); err == nil {
			if h, err := login.AWSEndpointHosts(data); err == nil {
				profile := vars["AWS_PROFILE"]
				if profile == "" {
					profile = "default"
				}
				a.Hosts = h[profile]
			}
		}
	}
	return &awsEnvKeys{fakes: fakes, login: a}, nil
}

// awsEnvSource returns the environment whose AWS key variables the
// broker re-signs with: the tree's (env), when it holds any; else, when a
// rule of p could grant them to a program (allow: [AWS_SECRET_ACCESS_KEY]
// under a rule for aws), env with the parent's values of them, which an
// exec-time grant would hand over (brokerOverlay gives it the fakes);
// else env.
func awsEnvSource(env, parent []string, p *policy.Policy) []string {
	has := func(e []string) bool {
		return slices.ContainsFunc(e, func(kv string) bool {
			k, v, _ := strings.Cut(kv, "=")
			return v != "" && slices.Contains(awsEnvVars, k)
		})
	}
	if has(env) || p == nil {
		return env
	}
	grantable := false
	for _, r := range p.Rules {
		for _, e := range r.Level.Allow {
			for _, k := range awsEnvVars {
				grantable = grantable || e.Glob.Match(k)
			}
		}
	}
	if !grantable {
		return env
	}
	out := slices.Clone(env)
	seen := map[string]bool{}
	for _, kv := range parent {
		if k, _, _ := strings.Cut(kv, "="); slices.Contains(awsEnvVars, k) && !seen[k] {
			seen[k] = true // the first copy, as the sieve reads it
			out = append(out, kv)
		}
	}
	return out
}

// dropAWSEnv returns env without the AWS key variables.
func dropAWSEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		k, _, _ := strings.Cut(kv, "=")
		return slices.Contains(awsEnvVars, k)
	})
}

// AWSState is, for explain, one set of AWS keys the tree holds fakes of:
// a profile of ~/.aws/credentials or the AWS key variables of the
// environment, and the hosts the broker re-signs its requests for.
type AWSState struct {
	// Name is "aws:PROFILE" or "aws:env".
	Name string `json:"name"`
	// Vars are the environment's variables faked ("aws:env" only).
	Vars []string `json:"vars,omitempty"`
	// Seen is "fake"; for the environment's keys also "real" (--no-broker),
	// "refused" (no broker can run: run refuses to start) or "dropped" (an
	// id without a secret, or the other way round). Why says why.
	Seen string `json:"seen"`
	Why  string `json:"why,omitempty"`
	// Hosts are AWS's endpoints and the profile's endpoint_url hosts.
	Hosts []string `json:"hosts,omitempty"`
	// Grant is true when only a rule's exec-time grant would hand the
	// variables over, not the tree's own environment.
	Grant bool `json:"grant,omitempty"`
}

// awsStates returns the AWS profiles among creds as explain shows them.
func awsStates(creds []login.Cred, home string) []AWSState {
	var out []AWSState
	for _, a := range awsLogins(creds, home) {
		out = append(out, AWSState{Name: a.Name, Seen: "fake", Hosts: append(slices.Clone(login.AWSHosts), a.Hosts...)})
	}
	return out
}

// AWSEnvPreview says, for explain, what the tree would get of the AWS key
// variables of env (the child's environment as the policy p admits it from
// parent), or of parent's when only a rule of p may grant them (Grant):
// nil when there are none. broker tells whether a broker could run,
// noBroker whether --no-broker was given. It reads ~/.aws/config under
// home.
func AWSEnvPreview(env, parent []string, p *policy.Policy, home string, broker, noBroker bool) *AWSState {
	src := awsEnvSource(env, parent, p)
	grant := len(src) != len(env)
	env = src
	var vars []string
	for _, kv := range env {
		if k, v, _ := strings.Cut(kv, "="); v != "" && slices.Contains(awsEnvVars, k) {
			vars = append(vars, k)
		}
	}
	if len(vars) == 0 {
		return nil
	}
	slices.Sort(vars)
	st := &AWSState{Name: "aws:env", Vars: vars, Grant: grant}
	a, err := awsEnvLogin(env, home, func(_, real string) string { return strings.Repeat("x", len(real)) })
	switch {
	case noBroker:
		st.Seen, st.Why = "real", "--no-broker"
	case !broker:
		st.Seen, st.Why = "refused", "no broker can run: run refuses to start"
	case err != nil:
		st.Seen, st.Why = "dropped", err.Error()
	default:
		st.Seen, st.Hosts = "fake", append(slices.Clone(login.AWSHosts), a.login.Hosts...)
	}
	return st
}

// AWSConfigPreview says, for explain, which profiles of ~/.aws/config
// under home get their keys by means envsieve does not fake
// (login.AWSConfigFetchers), each "not faked" with what the tree can do
// with it (docs/broker.md, "Profiles of ~/.aws/config that fetch keys").
// Nil when there is none, or the config cannot be read or understood.
func AWSConfigPreview(home string, sealed bool) []AWSState {
	if home == "" {
		return nil
	}
	data, err := os.ReadFile(filepath.Join(home, ".aws", "config"))
	if err != nil {
		return nil
	}
	fetchers, err := login.AWSConfigFetchers(data)
	if err != nil {
		return nil
	}
	names := slices.Sorted(maps.Keys(fetchers))
	var out []AWSState
	for _, p := range names {
		st := AWSState{Name: "aws:" + p, Seen: "not faked"}
		switch {
		case fetchers[p] == "credential_process":
			st.Why = "its credential_process runs in the tree, and the keys it prints are real"
		case sealed:
			st.Why = "IAM Identity Center: the seal masks the SSO cache, so the profile does not work in the tree"
		default:
			st.Why = "IAM Identity Center: the tree reads the SSO cache and gets the role's real keys"
		}
		out = append(out, st)
	}
	return out
}
