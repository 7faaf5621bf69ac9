package launch

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/envsieve/envsieve/internal/fake"
	"github.com/envsieve/envsieve/policy"
)

// BrokerRequest is what a launch asks of a credential broker (package
// broker, docs/design.md, "The credential broker"): the bindings, the real values it keeps,
// and the user's settings. It travels to the broker over a pipe, never in
// an environment or argv.
type BrokerRequest struct {
	Bindings []*policy.Binding `json:"bindings"`
	// Secrets are the real values by name.
	Secrets map[string]string `json:"secrets"`
	// Key derives the fakes (the install key).
	Key        []byte   `json:"key"`
	BoundOnly  bool     `json:"bound_only"`
	UpstreamCA []string `json:"upstream_ca"`
	// UID is the only user the broker serves.
	UID int `json:"uid"`
	// Dir is a private directory for the CA bundle the child trusts.
	Dir string `json:"dir"`
	// Env are the user's values of the variables the broker takes over:
	// the base-URL variables, NO_PROXY, the proxy it goes through, and
	// the CA files their clients trust (userCAVars).
	Env map[string]string `json:"env"`
	// Logins are the credential files the sealed tree sees as fakes: the
	// broker re-reads one that changed before it swaps one of its
	// credentials (LoginReloader), and writes a token refresh back to it
	// (LoginFile.Renews, WriteBack).
	Logins []LoginFile `json:"logins,omitempty"`
	// AWS are the AWS profiles among the logins: the broker re-signs
	// requests signed with their fakes (AWSLogin).
	AWS []AWSLogin `json:"aws,omitempty"`
}

// BrokerEvent is one thing the broker did or refused (see broker.Event).
type BrokerEvent struct {
	Kind   string `json:"kind"`
	Secret string `json:"secret,omitempty"`
	Host   string `json:"host,omitempty"`
	Place  string `json:"place,omitempty"`
}

// BrokerRun is a running broker.
type BrokerRun interface {
	// ChildEnv returns what the child's environment gets: the fakes, the
	// base-URL and proxy variables, the CA bundle variables.
	ChildEnv() map[string]string
	// Close stops the broker.
	Close() error
}

// errNoBroker is wrapped when secrets are to be brokered and no broker can
// run: the launch fails closed, and nothing starts. Use errors.Is.
var errNoBroker = errors.New("no credential broker")

