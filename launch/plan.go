package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/envsieve/envsieve/internal/audit"
	"github.com/envsieve/envsieve/internal/detect"
	"github.com/envsieve/envsieve/internal/memfd"
	"github.com/envsieve/envsieve/internal/nest"
	"github.com/envsieve/envsieve/internal/pin"
	"github.com/envsieve/envsieve/internal/proc"
	"github.com/envsieve/envsieve/internal/sshfilter"
	"github.com/envsieve/envsieve/internal/trust"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/redact"
	"github.com/envsieve/envsieve/seal"
	"github.com/envsieve/envsieve/secret"
	"github.com/envsieve/envsieve/sieve"
)

// Reporter receives what a launch has to say besides its errors: debug
// lines and warnings. The CLI's UI implements it; a nil Reporter in a
// [Host] is silent.
type Reporter interface {
	Debugf(format string, args ...any)
	Warnf(format string, args ...any)
}

// Host is what a launch needs from the program that runs it: where its
// secrets, keys and files are. The CLI fills it from the user's
// configuration; the daemon from its own. Every field's zero value is
// documented; none of them makes the launch inherit anything.
type Host struct {
	// Report gets debug lines and warnings; nil is silent.
	Report Reporter
	// Stderr gets the output of `from: command` helpers and the notes
	// printed after a failed child; nil discards them.
	Stderr io.Writer
	// Key returns the install key (redaction tokens, audit fingerprints);
	// nil means a random key for each launch (its tokens and fingerprints
	// match nothing outside it).
	Key func() ([]byte, error)
	// Store opens the secret store for `from: store` secrets; nil means
	// there is none, and such a secret is not found.
	Store func() (secret.Source, error)
	// DefaultStore looks a secret the policy names no source for
	// (policy.Secret.FromDefault) up in Store when the environment lacks
	// it (the CLI: `--secret NAME` finds what `envsieve secrets set NAME`
	// stored). false keeps such a secret to the environment (the daemon,
	// whose clients are agents: only a declared from: store reaches its
	// store).
	DefaultStore bool
	// HelperEnv is the environment of `from: command` helpers, before
	// the helper's own minimal filter (secret.Command).
	HelperEnv []string
	// RuntimeDir holds file-delivered secrets where memory files are not
	// available; "" means os.TempDir().
	RuntimeDir string
	// SocketDir holds the shim's socket: a directory the commands of an
	// agent's own sandbox still see; "" means os.TempDir().
	SocketDir string
	// Server says the launcher is a long-lived server that runs launches
	// side by side as its own children (the daemon): [Plan.Start] never
	// replaces it (no exec in place), starts the program in a process
	// group of its own that a cancelled context kills whole, makes the
	// seal by Landlock only (no namespaces: the server is the program's
	// parent), and neither forwards the server's signals nor makes it a
	// subreaper or non-dumpable. false is a launcher that runs one launch
	// (run, sh): it stays resident only when something needs it.
	Server bool
	// ExtraFiles passes file-delivered secrets as the child's descriptors
	// 3 and on (a server that runs launches side by side, so none
	// inherits another's); false makes them inheritable as they are (a
	// launcher that runs one child, or execs in place).
	ExtraFiles bool
	// Shim is the shim the user named (ENVSIEVE_SHIM); "" looks next to
	// Exe.
	Shim string
	// Exe is the running launcher's path, next to which the shim is found.
	Exe string
	// Home is HOME, for the audit log's "~" paths and the seal.
	Home string
	// ConfigDir and DataDir are envsieve's own directories, for the seal.
	ConfigDir, DataDir string
	// Broker starts a credential broker for a launch that brokers secrets
	// (the CLI runs envsieve-daemon's broker; the daemon its own); events
	// gets what the broker does. nil means none can run, and a launch that
	// brokers a secret fails (errNoBroker).
	Broker func(req BrokerRequest, events func(BrokerEvent)) (BrokerRun, error)
	// AuditPath is the audit log the user named (--audit, ENVSIEVE_AUDIT);
	// "" means the policy's audit.path, and none when that is empty too.
	AuditPath string
	// Nested says why the launcher runs inside a tree envsieve started
	// (internal/nest.Detect); "" means it does not. A nested launch only
	// narrows what it was given: every secret comes from Parent, whatever
	// source the policy names; Store is never opened and no `from:
	// command` helper runs; a secret Parent lacks is an error naming it
	// ([ErrNested]). A nested host should also leave Key nil (a key for
	// the launch only), as the install key is envsieve's secret material.
	Nested string
}

