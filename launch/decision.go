package launch

import (
	"errors"
	"os"
	"slices"
	"strings"

	"github.com/envsieve/envsieve/internal/login"
	"github.com/envsieve/envsieve/internal/memfd"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/seal"
	"github.com/envsieve/envsieve/shim"
)

// Decision is what a launch decided, made once by [Build]: [Plan.Start]
// does what it says, explain prints it, and `envsieve run`, `envsieve sh`,
// the daemon's commands and a library caller read the same record for the
// same request, so they cannot disagree. Only what happens when the
// program starts can change it: the kernel refusing the namespaces the
// seal chose (Start then seals with Landlock, and says so in the audit
// log). Its JSON (names and choices only: no path, argument or value) is
// the "decision:" debug line of every launch.
type Decision struct {
	// Program is the program's path in the child's PATH; "" when it is
	// not found (ProgramErr says why, and Start fails with it).
	Program    string `json:"-"`
	ProgramErr error  `json:"-"`
	// Argv is the command line that runs.
	Argv []string `json:"-"`

	// Seal is the seal asked for: the stronger of the policy's and the
	// options'; off when none.
	Seal policy.SealMode `json:"seal"`
	// SealBy is how this system makes it: namespaces, or Landlock where
	// user namespaces are refused, and only Landlock for a server's
	// command ([Host.Server]); "" when it cannot (SealWhy says why: `on`
	// then runs unsealed with a warning, `required` starts nothing). It
	// is settled only when a seal is asked for, or for a dry run.
	SealBy seal.Mechanism `json:"seal_by,omitempty"`
	// SealWhy says why the seal cannot be made here, or why it is made
	// by Landlock rather than namespaces; "" otherwise.
	SealWhy string `json:"seal_why,omitempty"`
	// Sealed says the tree is sealed: a seal is asked for and SealBy can
	// make it. The audit log's "seal" event records Seal, SealBy (or
	// "none") and, when unsealed, why.
	Sealed bool `json:"sealed"`
	// Isolate says the tree runs in namespaces of its own: --isolate, or
	// the seal made by namespaces.
	Isolate bool `json:"isolate"`

	// Shim says the shim loads into the program; ShimWhy why it does
	// not. ShimServed says the launcher serves the shim's socket all the
	// same (a statically linked program's dynamic children load it).
	Shim       bool   `json:"shim"`
	ShimWhy    string `json:"shim_why,omitempty"`
	ShimServed bool   `json:"shim_served"`
	// Broker says a credential broker may run for the launch: it brokers
	// a secret or the environment's AWS keys, or fakes the sealed tree's
	// credential files.
	Broker bool `json:"broker"`
	// SSHAgent says the child's SSH_AUTH_SOCK is served by envsieve's
	// filtering agent.
	SSHAgent bool `json:"ssh_agent"`
	// Masking says the launch masks its program's output (redact.enabled,
	// or Options.ForceMask); Masked are the names of the values it masks,
	// TooShort those shorter than redact.min_secret_len, each sorted.
	Masking  bool     `json:"masking"`
	Masked   []string `json:"masked"`
	TooShort []string `json:"too_short"`
	// Resident says the launcher stays resident, the program its child:
	// a server's command always; a single launch when it masks output,
	// removes file-delivered secrets after the child, serves the shim,
	// runs a broker or the agent filter, or is sealed by Landlock. false
	// is an exec in place (of the program, or of envsieve-init for an
	// isolated launch). Start keeps the launcher resident all the same
	// when a broker it did not foresee starts (and sets Resident), and
	// goes in place when a broker it foresaw was all that kept the
	// launcher and none starts (the credential files hold no credential;
	// and clears Resident).
	Resident bool `json:"resident"`

	// NoRule says why no rule grants to the program although one names
	// it; "" otherwise.
	NoRule string `json:"no_rule,omitempty"`
	// Sources are the sources that gave (for a dry run, would give) each
	// fetched secret, by name.
	Sources map[string]policy.SecretFrom `json:"sources"`
	// AWSEnv is what the tree gets of the environment's AWS keys
	// (awsEnvPreview); set for a dry run only, nil otherwise.
	AWSEnv *AWSState `json:"-"`
	// AWSWebIdentity is what the tree gets of the web identity the user's
	// environment names (awsWebIdentityPreview); dry run only.
	AWSWebIdentity *AWSState `json:"-"`
}

// Decision returns the record of what the launch decided (see
// [Decision]). The caller must not change it.
func (l *Plan) Decision() *Decision { return &l.d }

