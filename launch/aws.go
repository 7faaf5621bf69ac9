package launch

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/envsieve/envsieve/internal/login"
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
	// Fetch, for a profile of ~/.aws/config that fetches its keys, is
	// how the broker gets them (Real is then empty).
	Fetch *AWSFetch `json:"fetch,omitempty"`
}

// awsLogins returns the AWS profiles among creds, each with the
// endpoint_url hosts the user's config (~/.aws/config under home, or the
// file AWS_CONFIG_FILE names in env; read here, outside the tree) gives
// its profile. A config that cannot be read or understood adds no host:
// the profile is re-signed for AWS's endpoints only.
func awsLogins(creds []login.Cred, home string, env []string) []AWSLogin {
	var out []AWSLogin
	var hosts map[string][]string
	for _, c := range creds {
		if c.AWS == nil {
			continue
		}
		if hosts == nil {
			hosts = map[string][]string{}
			if data, err := os.ReadFile(awsConfigPath(home, env)); err == nil {
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
func awsEnvLogin(env []string, home string, parent []string, faker login.Faker) (*awsEnvKeys, error) {
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
		if data, err := os.ReadFile(awsConfigPath(home, parent)); err == nil {
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
	// From says where the broker gets the real keys: "file" (the user's
	// ~/.aws/credentials), "env", "process" (the profile's
	// credential_process, run outside the tree), "sso" (IAM Identity
	// Center, from the SSO cache outside the tree), "role" (STS
	// AssumeRole), "web-identity" (STS AssumeRoleWithWebIdentity with the
	// profile's token file) or "config" (static keys in the config).
	From string `json:"from,omitempty"`
	// Grant is true when only a rule's exec-time grant would hand the
	// variables over, not the tree's own environment.
	Grant bool `json:"grant,omitempty"`
	// File, for a profile of the config (AWSConfigPreview), is the config
	// the user's AWS_CONFIG_FILE names, when it names one other than
	// ~/.aws/config.
	File string `json:"file,omitempty"`
}

// awsStates returns the AWS profiles among creds as explain shows them.
func awsStates(creds []login.Cred, home string) []AWSState {
	var out []AWSState
	for _, a := range awsLogins(creds, home, os.Environ()) {
		out = append(out, AWSState{Name: a.Name, Seen: "fake", From: "file", Hosts: append(slices.Clone(login.AWSHosts), a.Hosts...)})
	}
	return out
}

// awsEnvPreview says, for explain, what the tree would get of the AWS key
// variables of env (the child's environment as the policy p admits it from
// parent), or of parent's when only a rule of p may grant them (Grant):
// nil when there are none. broker tells whether a broker could run,
// noBroker whether --no-broker was given. It reads ~/.aws/config under
// home.
func awsEnvPreview(env, parent []string, p *policy.Policy, home string, broker, noBroker bool) *AWSState {
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
	st := &AWSState{Name: "aws:env", Vars: vars, Grant: grant, From: "env"}
	a, err := awsEnvLogin(env, home, parent, func(_, real string) string { return strings.Repeat("x", len(real)) })
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

// AWSConfigPreview says, for explain, what a launch's tree gets of the
// profiles of ~/.aws/config under home (or the file the user's
// AWS_CONFIG_FILE names: File) that fetch their keys
// (credential_process, IAM Identity Center): in a sealed launch with a
// broker, "fake" static keys whose real ones the broker fetches outside
// the tree (From "process" or "sso"; a profile the credentials file
// already fakes keeps that file's, as botocore reads it first, and is not
// listed), else "not faked", with what the tree can do with it; "masked"
// when the config cannot be understood or a credential_process command
// cannot be run safely (the config is then masked in a sealed tree).
// Nil when there is none, or no config.
func AWSConfigPreview(home string, sealed, broker bool) []AWSState {
	if home == "" {
		return nil
	}
	cfg := awsConfigPath(home, os.Environ())
	data, err := os.ReadFile(cfg)
	if err != nil {
		return nil
	}
	file, shown := "", "~/.aws/config"
	if cfg != filepath.Join(home, ".aws", "config") {
		file, shown = cfg, cfg
	}
	out, err := awsConfigPreview(home, data, sealed, broker, shown)
	for i := range out {
		out[i].File = file
	}
	if err != nil {
		return nil
	}
	return out
}

// awsConfigPreview is AWSConfigPreview of the config data, which explain
// names as shown.
func awsConfigPreview(home string, data []byte, sealed, broker bool, shown string) ([]AWSState, error) {
	fetchers, err := login.AWSConfigFetchers(data)
	if err != nil {
		if sealed && broker && (bytes.Contains(data, []byte("credential_process")) || bytes.Contains(data, []byte("sso_"))) {
			return []AWSState{{Name: "aws:*", Seen: "masked", Why: err.Error()}}, nil
		}
		return nil, err
	}
	if sealed && broker {
		faked := map[string]bool{}
		if f, ok := login.ByPath(".aws/credentials"); ok {
			if real, err := os.ReadFile(awsCredentialsPath(home, os.Environ())); err == nil {
				if _, creds, err := f.Fake(real, func(_, real string) string { return strings.Repeat("x", len(real)) }); err == nil {
					for _, c := range creds {
						faked[c.Name] = true
					}
				}
			}
		}
		_, fs, fetch, hosts, err := awsFetchers(home, os.Environ(), treeWrites(home), faked)
		if err != nil {
			return []AWSState{{Name: "aws:*", Seen: "masked", Why: err.Error() + ": " + shown + " is masked"}}, nil
		}
		var out []AWSState
		for _, f := range fs {
			a := fetch["aws:"+f.Profile]
			st := AWSState{Name: "aws:" + f.Profile, Seen: "fake", From: a.From(), Hosts: append(slices.Clone(login.AWSHosts), hosts[f.Profile]...)}
			switch {
			case a.SSO != nil:
				st.Why = "real keys from IAM Identity Center: the SSO cache's token, exchanged by the broker outside the tree"
			case a.Role != nil && a.Role.TokenFile != "":
				st.Why = "real keys from STS AssumeRoleWithWebIdentity, called by the broker with the token file, which the seal masks"
			case a.Role != nil:
				st.Why = "real keys from STS AssumeRole, called by the broker with profile " + a.Role.Source + "'s keys"
			case a.Static != nil:
				st.Why = "real keys in " + shown + " itself, kept by the broker"
			default:
				st.Why = "real keys from its credential_process, run by the broker outside the tree"
			}
			out = append(out, st)
		}
		return append(out, awsCredentialSources(fetchers)...), nil
	}
	names := slices.Sorted(maps.Keys(fetchers))
	var out []AWSState
	for _, p := range names {
		st := AWSState{Name: "aws:" + p, Seen: "not faked"}
		if strings.HasPrefix(fetchers[p], "credential_source:") {
			continue // listed below
		}
		switch {
		case fetchers[p] == "credential_process" && sealed:
			st.Why = "no broker can run: its credential_process runs in the tree, and the keys it prints are real"
		case fetchers[p] == "credential_process":
			st.Why = "its credential_process runs in the tree, and the keys it prints are real"
		case sealed:
			st.Why = "IAM Identity Center, no broker can run: the seal masks the SSO cache, so the profile does not work in the tree"
		default:
			st.Why = "IAM Identity Center: the tree reads the SSO cache and gets the role's real keys"
		}
		out = append(out, st)
	}
	return append(out, awsCredentialSources(fetchers)...), nil
}

// awsCredentialSources says, for explain, what a tree gets of the
// assume-role profiles with a credential_source (fetchers as
// login.AWSConfigFetchers gives them): the broker assumes none itself.
// With Environment the source keys are the environment's (fakes in a
// launch with a broker), and the role's keys STS answers reach the tree as
// fresh fakes (broker: "Keys AWS mints"); with the machine's metadata
// service (Ec2InstanceMetadata, EcsContainer) the tree asks it itself, not
// through the broker, and gets its real keys.
func awsCredentialSources(fetchers map[string]string) []AWSState {
	var out []AWSState
	for _, p := range slices.Sorted(maps.Keys(fetchers)) {
		src, ok := strings.CutPrefix(fetchers[p], "credential_source:")
		if !ok {
			continue
		}
		st := AWSState{Name: "aws:" + p, Seen: "not faked", From: "credential_source"}
		switch src {
		case "Environment":
			st.Why = "credential_source Environment: the tree assumes the role with the environment's keys, through the broker when they are fakes, and the keys STS answers reach it as fresh fakes"
		case "Ec2InstanceMetadata", "EcsContainer":
			st.Seen = "real"
			st.Why = "credential_source " + src + ": the tree asks the machine's metadata service itself, not through the broker, and gets its real keys"
		default:
			st.Why = "credential_source " + src + ": not one botocore knows"
		}
		out = append(out, st)
	}
	return out
}

// AWSFetch is how the broker gets the real keys of a profile of
// ~/.aws/config that fetches them (login.AWSFetcher), outside the tree:
// by running its credential_process (Argv, with the user's environment
// Env, in Dir) or from IAM Identity Center (SSO: the token `aws sso login`
// left in CacheDir exchanged at the portal, Portal when the profile names
// its endpoint). Either is fetched again before it expires.
type AWSFetch struct {
	Argv     []string             `json:"argv,omitempty"`
	Env      []string             `json:"env,omitempty"`
	Dir      string               `json:"dir,omitempty"`
	SSO      *login.AWSSSOProfile `json:"sso,omitempty"`
	CacheDir string               `json:"cache_dir,omitempty"`
	Portal   string               `json:"portal,omitempty"`
	// OIDC is the SSO OIDC service's endpoint, when the profile names
	// one: the broker refreshes the cached token there.
	OIDC string `json:"oidc,omitempty"`
	// Role is an assume-role profile's role, which the broker assumes
	// with the keys of the launch's profile Role.Source, at STS (the
	// profile's endpoint when it names one).
	Role *login.AWSRoleProfile `json:"role,omitempty"`
	STS  string                `json:"sts,omitempty"`
	// Static are static keys the config itself holds (real values), and
	// ConfigFile that config: the broker re-reads it when it changes.
	Static     *login.AWSKey `json:"static,omitempty"`
	ConfigFile string        `json:"config_file,omitempty"`
}

// From says where the real keys come from, for explain: "process",
// "sso", "role", "web-identity" or "config" (static keys in
// ~/.aws/config).
func (f *AWSFetch) From() string {
	switch {
	case f.SSO != nil:
		return "sso"
	case f.Role != nil && f.Role.TokenFile != "":
		return "web-identity"
	case f.Role != nil:
		return "role"
	case f.Static != nil:
		return "config"
	}
	return "process"
}

// awsConfigPath is the config file the user's aws reads: the one
// AWS_CONFIG_FILE names in env (the user's environment), else
// ~/.aws/config under home.
func awsConfigPath(home string, env []string) string {
	return awsUserFile(home, env, "AWS_CONFIG_FILE", ".aws/config")
}

// awsCredentialsPath is the credentials file the user's aws reads: the
// one AWS_SHARED_CREDENTIALS_FILE names in env, else ~/.aws/credentials.
func awsCredentialsPath(home string, env []string) string {
	return awsUserFile(home, env, "AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials")
}

// awsUserFile returns the file the variable name of env names as
// botocore reads it (a leading "~/" is HOME; a relative path is the
// working directory's, the tree's too), else rel under home.
func awsUserFile(home string, env []string, name, rel string) string {
	v := ""
	for _, kv := range env {
		if x, ok := strings.CutPrefix(kv, name+"="); ok {
			v = x // the last copy, as os.Getenv reads a Go program's
		}
	}
	if v == "" {
		return filepath.Join(home, rel)
	}
	if r, ok := strings.CutPrefix(v, "~/"); ok && home != "" {
		return filepath.Join(home, r)
	}
	if a, err := filepath.Abs(v); err == nil {
		return a
	}
	return filepath.Clean(v)
}

// awsFetchers reads ~/.aws/config under home and returns its fake (the
// fetching lines left out) and, for each profile that fetches keys and
// is not already a profile of the faked credentials file (faked: botocore
// reads that file's keys before a credential_process; an SSO profile
// with keys there too keeps the file's), how the broker fetches them.
// parent is the user's environment (the process's); the process runs in
// home, which the tree cannot write (its working directory it can).
// fakeCfg is nil when the config holds no such profile; err when it is
// missing or cannot be understood, or a credential_process command cannot
// be run safely from outside the tree: not found in the user's PATH, a
// relative path, or a program the tree could replace (treeCanReplace).
func awsFetchers(home string, parent []string, writable []string, faked map[string]bool) (fakeCfg []byte, out []login.AWSFetcher, fetch map[string]*AWSFetch, hosts map[string][]string, err error) {
	data, err := os.ReadFile(awsConfigPath(home, parent))
	if err != nil {
		return nil, nil, nil, nil, err
	}
	fakeCfg, fetchers, err := login.AWSConfigFake(data, faked)
	if err != nil || len(fetchers) == 0 {
		return nil, nil, nil, nil, err
	}
	hosts, err = login.AWSEndpointHosts(data)
	if err != nil {
		return nil, nil, nil, nil, err
	}
	path := ""
	for _, kv := range parent {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
			break
		}
	}
	fetch = map[string]*AWSFetch{}
	for _, f := range fetchers {
		if faked["aws:"+f.Profile] {
			continue
		}
		a := &AWSFetch{}
		if f.Static != nil {
			a.Static, a.ConfigFile = f.Static, awsConfigPath(home, parent)
		} else if f.Role != nil {
			a.Role, a.STS = f.Role, f.Endpoint
			if f.Role.TokenFile != "" {
				// Read by the broker as botocore reads it (no "~"
				// expansion; a relative path is the working
				// directory's); the seal masks it.
				r := *f.Role
				if abs, err := filepath.Abs(r.TokenFile); err == nil {
					r.TokenFile = abs
				}
				a.Role = &r
			}
		} else if f.SSO != nil {
			a.SSO, a.Portal, a.OIDC = f.SSO, f.Endpoint, f.OIDCEndpoint
			a.CacheDir = filepath.Join(home, ".aws", "sso", "cache")
		} else {
			argv, err := login.SplitCommand(f.Process)
			if err != nil {
				return nil, nil, nil, nil, err
			}
			prog, err := lookPathIn(argv[0], path)
			if err != nil {
				return nil, nil, nil, nil, fmt.Errorf("aws config: profile %s: credential_process: %w", f.Profile, err)
			}
			if treeCanReplace(filepath.Clean(prog), home, writable) {
				return nil, nil, nil, nil, fmt.Errorf("aws config: profile %s: credential_process: the tree could replace %s", f.Profile, prog)
			}
			argv[0] = prog
			a.Argv, a.Env, a.Dir = argv, slices.Clone(parent), home
			if a.Env == nil {
				a.Env = []string{}
			}
		}
		fetch["aws:"+f.Profile] = a
		out = append(out, f)
	}
	return fakeCfg, out, fetch, hosts, nil
}

// lookPathIn finds prog as a shell would in path: an absolute path as it
// is, a bare name in path's absolute directories. A relative path with a
// slash is refused (it would be resolved in a working directory the tree
// may write), and so is a bare name found only in a relative entry of
// path.
func lookPathIn(prog, path string) (string, error) {
	if filepath.IsAbs(prog) {
		return prog, nil
	}
	if strings.Contains(prog, "/") {
		return "", fmt.Errorf("%q is a relative path", prog)
	}
	for _, d := range filepath.SplitList(path) {
		if !filepath.IsAbs(d) {
			continue
		}
		p := filepath.Join(d, prog)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q is not in the user's PATH", prog)
}

// fakeAWSConfig fakes the profiles of ~/.aws/config that fetch their keys
// (a credential_process, IAM Identity Center) in a sealed launch: the
// tree gets ~/.aws/config without the lines that fetch keys (Spec.Fake,
// and AWS_CONFIG_FILE for Landlock) and, in its credentials file, fake
// static keys for each such profile; the broker fetches the real ones
// outside the tree (AWSLogin.Fetch). A config that cannot be understood
// and mentions either is masked; one that does not passes as it is.
func (l *Plan) fakeAWSConfig(lf *loginFakes, faker login.Faker) error {
	home := l.host.Home
	cfgPath := awsConfigPath(home, l.opt.Parent)
	faked := map[string]bool{}
	for _, c := range lf.creds {
		if c.AWS != nil {
			faked[c.Name] = true
		}
	}
	fakeCfg, fetchers, fetch, hosts, err := awsFetchers(home, l.opt.Parent, treeWrites(home), faked)
	if errors.Is(err, fs.ErrNotExist) || err == nil && fakeCfg == nil {
		return nil
	}
	if err != nil {
		data, _ := os.ReadFile(cfgPath)
		if bytes.Contains(data, []byte("credential_process")) || bytes.Contains(data, []byte("sso_")) {
			lf.masks = append(lf.masks, cfgPath)
			lf.states = append(lf.states, LoginState{Path: cfgPath, Format: "aws-config", Seen: "masked", Why: err.Error()})
			l.host.debugf("login: %s stays masked: %v", cfgPath, err)
		} else {
			l.host.debugf("login: %s passes as it is: %v", cfgPath, err)
		}
		return nil
	}
	if err := lf.makeDir(l.host.socketDir()); err != nil {
		return err
	}
	sections, keys, err := login.AWSFakeProfiles(fetchers, faker)
	if err != nil {
		return fmt.Errorf("login fakes: %w", err)
	}
	credPath := awsCredentialsPath(home, l.opt.Parent)
	creds := sections
	if dst, ok := lf.fake[credPath]; ok {
		prev, err := os.ReadFile(dst)
		if err != nil {
			return fmt.Errorf("login fakes: %w", err)
		}
		creds = append(prev, sections...)
	}
	write := func(base string, data []byte) (string, error) {
		dst := filepath.Join(lf.dir, strconv.Itoa(len(lf.fake))+"-aws-"+base)
		return dst, os.WriteFile(dst, data, 0o400)
	}
	cfgDst, err := write("config", fakeCfg)
	if err != nil {
		return fmt.Errorf("login fakes: %w", err)
	}
	lf.fake[cfgPath], lf.vars["AWS_CONFIG_FILE"] = cfgDst, cfgDst
	lf.masks = append(lf.masks, cfgPath)
	lf.userVar(l.opt.Parent, "AWS_CONFIG_FILE")
	credDst, err := write("credentials", creds)
	if err != nil {
		return fmt.Errorf("login fakes: %w", err)
	}
	lf.fake[credPath], lf.vars["AWS_SHARED_CREDENTIALS_FILE"] = credDst, credDst
	if credPath != filepath.Join(home, ".aws", "credentials") && !slices.Contains(lf.masks, credPath) {
		lf.masks = append(lf.masks, credPath) // the default is on the seal's list
	}
	lf.userVar(l.opt.Parent, "AWS_SHARED_CREDENTIALS_FILE")
	for i := range lf.states {
		if st := &lf.states[i]; st.Path == credPath && st.Seen != "fake" {
			// The file could not be faked: its fake holds only these.
			st.Seen, st.Why = "fake", "only the profiles of ~/.aws/config that fetch keys ("+st.Why+")"
		}
	}
	st := LoginState{Path: cfgPath, Format: "aws-config", Seen: "fake"}
	for _, f := range fetchers {
		name := "aws:" + f.Profile
		a := AWSLogin{Name: name, Fake: keys[name], Hosts: hosts[f.Profile], Fetch: fetch[name]}
		if r := a.Fetch.Role; r != nil && r.TokenFile != "" && !slices.Contains(lf.masks, awsTokenMask(r.TokenFile)) {
			// A web identity token is a credential: the tree gets none.
			lf.masks = append(lf.masks, awsTokenMask(r.TokenFile))
		}
		lf.aws = append(lf.aws, a)
		st.AWS = append(st.AWS, AWSState{Name: name, Seen: "fake", From: a.Fetch.From(),
			Hosts: append(slices.Clone(login.AWSHosts), a.Hosts...)})
		l.host.debugf("login: %s is a fake in the sealed tree; the broker fetches its keys (%s)", name, a.Fetch.From())
	}
	lf.states = append(lf.states, st)
	return nil
}

// treeCanReplace reports whether a sealed tree could replace the program
// prog, which the broker runs outside it: under home (read-only in the
// tree), when it is at or in writable, the places under home the tree
// writes; elsewhere (where the seal does not restrict writes), when the
// launch's user may write it or its directory.
func treeCanReplace(prog, home string, writable []string) bool {
	if atOrIn(prog, []string{home}) {
		return atOrIn(prog, writable)
	}
	return writableByUs(prog) || writableByUs(filepath.Dir(prog))
}

// treeWrites are places under home a tree writes that a launch knows
// before its seal is made: the working directory and the caches.
func treeWrites(home string) []string {
	out := CachePlaces(home)
	if wd, err := os.Getwd(); err == nil {
		out = append(out, wd)
	}
	return out
}

// makeDir makes lf's directory of fakes in dir, once.
func (lf *loginFakes) makeDir(dir string) error {
	if lf.dir != "" {
		return nil
	}
	d, err := os.MkdirTemp(dir, loginsDirPrefix)
	if err != nil {
		return fmt.Errorf("login fakes: %w", err)
	}
	lf.dir = d
	return nil
}

// awsWebIdentityVars are the variables of a web identity in the
// environment (EKS's IRSA): botocore assumes the role AWS_ROLE_ARN names
// with the token in the file AWS_WEB_IDENTITY_TOKEN_FILE names.
var awsWebIdentityVars = []string{"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_ROLE_SESSION_NAME"}

// awsWebIdentityTokenFile returns the token file env's
// AWS_WEB_IDENTITY_TOKEN_FILE names, as botocore reads it (no "~"
// expansion; a relative path is the working directory's), or "".
func awsWebIdentityTokenFile(env []string) string {
	p := envValueIn(env, "AWS_WEB_IDENTITY_TOKEN_FILE")
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return filepath.Clean(p)
}

// fakeAWSWebIdentityEnv fakes a web identity of the child's environment
// (AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN, as the policy admitted
// them) in a sealed launch: the broker reads the token outside the tree
// and calls STS AssumeRoleWithWebIdentity itself (at AWS_ENDPOINT_URL_STS,
// else AWS_ENDPOINT_URL, else AWS's, in AWS_REGION or AWS_DEFAULT_REGION),
// and the tree gets fake static keys in their place (lf.envSet, with the
// variables in lf.envDrop); the seal masks the token file whatever the
// tree's environment holds (run.go). Nothing when the environment holds
// static keys, which botocore reads first, or names an STS endpoint that
// is not https.
func (l *Plan) fakeAWSWebIdentityEnv(lf *loginFakes, faker login.Faker) error {
	env := l.Env
	arn, token := envValueIn(env, "AWS_ROLE_ARN"), awsWebIdentityTokenFile(env)
	if arn == "" || token == "" || envValueIn(env, "AWS_ACCESS_KEY_ID") != "" {
		return nil
	}
	const profile = "env-web-identity"
	_, keys, err := login.AWSFakeProfiles([]login.AWSFetcher{{Profile: profile}}, faker)
	if err != nil {
		return fmt.Errorf("login fakes: %w", err)
	}
	region := envValueIn(env, "AWS_REGION")
	if region == "" {
		region = envValueIn(env, "AWS_DEFAULT_REGION")
	}
	endpoint := envValueIn(env, "AWS_ENDPOINT_URL_STS")
	if endpoint == "" {
		endpoint = envValueIn(env, "AWS_ENDPOINT_URL")
	}
	var hosts []string
	if endpoint != "" {
		u, err := url.Parse(endpoint)
		if err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil {
			// The tree keeps the variables, and the seal the token.
			l.host.warnf("AWS_ENDPOINT_URL_STS or AWS_ENDPOINT_URL is not an https URL: the environment's web identity is not faked, and its token file is masked")
			return nil
		}
		hosts = append(hosts, u.Host)
	}
	if data, err := os.ReadFile(awsConfigPath(l.host.Home, l.opt.Parent)); err == nil && l.host.Home != "" {
		if h, err := login.AWSEndpointHosts(data); err == nil {
			p := envValueIn(env, "AWS_PROFILE")
			if p == "" {
				p = "default"
			}
			hosts = append(hosts, h[p]...)
		}
	}
	name := "aws:" + profile
	k := keys[name]
	a := AWSLogin{Name: name, Fake: k, Hosts: hosts, Fetch: &AWSFetch{STS: endpoint,
		Role: &login.AWSRoleProfile{ARN: arn, TokenFile: token, SessionName: envValueIn(env, "AWS_ROLE_SESSION_NAME"), Region: region}}}
	lf.aws = append(lf.aws, a)
	lf.envSet = map[string]string{"AWS_ACCESS_KEY_ID": k.AccessKeyID, "AWS_SECRET_ACCESS_KEY": k.SecretAccessKey, "AWS_SESSION_TOKEN": k.SessionToken}
	lf.envDrop = awsWebIdentityVars
	l.host.debugf("login: the environment's web identity is fake keys in the sealed tree; the broker assumes the role with %s", token)
	return nil
}

// awsWebIdentityPreview says, for explain, what the tree gets of the web
// identity token file the user's environment (parent) names, env being
// the child's environment as the policy admits it; nil when there is
// none. File is the token file, Vars the web identity's variables the
// policy admits.
func awsWebIdentityPreview(env, parent []string, sealed, broker bool) *AWSState {
	token := awsWebIdentityTokenFile(parent)
	if token == "" {
		return nil
	}
	st := &AWSState{Name: "aws:env-web-identity", File: token, From: "web-identity"}
	for _, k := range awsWebIdentityVars {
		if envValueIn(env, k) != "" {
			st.Vars = append(st.Vars, k)
		}
	}
	admitted := envValueIn(env, "AWS_ROLE_ARN") != "" && awsWebIdentityTokenFile(env) != ""
	switch {
	case !sealed && admitted:
		st.Seen, st.Why = "real", "not sealed: the tree reads the token and assumes the role itself"
	case !sealed:
		st.Seen, st.Why = "real", "not sealed: the tree can read the token file"
	case !admitted:
		st.Seen, st.Why = "masked", "the policy does not admit AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN; the seal masks the token file"
	case envValueIn(env, "AWS_ACCESS_KEY_ID") != "":
		st.Seen, st.Why = "masked", "the environment's static keys come first; the seal masks the token file"
	case !broker:
		st.Seen, st.Why = "masked", "no broker can run: the seal masks the token file, so the role does not work in the tree"
	default:
		st.Seen, st.Why = "fake", "real keys from STS AssumeRoleWithWebIdentity, called by the broker with the token file, which the seal masks; the tree gets fake keys instead of the variables"
	}
	return st
}

// awsTokenMask is what the seal masks for the web identity token file p:
// p, or its directory when that is a volume Kubernetes projects (it holds
// "..data", the link the kubelet swaps when it rotates the token: a mask
// of p alone would hide the first token's file, not the next one's).
func awsTokenMask(p string) string {
	if p == "" {
		return ""
	}
	if fi, err := os.Lstat(filepath.Join(filepath.Dir(p), "..data")); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return filepath.Dir(p)
	}
	return p
}