// expandHome returns p with a leading "~/" as the host's HOME; an error
// naming p when HOME is unknown.
func (h *Host) expandHome(p string) (string, error) {
	rest, ok := strings.CutPrefix(p, "~/")
	if !ok {
		return p, nil
	}
	if h.Home == "" {
		return "", fmt.Errorf("%s: HOME is not set to an absolute path", p)
	}
	return filepath.Join(h.Home, rest), nil
}

func (h *Host) debugf(format string, args ...any) {
	if h.Report != nil {
		h.Report.Debugf(format, args...)
	}
}

func (h *Host) warnf(format string, args ...any) {
	if h.Report != nil {
		h.Report.Warnf(format, args...)
	}
}

func (h *Host) stderr() io.Writer {
	if h.Stderr == nil {
		return io.Discard
	}
	return h.Stderr
}

func (h *Host) socketDir() string {
	if h.SocketDir == "" {
		return os.TempDir()
	}
	return h.SocketDir
}

func (h *Host) runtimeDir() string {
	if h.RuntimeDir == "" {
		return os.TempDir()
	}
	return h.RuntimeDir
}

// Options is one launch's request.
type Options struct {
	// Policy is the loaded policy; it is never changed.
	Policy *policy.Policy
	// Parent is the environment the launch filters: the launcher's own
	// (os.Environ()) or, for a daemon session, the client's snapshot.
	Parent []string
	// Request is the engine's request. When its Path is empty and the
	// first command is found in Parent's PATH, Build fills Path and
	// Untrusted from the program found (internal/trust).
	Request sieve.Request
	// Argv is the command line [Plan.Start] runs when it is not the
	// request's first command: a shell that runs the request's commands
	// (sh, a daemon's shell string), looked up in the child's PATH. nil
	// runs Request.Commands[0], looked up in the built PATH.
	Argv []string
	// Dir is the program's working directory; "" means the launcher's.
	Dir string
	// DryRun fetches no secret that has a side effect (explain): only
	// `from: env` secrets are read, and nothing is written.
	DryRun bool
	// RunsCommand says the launch runs the first command itself (run,
	// explain), not a shell that will run it (sh): a rule that pins a
	// program's bytes (match: sha256) may then apply, and the launch runs
	// the sealed copy it hashed (package pin).
	RunsCommand bool
	// Isolate runs the child in namespaces of its own; Seal also masks
	// the user's secret material there (it implies Isolate).
	Isolate, Seal bool
	// NoShim keeps the shim out of the child.
	NoShim bool
	// NoBroker hands brokered secrets over as their real values (the
	// user's --no-broker), with a warning.
	NoBroker bool
	// ForceMask masks output even where the policy's redact.enabled is off
	// (envsieve redact). The policy itself is never changed.
	ForceMask bool
	// Sensitive are Parent's sensitive values (the first copy of each
	// key), when the caller has them already (a daemon session computes
	// them once); nil computes them from Parent.
	Sensitive []redact.Secret
	// RedactCache, when set, keeps the redaction sets of a series of
	// launches (a daemon session's); nil compiles each launch's own.
	RedactCache *RedactCache
	// EnvFile holds the values of an env file (run --env-file), by name:
	// each is its name's source, whatever the policy names (the name must
	// still be requested, and the engine's deny and masking apply). nil
	// means none.
	EnvFile map[string]string
	// Builder builds the environment from the fetched secrets; nil is
	// sieve.Build over Parent. The daemon gives its two layers here.
	Builder func(in sieve.Input) (*sieve.Result, error)
}