// decide makes the plan's decision record, once the environment is built.
func (l *Plan) decide() {
	d, o, h, res := &l.d, l.opt, l.host, l.Result
	d.Program, d.Argv, d.ProgramErr = l.program()
	d.NoRule = l.noRule
	d.Sources = l.sources

	// The seal.
	d.Seal = res.Seal.Stronger(policy.SealOff)
	if o.Seal {
		d.Seal = d.Seal.Stronger(policy.SealOn)
	}
	d.Isolate = o.Isolate && !h.Server
	if d.Seal != policy.SealOff || o.DryRun {
		var by seal.Mechanism
		var err error
		if h.Server {
			by, err = seal.Landlock, seal.LandlockAvailable()
		} else {
			by, err = seal.Choose()
		}
		if err != nil {
			l.sealErr = err
			d.SealWhy = err.Error()
		} else {
			d.SealBy = by
			if !h.Server && by != seal.Namespaces { // Choose took the namespaces where it could
				if nsErr := seal.Available(); nsErr != nil {
					d.SealWhy = nsErr.Error()
				}
			}
		}
	}
	if d.Seal != policy.SealOff && d.SealBy != "" {
		d.Sealed = true
		if d.SealBy == seal.Namespaces {
			l.sealIsolates = !d.Isolate
			d.Isolate = true
		}
	}

	// The shim.
	switch {
	case o.NoShim:
		d.ShimWhy = "--no-shim"
	case d.Program == "":
		d.ShimWhy = "the program is not found"
	default:
		l.shimLib, l.shimStatic, l.shimErr = h.FindShim(d.Program)
		l.shimFound = true
		if err := l.shimErr; err != nil {
			d.ShimWhy = err.Error()
			d.ShimServed = !errors.Is(err, shim.ErrNotFound)
		} else if l.shimStatic {
			d.ShimWhy = "the program is statically linked"
			d.ShimServed = true
		} else {
			d.Shim, d.ShimServed = true, true
		}
	}

	// The broker: what the result brokers, the environment's AWS keys,
	// or the sealed tree's credential files (faked when there are any).
	if !o.NoBroker {
		d.Broker = len(res.Brokered) > 0 || len(l.Env) > 0 && hasAWSKeys(awsEnvSource(l.Env, o.Parent, o.Policy)) ||
			d.Sealed && h.Home != "" && h.Broker != nil && hasLoginFiles(h.Home)
	}
	d.SSHAgent = envValue(l.Env, "SSH_AUTH_SOCK") != ""

	// Masking.
	d.Masking = l.masking()
	d.Masked, d.TooShort = l.maskedNames()
	if !d.Masking {
		d.Masked, d.TooShort = []string{}, []string{}
	}

	// In place or resident: a single launch that needs the launcher for
	// nothing afterwards execs the program in its place, or, isolated,
	// envsieve-init (unshareInit), or, sealed by Landlock, envsieve-init's
	// Landlock init, whose reaper holds the tree (landlockInit); without
	// it a Landlock launch stays resident, as its tree needs a reaper and
	// a launcher to outlive it.
	masks := d.Masking && len(d.Masked) > 0
	files := l.files != nil || o.DryRun && !memfd.Supported && slices.ContainsFunc(res.Injected, func(n string) bool {
		return o.Policy.SecretSpec(n).Deliver == policy.DeliverFile
	})
	inPlace := !h.Server && !masks && !files && !d.ShimServed && !d.SSHAgent
	l.isolated, l.sealed, l.sealBy = d.Isolate, d.Sealed, d.SealBy
	inPlace = l.inPlace(inPlace)
	// A broker that may run keeps the launcher: where nothing else does,
	// Start goes back to in place when none starts (a credential file
	// with no credential in it; brokerOnly).
	l.brokerOnly = inPlace && d.Broker
	d.Resident = !inPlace || d.Broker
	if o.DryRun {
		d.AWSEnv = awsEnvPreview(res.Env, o.Parent, o.Policy, h.Home, h.Broker != nil, o.NoBroker)
		d.AWSWebIdentity = awsWebIdentityPreview(res.Env, o.Parent, d.Sealed, h.Broker != nil && !o.NoBroker)
	}
}

// hasAWSKeys reports whether env holds a non-empty AWS key variable.
func hasAWSKeys(env []string) bool {
	return slices.ContainsFunc(env, func(kv string) bool {
		k, v, _ := strings.Cut(kv, "=")
		return v != "" && slices.Contains(awsEnvVars, k)
	})
}

// inPlace returns whether a launch the rest lets go in place (ok) may:
// unisolated and unsealed, or isolated by envsieve-init in the launcher's
// place (unshareInit, which sets l.unshare), or sealed by Landlock with
// envsieve-init's Landlock init in its place (landlockInit, which sets
// l.landlock).
func (l *Plan) inPlace(ok bool) bool {
	switch {
	case !ok:
		return false
	case !l.isolated && !l.sealed:
		return true
	case l.opt.NoShim && l.isolated:
		l.unshare = l.unshareInit()
		return l.unshare != ""
	case l.opt.NoShim && l.sealed && l.sealBy == seal.Landlock:
		l.landlock = l.landlockInit()
		return l.landlock != ""
	}
	return false
}

// hasLoginFiles reports whether home holds a credential file the seal
// masks and package login may fake (fakeLogins reads them), an agent's own
// login file (agentviews.go), or an AWS config whose profiles may fetch
// keys (fakeAWSConfig): each may start the broker.
func hasLoginFiles(home string) bool {
	rels := append(seal.CredentialFiles(), ".aws/config")
	for _, f := range login.Formats() {
		rels = append(rels, f.Paths...)
	}
	for _, rel := range rels {
		if _, err := os.Stat(home + "/" + rel); err == nil {
			return true
		}
	}
	return false
}