// brokerVars are the user's variables a broker reads (SSL_CERT_DIR: the
// user's directories stay before the system's, broker.nodeTrust).
var brokerVars = append([]string{"NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "SSL_CERT_DIR"}, userCAVars...)

// userCAVars name the CA files of the user's own environment: the
// broker trusts them upstream, and puts them in the bundle the tree's
// clients trust (docs/design.md section 9.4, "The credential broker").
var userCAVars = []string{"SSL_CERT_FILE", "GIT_SSL_CAINFO", "NODE_EXTRA_CA_CERTS", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"}

// UserCAVars returns the names of the variables through which the user's
// environment names CA files the broker trusts.
func UserCAVars() []string { return slices.Clone(userCAVars) }

// brokerCandidates returns the names the broker keeps the real value of:
// every brokered key of the result, and every key an exec-time grant could
// hand over that a rule or a secret's own binding brokers, with the real
// value of each (from the result's environment, the fetched secrets or
// the parent).
func (l *Plan) brokerCandidates() map[string]string {
	p := l.opt.Policy
	names := slices.Clone(l.Result.Brokered)
	for _, r := range p.Rules {
		for _, s := range r.Level.Brokered {
			names = append(names, s.Entry)
		}
	}
	for name, s := range p.Secrets {
		if s.Broker != nil {
			names = append(names, name)
		}
	}
	have := map[string]string{}
	for _, kv := range l.opt.Parent {
		if k, v, ok := strings.Cut(kv, "="); ok {
			if _, seen := have[k]; !seen {
				have[k] = v
			}
		}
	}
	for k, v := range l.secretEnv {
		have[k] = v
	}
	for _, kv := range l.Result.Env {
		k, v, _ := strings.Cut(kv, "=")
		have[k] = v
	}
	out := map[string]string{}
	for _, n := range names {
		if v := have[n]; v != "" && p.Binding(n) != nil {
			out[n] = v
		}
	}
	return out
}

// startBroker starts the launch's broker when the result brokers a key:
// the child's environment then holds fakes, and the broker's variables,
// in place of the real values. Call it before Plan.openAudit, which
// records what it brokers and, from then on, what the broker does. It is
// a no-op when nothing is brokered; an error (wrapping errNoBroker when no
// broker can run) when something is and no broker starts: a brokered
// value is never handed over for real instead.
func (l *Plan) startBroker() error {
	if l.broker != nil {
		return nil
	}
	logins, err := l.fakeLogins()
	if err != nil {
		return err
	}
	if logins != nil && logins.outer {
		// Nested in a sealed tree: the outer broker serves (outer.go).
		logins.env = outerEnv(l.opt.Parent)
		l.Env = overlay(l.Env, logins.env)
	}
	// AWS keys the tree would get are re-signed with, never handed over
	// (awsEnvLogin): brokered as the policy's keys are.
	awsSrc := awsEnvSource(l.Env, l.opt.Parent, l.opt.Policy)
	treeAWS := len(awsSrc) == len(l.Env) // the keys are the tree's own, or none
	brokered := slices.Clone(l.Result.Brokered)
	for _, kv := range awsSrc {
		if k, v, _ := strings.Cut(kv, "="); v != "" && slices.Contains(awsEnvVars, k) {
			brokered = append(brokered, k)
		}
	}
	if len(brokered) == 0 && (logins == nil || len(logins.creds)+len(logins.aws) == 0) {
		if logins != nil && len(logins.viewVars) > 0 {
			// An agent's view with no login in it: the agent still
			// works in it (agentviews.go).
			l.Env = overlay(l.Env, logins.viewVars)
		}
		return nil
	}
	h := l.host
	if l.opt.NoBroker {
		h.warnf("--no-broker: the command gets the real values of %s", strings.Join(brokered, ", "))
		if logins != nil && len(logins.viewVars) > 0 {
			l.Env = overlay(l.Env, logins.viewVars) // the agents' views, with no login in them
		}
		return nil
	}
	if h.Broker == nil {
		return fmt.Errorf("%w: %s are brokered (the child gets fakes, the broker the real values), and this launcher cannot run the broker", errNoBroker, strings.Join(brokered, ", "))
	}
	key, err := l.key()
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	var awsEnv *awsEnvKeys
	if len(brokered) > len(l.Result.Brokered) {
		if awsEnv, err = awsEnvLogin(awsSrc, h.Home, l.opt.Parent, func(name, real string) string { return fake.Of(key, name, real) }); err != nil {
			if treeAWS {
				h.warnf("%v: the command gets none of the AWS key variables", err)
			} else {
				h.warnf("%v: they are not re-signed, and a rule that grants them hands them over as it says", err)
			}
			l.Env = dropAWSEnv(l.Env)
			brokered = l.Result.Brokered
			if len(brokered) == 0 && (logins == nil || len(logins.creds)+len(logins.aws) == 0) {
				return nil
			}
		}
	}
	dir, err := os.MkdirTemp(os.TempDir(), "envsieve-broker-")
	if err != nil {
		return fmt.Errorf("broker: %w", err)
	}
	l.brokerDir = dir
	p := l.opt.Policy
	req := BrokerRequest{Secrets: l.brokerCandidates(), Key: key, BoundOnly: p.Broker.BoundOnly,
		UID: os.Getuid(), Dir: dir, Env: map[string]string{}}
	for _, ca := range p.Broker.UpstreamCA {
		ca, err := h.expandHome(ca)
		if err != nil {
			return fmt.Errorf("broker: upstream_ca %w", err)
		}
		req.UpstreamCA = append(req.UpstreamCA, ca)
	}
	for name := range req.Secrets {
		req.Bindings = append(req.Bindings, p.Binding(name))
	}
	if logins != nil {
		logins.addLogins(&req)
		req.AWS = append(awsLogins(logins.creds, h.Home, l.opt.Parent), logins.aws...)
	}
	if awsEnv != nil {
		req.AWS = append(req.AWS, awsEnv.login)
	}
	sort.Slice(req.Bindings, func(i, j int) bool { return req.Bindings[i].Name < req.Bindings[j].Name })
	// AWS's clients have no endpoint variable envsieve could point at the
	// broker: they go through the proxy.
	proxy := proxyMode(req.Bindings, req.BoundOnly) || len(req.AWS) > 0
	if !proxy {
		req.Bindings = baseURLOnly(req.Bindings)
	}
	vars := slices.Clone(brokerVars)
	for _, b := range req.Bindings {
		if b.BaseURL != "" {
			vars = append(vars, b.BaseURL)
		}
	}
	for _, kv := range l.opt.Parent {
		if k, v, ok := strings.Cut(kv, "="); ok && slices.Contains(vars, k) {
			if _, seen := req.Env[k]; !seen {
				req.Env[k] = v
			}
		}
	}
	run, err := h.Broker(req, func(e BrokerEvent) { l.alog.Load().Broker(e.Kind, e.Secret, e.Host, e.Place) })
	if err != nil {
		os.RemoveAll(dir)
		l.brokerDir = ""
		if len(brokered) == 0 {
			// Only credential files were to be faked: they stay masked.
			h.warnf("broker: %v: your credential files stay masked in the sealed tree", err)
			l.removeLogins()
			l.logins = nil
			return nil
		}
		return fmt.Errorf("broker: %w", err)
	}
	l.broker = run
	l.brokerEnv = run.ChildEnv()
	nodeOptions(l.Env, l.brokerEnv)
	if logins != nil {
		// A login's fake is in its file, not a variable of the child's.
		for n := range logins.names {
			delete(l.brokerEnv, n)
		}
		for k, v := range logins.gitHelperEnv(l.Env) {
			l.brokerEnv[k] = v
		}
		for k, v := range logins.toolEnv(l.opt.Parent, l.Env) {
			l.brokerEnv[k] = v
		}
	}
	if awsEnv != nil && treeAWS {
		for k, v := range awsEnv.fakes {
			l.brokerEnv[k] = v
		}
	}
	if !proxy {
		for k, v := range loopbackNoProxy(l.Env) {
			l.brokerEnv[k] = v
		}
	}
	if logins != nil && logins.envSet != nil {
		// The environment's web identity: fake keys in its place.
		l.Env = slices.DeleteFunc(l.Env, func(kv string) bool {
			k, _, _ := strings.Cut(kv, "=")
			return slices.Contains(logins.envDrop, k)
		})
		for k, v := range logins.envSet {
			l.brokerEnv[k] = v
		}
	}
	l.Env = overlay(l.Env, l.brokerEnv)
	if awsEnv != nil && !treeAWS {
		// Only a rule's grant gets them (brokerOverlay), not the tree.
		for k, v := range awsEnv.fakes {
			l.brokerEnv[k] = v
		}
	}
	l.mask = nil // the real values left the environment: mask them
	for n := range req.Secrets {
		if logins == nil || !logins.names[n] {
			l.brokered = append(l.brokered, n)
		}
	}
	if awsEnv != nil {
		for n := range awsEnv.fakes {
			l.brokered = append(l.brokered, n)
		}
	}
	sort.Strings(l.brokered)
	if len(l.brokered) > 0 {
		h.debugf("broker: %s brokered (the child holds fakes)", strings.Join(l.brokered, ", "))
	}
	if logins != nil {
		for _, f := range logins.files {
			h.debugf("login: %s is a fake in the sealed tree (%s)", f.Path, strings.Join(f.Names, ", "))
		}
	}
	return nil
}

// proxyBaseURLs are base-URL variables that a common client of their
// key ignores: Codex takes its endpoint from its openai_base_url setting,
// not OPENAI_BASE_URL (docs/agents.md), and reaches api.openai.com only
// through the proxy variables. A binding with one of them keeps proxy
// mode.
var proxyBaseURLs = []string{"OPENAI_BASE_URL"}

// proxyMode reports whether the launch's broker serves proxy mode: the
// child then gets the proxy variables and the CA variables (docs/design.md
// section 9.4). It does when a binding has hosts and no base-URL variable
// (its clients have no endpoint to point elsewhere: gh, git, npm), or a
// base-URL variable some client of the key ignores (proxyBaseURLs), or
// when egress is bound-only (the broker can refuse only what goes through
// it). A binding served through its base-URL variable (Claude Code, Gemini
// CLI, the SDKs) needs no proxy: its hosts are left out, and the tree gets
// no CA variable that every node start would parse.
func proxyMode(bindings []*policy.Binding, boundOnly bool) bool {
	if boundOnly {
		return true
	}
	for _, b := range bindings {
		if b != nil && len(b.Hosts) > 0 && (b.BaseURL == "" || slices.Contains(proxyBaseURLs, b.BaseURL)) {
			return true
		}
	}
	return false
}

// baseURLOnly returns the bindings without their hosts, when every one
// is served through its base-URL variable: the broker then serves base-URL
// mode alone, and sets no proxy or CA variable.
func baseURLOnly(bindings []*policy.Binding) []*policy.Binding {
	out := make([]*policy.Binding, len(bindings))
	for i, b := range bindings {
		if b != nil && len(b.Hosts) > 0 {
			c := *b
			c.Hosts = nil
			b = &c
		}
		out[i] = b
	}
	return out
}

// proxyVars are the variables that send a client's requests through a
// proxy.
var proxyVars = []string{"HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"}

// loopbackNoProxy returns NO_PROXY and no_proxy for a child whose broker
// serves base-URL mode alone while env (the child's) names a proxy of the
// user's: the user's entries plus 127.0.0.1, so that a client honouring
// the proxy variables (curl, Bun, requests) still reaches the broker's
// loopback listener directly, not through a proxy that cannot reach it.
// Nil when env names no proxy.
func loopbackNoProxy(env []string) map[string]string {
	var noProxy string
	proxied := false
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch {
		case slices.Contains(proxyVars, k) && v != "":
			proxied = true
		case (k == "NO_PROXY" || k == "no_proxy") && noProxy == "":
			noProxy = v
		}
	}
	if !proxied {
		return nil
	}
	var keep []string
	for _, e := range strings.Split(noProxy, ",") {
		if e = strings.TrimSpace(e); e != "" {
			keep = append(keep, e)
		}
	}
	if !slices.Contains(keep, "127.0.0.1") && !slices.Contains(keep, "*") {
		keep = append(keep, "127.0.0.1")
	}
	v := strings.Join(keep, ",")
	return map[string]string{"NO_PROXY": v, "no_proxy": v}
}

// nodeOptions keeps a NODE_OPTIONS the policy passes (env, the child's)
// when the broker sets its own (set, broker.nodeTrust): the user's
// options come first and the broker's follows, unless they name it
// already or --use-bundled-ca, which node refuses beside it (node then
// takes the launch CA from NODE_EXTRA_CA_CERTS, at a start's cost).
func nodeOptions(env []string, set map[string]string) {
	add, ok := set["NODE_OPTIONS"]
	if !ok {
		return
	}
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "NODE_OPTIONS="); ok {
			switch {
			case strings.TrimSpace(v) == "":
			case strings.Contains(v, "--use-bundled-ca") || strings.Contains(v, add):
				set["NODE_OPTIONS"] = v
			default:
				set["NODE_OPTIONS"] = v + " " + add
			}
			return
		}
	}
}