// Plan is one built launch: the engine's result and what the launcher
// must do while the child runs. It owns the file-delivered secrets until
// [Plan.Cleanup].
type Plan struct {
	host *Host
	opt  Options
	// Result is the engine's result. It is never changed.
	Result *sieve.Result
	// Env is the child's environment: the result's, plus the shim's
	// variables once Plan.startShim has added them.
	Env []string
	// Request is the request the result was built for.
	Request sieve.Request
	// interp is the first program's ENVSIEVE_SHIM_INTERP, when the rule
	// grants to a #!/usr/bin/env script (see checkInterpreter).
	interp string
	// injected holds the fetched secret values by name, for redaction
	// and the audit log's fingerprints; sources the source that gave each.
	injected map[string]string
	sources  map[string]policy.SecretFrom
	// secretEnv and secretFiles are the secrets the build was given, for
	// the builds of exec-time grants.
	secretEnv, secretFiles map[string]string
	// files holds file-delivered secrets where they are written to a
	// private directory (no memfd); nil when there are none.
	files *secret.Files
	// fds holds the memory files of file-delivered secrets.
	fds []*os.File
	// sealMode is the seal the launch settled on (chooseSeal), sealBy
	// how it is made, and sealIsolates whether it alone isolates the
	// launch (the options did not ask for --isolate).
	sealMode     policy.SealMode
	sealBy       seal.Mechanism
	sealIsolates bool
	// sealed says the launch's tree is sealed, isolated that it runs in
	// namespaces of its own (chooseSeal settles both from the options,
	// which are never changed); sealNotice says why a seal the launch
	// asked for (`on`) is not made, "" when it is or none was asked.
	sealed, isolated bool
	sealNotice       string
	// started is set by Start: a plan starts once.
	started bool
	// d is the decision record (decide); sealErr why the seal cannot be
	// made here, unshare the envsieve-init an isolated launch execs in
	// its place ("" for none), landlock the one a launch sealed by
	// Landlock execs in its place ("" for none), brokerOnly that the
	// decision keeps the launcher resident only for a broker that may
	// run, shimLib, shimStatic and shimErr what FindShim said of the
	// program (when shimFound).
	d          Decision
	sealErr    error
	unshare    string
	landlock   string
	brokerOnly bool
	shimLib    string
	shimStatic bool
	shimErr    error
	shimFound  bool
	spec       *seal.Spec // the launch's seal, once sealSpec made it
	mask       []redact.Secret
	set        *redact.Set // compiled from mask by Start; nil masks nothing known
	ownKey     []byte      // the launch's own key when the host has none
	// broker is the running broker; brokerEnv what it put in Env, by
	// name; brokered the names it keeps the real value of; brokerDir its
	// private directory.
	broker    BrokerRun
	brokerEnv map[string]string
	brokered  []string
	brokerDir string
	// sshAgent is the running ssh agent filter, sshDir its directory.
	sshAgent *sshfilter.Filter
	sshDir   string
	// logins are the fake credential files of a sealed launch
	// (fakeLogins), once the broker started.
	logins *loginFakes
	// alog is the open audit log, for the broker's events.
	alog atomic.Pointer[audit.Log]
	// pinned is the sealed copy of the first program when the rule the
	// launch applies pins its bytes: the copy is what runs. noRule says
	// why no rule applies to the first program, when one might have.
	pinned *pin.Program
	noRule string
}

// extraFiles returns the memory files of file-delivered secrets when the
// host passes them as the child's descriptors 3 and on, in that order.
func (l *Plan) extraFiles() []*os.File {
	if !l.host.ExtraFiles {
		return nil
	}
	return l.fds
}

// Cleanup removes file-delivered secrets and closes their memory files.
// It is safe on a nil Plan and more than once.
func (l *Plan) Cleanup() {
	if l == nil {
		return
	}
	l.stopBroker()
	l.stopSSHAgent()
	l.removeLogins()
	if l.files != nil {
		_ = l.files.Remove()
		l.files = nil
	}
	for _, f := range l.fds {
		f.Close()
	}
	l.fds = nil
	l.pinned.Close()
	l.pinned = nil
}

// FetchError reports a secret its source could not give. It names the
// secret and the source, never a value.
type FetchError struct {
	Name string
	From policy.SecretFrom
	Err  error
}

func (e *FetchError) Error() string {
	return fmt.Sprintf("secret %s (from %s): %v", e.Name, e.From, e.Err)
}

func (e *FetchError) Unwrap() error { return e.Err }

// FromEnvFile is the source of a secret an env file gives ([Options.EnvFile]).
const FromEnvFile policy.SecretFrom = "env-file"

// notFetched stands in for a secret that a dry run does not fetch: it
// starts nothing, so it runs no helper and opens no store.
const notFetched = "<not fetched by explain>"

// Build fetches the request's secrets from the sources the policy names and
// builds the child's environment. On success the caller owns the plan's
// Cleanup.
func Build(ctx context.Context, h *Host, o Options) (*Plan, error) {
	if o.Policy == nil {
		return nil, errors.New("launch: no policy")
	}
	if o.Parent == nil {
		return nil, ErrNilEnv
	}
	req := o.Request
	var prog *pin.Program
	var noRule []string
	realPath := "" // the first program's file, for its #! check
	if req.Path == "" && len(req.Commands) > 0 && len(req.Commands[0]) > 0 {
		if path, err := proc.LookPath(req.Commands[0][0], o.Parent); err == nil {
			req.Path = path
			// The program a rule would grant to: named as an administrator
			// named it, and one the agent's tree cannot have written, or
			// the very bytes a rule pins.
			if name, real, writable, err := trust.ProgramFile(path, os.Geteuid()); err == nil {
				req.Path, req.Untrusted, realPath = name, writable != nil, real
				if writable != nil {
					h.debugf("rules: %s is not a program a rule grants to: %v", path, writable)
					noRule = append(noRule, name+" is in a place the agent's tree can write, so only a rule that pins its sha256 grants to it")
				}
				if o.RunsCommand && pins(o.Policy, name) {
					if prog, err = pin.Open(real); err != nil {
						noRule = append(noRule, err.Error())
					} else {
						req.Digest = prog.SHA256
						noRule = append(noRule, pinMismatch(o.Policy, name, prog.SHA256))
					}
				}
			}
		}
	}
	names, err := sieve.SecretNames(o.Policy, req)
	if err != nil {
		prog.Close()
		return nil, err
	}
	l := &Plan{host: h, opt: o, Request: req, pinned: prog}
	values, files, err := l.fetch(ctx, names)
	if err != nil {
		l.Cleanup()
		return nil, err
	}
	env := map[string]string{}
	for name, v := range values {
		if _, asFile := files[name]; !asFile {
			env[name] = v
		}
	}
	l.injected, l.secretEnv, l.secretFiles = values, env, files
	in := sieve.Input{Parent: o.Parent, Policy: o.Policy, Request: req, SecretValues: env, SecretFiles: files}
	if l.Result, err = l.build(in); err != nil {
		l.Cleanup()
		return nil, err
	}
	if r := l.Result.Rule; r != nil && o.RunsCommand && realPath != "" {
		// The program a rule grants to runs its #! interpreter with the
		// grant: that must be out of the tree's reach too, or the rule
		// does not apply (the same check as a grant at exec).
		script := realPath
		if r.SHA256 != "" && l.pinned != nil {
			script = l.pinned.Path()
		}
		interp, ierr := checkInterpreter(script, envValue(l.Result.Env, "PATH"), os.Geteuid())
		l.interp = interp
		if ierr != nil {
			l.interp = ""
			h.debugf("rules: rule %s does not apply: %v", r.Name, ierr)
			noRule = append(noRule, "rule "+r.Name+": "+ierr.Error())
			l.Request.Untrusted, l.Request.Digest = true, ""
			in.Request = l.Request
			if l.Result, err = l.build(in); err != nil {
				l.Cleanup()
				return nil, err
			}
		}
	}
	if r := l.Result.Rule; r == nil || r.SHA256 == "" {
		// The copy runs only when it is what the rule granted to.
		l.pinned.Close()
		l.pinned = nil
	}
	if l.Result.Rule == nil {
		l.noRule = strings.Join(slices.DeleteFunc(noRule, func(s string) bool { return s == "" }), "; ")
	}
	l.Env = slices.Clone(l.Result.Env)
	l.decide()
	return l, nil
}

// pins reports whether a rule of p pins the bytes of the program at name.
func pins(p *policy.Policy, name string) bool {
	for _, r := range p.Rules {
		if r.SHA256 != "" && r.MatchProgram(name) {
			return true
		}
	}
	return false
}

// pinMismatch says which rules pin the program at name to other bytes than
// those of digest; "" when none does.
func pinMismatch(p *policy.Policy, name, digest string) string {
	var rules []string
	for _, r := range p.Rules {
		if r.SHA256 != "" && r.SHA256 != digest && r.MatchProgram(name) {
			rules = append(rules, "rule "+r.Name+" ("+r.Pos.String()+") pins "+r.SHA256)
		}
	}
	if rules == nil {
		return ""
	}
	return fmt.Sprintf("the sha256 of %s is %s, and %s", name, digest, strings.Join(rules, ", "))
}