// brokeredNames returns, sorted, the names whose real value the broker
// keeps (the child and its exec-time grants hold fakes).
func (l *Plan) brokeredNames() []string { return slices.Clone(l.brokered) }

// overlay returns env with the values of set replacing or added to its
// entries, sorted by key.
func overlay(env []string, set map[string]string) []string {
	if len(set) == 0 {
		return env
	}
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; !ok {
			out = append(out, kv)
		}
	}
	for k, v := range set {
		out = append(out, k+"="+v)
	}
	sort.Slice(out, func(i, j int) bool {
		ki, _, _ := strings.Cut(out[i], "=")
		kj, _, _ := strings.Cut(out[j], "=")
		return ki < kj
	})
	return out
}

// stopBroker stops the broker and removes its directory.
func (l *Plan) stopBroker() {
	if l.broker != nil {
		_ = l.broker.Close()
		l.broker = nil
	}
	if l.brokerDir != "" {
		os.RemoveAll(l.brokerDir)
		l.brokerDir = ""
	}
}

// brokerOverlay returns env as a program of the launch gets it: the
// outer broker's variables a nested launch keeps (outer.go); and when the
// broker runs, the real value of each brokered key present replaced by its
// fake, and the broker's proxy, base-URL and CA variables added, so that
// an exec-time grant reaches its host through the broker too.
func (l *Plan) brokerOverlay(env []string) []string {
	if l.logins != nil {
		env = overlay(env, l.logins.env) // the outer broker's, nested (outer.go)
	}
	if l.broker == nil {
		return env
	}
	set := map[string]string{}
	for k, v := range l.brokerEnv {
		if !slices.Contains(l.brokered, k) {
			set[k] = v
		}
	}
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(l.brokered, k) {
			set[k] = l.brokerEnv[k]
		}
	}
	return overlay(env, set)
}