// build builds an environment of the launch: the host's Builder, or the
// engine over the parent; either way marked as a tree's (marked).
func (l *Plan) build(in sieve.Input) (*sieve.Result, error) {
	build := sieve.Build
	if l.opt.Builder != nil {
		build = l.opt.Builder
	}
	res, err := build(in)
	if err != nil {
		return nil, err
	}
	return marked(res), nil
}

// marked returns res with nest.Var=1 in its environment, in key order,
// replacing any copy the engine kept: every program a launch starts
// (first, granted at exec, a daemon session's command) is in an envsieve
// tree, and an envsieve started there must know it. res is not changed.
func marked(res *sieve.Result) *sieve.Result {
	out := *res
	out.Env = make([]string, 0, len(res.Env)+1)
	mark := nest.Var + "=1"
	for _, kv := range res.Env {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case k == nest.Var:
			continue
		case mark != "" && k > nest.Var:
			out.Env = append(out.Env, mark)
			mark = ""
		}
		out.Env = append(out.Env, kv)
	}
	if mark != "" {
		out.Env = append(out.Env, mark)
	}
	return &out
}

// fetch fetches the named secrets. File-delivered ones become sealed
// memory files (made once every helper has run, so that none inherits
// one), named /dev/fd/N in files; where there are none (not Linux), files
// in a private directory.
func (l *Plan) fetch(ctx context.Context, names []string) (values, files map[string]string, err error) {
	h, p := l.host, l.opt.Policy
	values = map[string]string{}
	l.sources = map[string]policy.SecretFrom{}
	var store secret.Source
	openStore := func() (secret.Source, error) {
		if store == nil {
			if h.Store == nil {
				return nil, fmt.Errorf("%w: there is no secret store here", secret.ErrNotFound)
			}
			s, err := h.Store()
			if err != nil {
				return nil, err
			}
			store = s
		}
		return store, nil
	}
	got := func(name string, from policy.SecretFrom, v string) error {
		if v == "" {
			return &FetchError{Name: name, From: from, Err: ErrEmpty}
		}
		values[name], l.sources[name] = v, from
		return nil
	}
	for _, name := range names {
		spec := p.SecretSpec(name)
		if v, ok := l.opt.EnvFile[name]; ok {
			// The user's file, read by the launcher: nested or not, it
			// is nothing the launcher's tree could not read itself.
			if err := got(name, FromEnvFile, v); err != nil {
				return nil, nil, err
			}
			h.debugf("secret %s: from the env file, delivered as %s", name, spec.Deliver)
			continue
		}
		if l.opt.DryRun {
			if spec.From == policy.FromEnv || h.Nested != "" {
				if v, err := secret.Env(l.opt.Parent).Fetch(ctx, name); err == nil {
					values[name], l.sources[name] = v, policy.FromEnv
				} else if spec.FromDefault && h.Nested == "" && h.Store != nil && h.DefaultStore {
					// Not in the environment: the store would be asked,
					// and a dry run opens no store.
					values[name], l.sources[name] = notFetched, policy.FromStore
				}
			} else {
				values[name], l.sources[name] = notFetched, spec.From
			}
			continue
		}
		if h.Nested != "" {
			// Inside a tree: what the launch was given, or nothing.
			v, ferr := secret.Env(l.opt.Parent).Fetch(ctx, name)
			switch {
			case ferr == nil:
				if err := got(name, policy.FromEnv, v); err != nil {
					return nil, nil, err
				}
				h.debugf("secret %s: from the launch's environment (nested: the policy's source, %s, is not used)", name, spec.From)
			case errors.Is(ferr, secret.ErrNotFound):
				return nil, nil, &FetchError{Name: name, From: spec.From, Err: ErrNested}
			default:
				return nil, nil, &FetchError{Name: name, From: spec.From, Err: ferr}
			}
			continue
		}
		from := spec.From
		var src secret.Source
		switch spec.From {
		case policy.FromStore:
			if src, err = openStore(); err != nil {
				if errors.Is(err, secret.ErrNotFound) {
					return nil, nil, &FetchError{Name: name, From: spec.From, Err: err}
				}
				return nil, nil, err
			}
		case policy.FromCommand, policy.FromKeychain, policy.FromOp:
			src = &secret.Command{Argv: spec.Command, Timeout: spec.Timeout, Env: h.HelperEnv, Stderr: h.stderr()}
		default:
			src = secret.Env(l.opt.Parent)
		}
		v, ferr := src.Fetch(ctx, name)
		if errors.Is(ferr, secret.ErrNotFound) && spec.FromDefault && h.Store != nil && h.DefaultStore {
			// No source named: the environment first, then the store.
			if src, err = openStore(); err != nil {
				return nil, nil, &FetchError{Name: name, From: policy.FromStore, Err: err}
			}
			from = policy.FromStore
			v, ferr = src.Fetch(ctx, name)
		}
		if errors.Is(ferr, secret.ErrNotFound) && spec.From == policy.FromEnv {
			continue // the engine reports a missing secret by name
		}
		if ferr != nil {
			return nil, nil, &FetchError{Name: name, From: from, Err: ferr}
		}
		if err := got(name, from, v); err != nil {
			return nil, nil, err
		}
		h.debugf("secret %s: fetched from %s, delivered as %s", name, from, spec.Deliver)
	}
	for _, name := range names {
		v, ok := values[name]
		if !ok || l.opt.DryRun || p.SecretSpec(name).Deliver != policy.DeliverFile {
			continue
		}
		if files == nil {
			files = map[string]string{}
		}
		if memfd.Supported {
			f, err := memfd.New(name, v)
			if err != nil {
				return nil, nil, err
			}
			l.fds = append(l.fds, f)
			if h.ExtraFiles {
				files[name] = secret.FDPath(2 + len(l.fds))
				continue
			}
			if err := memfd.Inherit(f); err != nil {
				return nil, nil, err
			}
			files[name] = secret.FDPath(int(f.Fd()))
			continue
		}
		if l.files == nil {
			if l.files, err = secret.NewFiles(h.runtimeDir()); err != nil {
				return nil, nil, err
			}
		}
		path, werr := l.files.Write(name, v)
		if werr != nil {
			return nil, nil, werr
		}
		files[name] = path
	}
	return values, files, nil
}

// maskedValues returns the values to mask in the child's output: every
// sensitive value of the parent environment (by name or by value, the
// first copy of each key) that the child's environment does not hold, and
// every injected secret. It is computed once per plan.
func (l *Plan) maskedValues() []redact.Secret {
	if l.mask == nil {
		l.mask = masked(l.opt.Parent, l.opt.Sensitive, l.Result.Env, l.injected)
	}
	return l.mask
}

func masked(parent []string, sensitive []redact.Secret, env []string, injected map[string]string) []redact.Secret {
	given := make(map[string]bool, len(env))
	for _, kv := range env {
		if _, v, ok := strings.Cut(kv, "="); ok && v != "" {
			given[v] = true
		}
	}
	out := []redact.Secret{}
	seen := map[string]bool{}
	add := func(name, value string) {
		if value != "" && !seen[value] {
			seen[value] = true
			out = append(out, redact.Secret{Name: name, Value: []byte(value)})
		}
	}
	if sensitive == nil {
		keys := map[string]bool{}
		for _, kv := range parent {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" || keys[k] {
				continue
			}
			keys[k] = true
			if detect.Sensitive(k, v) {
				sensitive = append(sensitive, redact.Secret{Name: k, Value: []byte(v)})
			}
		}
	}
	for _, s := range sensitive {
		if !given[string(s.Value)] {
			add(s.Name, string(s.Value))
		}
	}
	names := make([]string, 0, len(injected))
	for n := range injected {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		add(n, injected[n])
	}
	return out
}

// maskedNames splits the names of the masked values into those redaction
// masks and those too short to mask (redact.min_secret_len), each sorted.
func (l *Plan) maskedNames() (masked, tooShort []string) {
	masked, tooShort = []string{}, []string{}
	for _, s := range l.maskedValues() {
		if len(s.Value) < l.opt.Policy.Redact.MinSecretLen {
			tooShort = append(tooShort, s.Name)
		} else {
			masked = append(masked, s.Name)
		}
	}
	sort.Strings(masked)
	sort.Strings(tooShort)
	return masked, tooShort
}

// masking reports whether the launch masks its child's output.
func (l *Plan) masking() bool { return l.opt.Policy.Redact.Enabled || l.opt.ForceMask }
