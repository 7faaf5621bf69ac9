package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/detect"
	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/seal"
	"github.com/envsieve/envsieve/sieve"
)

// explainSchema names the JSON document `explain --json` prints. It changes
// only when a field changes meaning or goes away; docs/explain.md is its
// reference.
const explainSchema = "envsieve.explain/v1"

type explainJSON struct {
	Schema  string    `json:"schema"`
	Policy  string    `json:"policy"`
	Local   string    `json:"local_policy,omitempty"`
	Profile string    `json:"profile"`
	Rule    *ruleJSON `json:"rule"`
	// BrokerIt are the rules that grant the real value of a credential the
	// broker could bind, and what to write instead (policy.BrokerHint).
	BrokerIt []string `json:"broker_it,omitempty"`
	// NoRule says why no rule applies to the program, when it is one the
	// agent's tree could have written (additive to schema v1).
	NoRule    string         `json:"no_rule,omitempty"`
	Mode      policy.Mode    `json:"mode"`
	Command   []string       `json:"command"`
	Path      string         `json:"path,omitempty"`
	Decisions []decisionJSON `json:"decisions"`
	Env       []envJSON      `json:"env"`
	Injected  []string       `json:"injected"`
	Limits    limitsJSON     `json:"limits"`
	Redact    redactJSON     `json:"redact"`
	Shim      shimJSON       `json:"shim"`
	// Seal is the launch's seal (additive to schema v1).
	Seal sealJSON `json:"seal"`
	// Nested says why the launch is inside an envsieve tree, where it
	// only narrows what it was given; absent when it is not (additive to
	// schema v1).
	Nested string `json:"nested,omitempty"`
	// Secrets says, for each credential the child gets (injected or
	// brokered), whether it gets the real value or a fake the broker swaps
	// (additive to schema v1).
	Secrets []secretJSON `json:"secrets"`
	// SSH is what the tree's ssh agent allows, when the child gets
	// SSH_AUTH_SOCK (additive to schema v1).
	SSH *sshJSON `json:"ssh,omitempty"`
	// AWSEnv says what the child gets of the AWS key variables the policy
	// admits: fakes the broker re-signs for its hosts, or why not
	// (additive to schema v1).
	AWSEnv *launch.AWSState `json:"aws_env,omitempty"`
	// AWSWebIdentity says what the child gets of the web identity token
	// file the user's AWS_WEB_IDENTITY_TOKEN_FILE names (EKS's IRSA).
	AWSWebIdentity *launch.AWSState `json:"aws_web_identity,omitempty"`
	// AWSConfig are the profiles of ~/.aws/config that get their keys by
	// means envsieve does not fake (credential_process, IAM Identity
	// Center), and what the tree can do with them (additive to schema v1).
	AWSConfig []launch.AWSState `json:"aws_config,omitempty"`
}

// secretJSON is one credential the child gets: "brokered" (a fake; the
// real value goes only where the binding says) or "real".
type secretJSON struct {
	Name    string   `json:"name"`
	Hand    string   `json:"handed_as"`
	Hosts   []string `json:"hosts,omitempty"`
	BaseURL string   `json:"base_url,omitempty"`
	Binding string   `json:"binding,omitempty"` // "policy" or "catalog"
	// From is the source that gives the value: env, store, command, keychain, op or env-file
	// (additive to schema v1).
	From string `json:"from,omitempty"`
}

// secretsDoc lists the injected and brokered keys of a result.
func secretsDoc(p *policy.Policy, res *sieve.Result, noBroker bool, source func(string) policy.SecretFrom) []secretJSON {
	out := []secretJSON{}
	names := append(slices.Clone(res.Injected), res.Brokered...)
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		sj := secretJSON{Name: n, Hand: "real", From: string(source(n))}
		if slices.Contains(res.Brokered, n) && !noBroker {
			b := p.Binding(n)
			sj.Hand, sj.Hosts, sj.BaseURL, sj.Binding = "brokered", b.Hosts, b.BaseURL, "policy"
			if b.Builtin {
				sj.Binding = "catalog"
			}
		}
		out = append(out, sj)
	}
	return out
}

// sealJSON says which seal run would give the command, and whether this
// system can: off, on or required, and why not when it cannot.
type sealJSON struct {
	Mode      policy.SealMode `json:"mode"`
	Available bool            `json:"available"`
	// Mechanism is how the seal would be made: namespaces, or landlock
	// where user namespaces are refused (Why says why then).
	Mechanism seal.Mechanism `json:"mechanism,omitempty"`
	Why       string         `json:"why,omitempty"`
	// Mask are the policy's own paths masked besides the built-in list.
	Mask []string `json:"mask,omitempty"`
	// Write are the policy's own places under HOME the tree may write
	// besides its work, state dirs, caches and temp directory.
	Write []string `json:"write,omitempty"`
	// Logins says what the tree sees of each credential file envsieve
	// understands: fake, masked or passed, and the hosts bound (additive
	// to schema v1).
	Logins []launch.LoginState `json:"logins,omitempty"`
}

// shimJSON says whether the shim would load into the command and so where
// command rules apply: "exec" (each program the command starts gets the
// rule that matches it, when it execs) or "launch" (one rule for the whole
// command, chosen now: every simple command of a shell string must match it).
type shimJSON struct {
	Loads   bool     `json:"loads"`
	Why     string   `json:"why,omitempty"` // why it would not load
	RulesAt string   `json:"rules_at"`
	Hide    []string `json:"hide"`
}

// shimDoc says what the launch's decision record says of the shim.
func shimDoc(p *policy.Policy, l *launch.Plan) shimJSON {
	d := l.Decision()
	doc := shimJSON{RulesAt: "launch", Hide: []string{}, Loads: d.Shim, Why: d.ShimWhy}
	if l.Result.BlockIteration && len(l.Result.Hide) > 0 {
		doc.Hide = l.Result.Hide
	}
	if d.Shim && len(p.Rules) > 0 {
		doc.RulesAt = "exec"
	}
	return doc
}

// redactJSON says which values the launcher would mask in the child's
// output, by name, and which it cannot because they are too short.
type redactJSON struct {
	Enabled      bool     `json:"enabled"`
	MinSecretLen int      `json:"min_secret_len"`
	Masked       []string `json:"masked"`
	// Hidden is Masked under its old name, kept for readers of schema v1
	// until v2: "hidden" now means only what the shim removes from environ.
	Hidden   []string `json:"hidden"`
	TooShort []string `json:"too_short"`
}

func redactDoc(p *policy.Policy, d *launch.Decision) redactJSON {
	r := redactJSON{Enabled: p.Redact.Enabled, MinSecretLen: p.Redact.MinSecretLen, Masked: []string{}, TooShort: []string{}}
	if r.Enabled {
		r.Masked, r.TooShort = d.Masked, d.TooShort
	}
	r.Hidden = r.Masked
	return r
}

type ruleJSON struct {
	Name string `json:"name"`
	Pos  string `json:"pos"`
	// Children says whether the program's children keep what the rule
	// gives it ("keep": the shim does not load to take it) or lose it.
	Children string `json:"children"`
	// SHA256 is the digest the rule pins the program to (match: sha256):
	// the launch runs the sealed copy it hashed.
	SHA256 string `json:"sha256,omitempty"`
}

type sourceJSON struct {
	Level  string `json:"level"`
	List   string `json:"list"`
	Entry  string `json:"entry"`
	File   string `json:"file,omitempty"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
}

type decisionJSON struct {
	Key string `json:"key"`
	// KeyEscaped says Key is not UTF-8 and holds its bytes escaped
	// (exactBytes); JSON cannot hold them as they are.
	KeyEscaped bool        `json:"key_escaped,omitempty"`
	Kept       bool        `json:"kept"`
	WouldDrop  bool        `json:"would_drop"`
	Reason     string      `json:"reason"`
	Detail     string      `json:"detail,omitempty"`
	Added      bool        `json:"added"`
	Source     *sourceJSON `json:"source"`
}

type envJSON struct {
	Key          string  `json:"key"`
	KeyEscaped   bool    `json:"key_escaped,omitempty"` // see exactBytes
	Value        *string `json:"value"`                 // null when masked
	ValueEscaped bool    `json:"value_escaped,omitempty"`
	Masked       bool    `json:"masked"`
	Bytes        int     `json:"bytes"`
}

// exactBytes returns s as JSON can hold it exactly, and whether it had to
// be escaped: a UTF-8 string as it is; any other Go-quoted, without its
// quotes (\xNN for a byte that is not UTF-8, \\ for a backslash, \n and
// the like for control characters), where encoding/json would replace the
// bytes with U+FFFD. strconv.Unquote("\"" + s + "\"") gives the bytes back.
func exactBytes(s string) (string, bool) {
	if utf8.ValidString(s) {
		return s, false
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1], true
}

type limitsJSON struct {
	MaxKeys       int `json:"max_keys"`
	MaxBytes      int `json:"max_bytes"`
	MaxValueBytes int `json:"max_value_bytes"`
}

// explainOptions are explain's flags.
type explainOptions struct {
	policyFlags
	json bool
}

func newExplainCmd(u *cli.UI) *cobra.Command {
	var o explainOptions
	c := &cobra.Command{
		Use:   "explain [flags] [--json] [-- CMD [ARGS...]]",
		Short: "Show what a command would get, and why, without starting it",
		Long: `explain starts nothing. It prints every key of the current environment with
kept or dropped and the reason (the list, the entry, and the policy file, line
and column behind it), then the child's environment with the values of
sensitive keys masked. --json prints the same as a stable document
(schema envsieve.explain/v1, see docs/explain.md).`,
		Example: `  envsieve explain --profile claude -- claude
  envsieve explain --json -- gh pr list | jq '.decisions[] | select(.kept)'`,
		RunE: func(_ *cobra.Command, argv []string) error {
			return runExplain(u, &o, argv)
		},
	}
	c.Flags().SetInterspersed(false)
	o.register(c.Flags(), flagRequest|flagMode|flagSandbox)
	completeRequestFlags(c)
	c.Flags().BoolVar(&o.json, "json", false, "print a JSON document (schema envsieve.explain/v1)")
	return c
}

// runExplain builds the launch of argv without starting it (no secret with
// a side effect is fetched) and prints why each key is kept or dropped.
func runExplain(u *cli.UI, o *explainOptions, argv []string) error {
	f := &o.policyFlags
	p, err := cli.LoadPolicy(u, f.policy)
	if err != nil {
		return err
	}
	var commands [][]string
	if len(argv) > 0 {
		commands = [][]string{argv}
	}
	l, err := buildWith(u, p, f, commands, nil, dryRun|runsCommand)
	if err != nil {
		return err
	}
	l.Cleanup() // explain starts nothing
	// What explain prints is the launch's decision record: the one run,
	// sh and the daemon start from.
	res, d := l.Result, l.Decision()
	path := d.Program
	if len(argv) > 0 && d.ProgramErr != nil {
		u.Warnf("%v", d.ProgramErr)
	}
	doc := explainDoc(p, res, argv, path)
	doc.NoRule = d.NoRule
	doc.Nested = cli.Nested()
	doc.Redact = redactDoc(p, d)
	doc.Secrets = secretsDoc(p, res, f.noBroker, func(n string) policy.SecretFrom { return d.Sources[n] })
	doc.Shim = shimDoc(p, l)
	if doc.Rule != nil {
		doc.Rule.Children = "lose"
		if !doc.Shim.Loads {
			doc.Rule.Children = "keep"
		}
	}
	doc.Seal.Mode = d.Seal
	doc.Seal.Mask = res.SealMask
	doc.Seal.Write = res.SealWrite
	doc.Seal.Available, doc.Seal.Mechanism, doc.Seal.Why = d.SealBy != "", d.SealBy, d.SealWhy
	doc.SSH = sshDoc(p, res.Env)
	h := host(u, f)
	doc.Seal.Logins = launch.LoginPreview(h.Home, res.Env, doc.Seal.Mode != policy.SealOff && doc.Seal.Available,
		doc.Seal.Mechanism, h.Broker != nil && !f.noBroker, h.Nested != "")
	doc.AWSEnv = d.AWSEnv
	doc.AWSWebIdentity = d.AWSWebIdentity
	doc.AWSConfig = launch.AWSConfigPreview(h.Home, doc.Seal.Mode != policy.SealOff && doc.Seal.Available, h.Broker != nil && !f.noBroker)
	if o.json {
		enc := json.NewEncoder(u.Out)
		enc.SetIndent("", "  ")
		return enc.Encode(doc)
	}
	return printExplain(u.Out, doc)
}

func explainDoc(p *policy.Policy, res *sieve.Result, argv []string, path string) *explainJSON {
	doc := &explainJSON{Schema: explainSchema, Policy: p.File, Local: p.Local, Profile: res.Profile,
		Mode: res.Mode, Command: argv, Path: path, Injected: res.Injected,
		Limits: limitsJSON{res.Limits.MaxKeys, res.Limits.MaxBytes, res.Limits.MaxValueBytes}}
	if doc.Command == nil {
		doc.Command = []string{}
	}
	if doc.Injected == nil {
		doc.Injected = []string{}
	}
	if r := res.Rule; r != nil {
		doc.Rule = &ruleJSON{Name: r.Name, Pos: r.Pos.String(), SHA256: r.SHA256}
	}
	for _, h := range p.BrokerHints() {
		if !slices.Contains(res.Brokered, h.Key) {
			doc.BrokerIt = append(doc.BrokerIt, h.String())
		}
	}
	for _, d := range res.Decisions {
		key, esc := exactBytes(d.Key)
		dj := decisionJSON{Key: key, KeyEscaped: esc, Kept: d.Kept, WouldDrop: d.WouldDrop, Reason: d.Reason.String(), Detail: d.Detail(), Added: d.Added}
		if s := d.Source; s != nil {
			dj.Source = &sourceJSON{Level: s.Level, List: s.List, Entry: s.Entry, File: s.Pos.File, Line: s.Pos.Line, Column: s.Pos.Col}
		}
		doc.Decisions = append(doc.Decisions, dj)
	}
	doc.Decisions = nonNil(doc.Decisions)
	for _, kv := range res.Env {
		key, val, _ := strings.Cut(kv, "=")
		e := envJSON{Bytes: len(val)}
		e.Key, e.KeyEscaped = exactBytes(key)
		if sensitive(key, val) {
			e.Masked = true
		} else {
			v, esc := exactBytes(val)
			e.Value, e.ValueEscaped = &v, esc
		}
		doc.Env = append(doc.Env, e)
	}
	doc.Env = nonNil(doc.Env)
	return doc
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// sensitive reports whether explain must mask a value: a credential-like name
// or value, or a variable that injects code.
func sensitive(key, val string) bool {
	return detect.Sensitive(key, val) || detect.Injection(key, val)
}

func printExplain(w io.Writer, doc *explainJSON) error {
	fmt.Fprintf(w, "policy:  %s", doc.Policy)
	if doc.Local != "" {
		fmt.Fprintf(w, " (narrowed by %s)", doc.Local)
	}
	profile := doc.Profile
	if profile == "" {
		profile = "(none: global level only)"
	}
	rule := "(none)"
	if doc.Rule != nil {
		rule = doc.Rule.Name + " (" + doc.Rule.Pos + ")"
	} else if doc.NoRule != "" {
		rule = "(none: " + doc.NoRule + ")"
	}
	if doc.Nested != "" {
		fmt.Fprintf(w, "\nnested:  yes, %s: this launch only narrows what it was given (secrets only from its own environment: no store, no helper, no install key; the user's policy file is not loaded)", doc.Nested)
	}
	fmt.Fprintf(w, "\nprofile: %s\nrule:    %s\n", profile, rule)
	if r := doc.Rule; r != nil {
		prog := filepath.Base(doc.Path)
		if prog == "." || prog == "" {
			prog = "the program"
		}
		if r.SHA256 != "" {
			fmt.Fprintf(w, "pinned:  sha256 %s: the launch runs the sealed copy it hashed\n", r.SHA256)
		}
		fmt.Fprintf(w, "grants:  to %s, and so to everything %s can be told to run (hooks, aliases, -c options, --receive-pack and the like)", prog, prog)
		if r.Children == "keep" {
			fmt.Fprintf(w, "; its children keep it: the shim does not load\n")
		} else {
			fmt.Fprintf(w, "; the programs it starts lose it\n")
		}
	}
	for _, h := range doc.BrokerIt {
		fmt.Fprintf(w, "hint:    %s\n", h)
	}
	fmt.Fprintf(w, "mode:    %s\n", doc.Mode)
	var also string
	if len(doc.Seal.Mask) > 0 {
		also = " (and " + strings.Join(doc.Seal.Mask, ", ") + ")"
	}
	writes := "; the rest of HOME read-only but for the working directory, state dirs, caches and temp directory"
	if len(doc.Seal.Write) > 0 {
		writes += " (and " + strings.Join(doc.Seal.Write, ", ") + ")"
	}
	switch s := doc.Seal; {
	case s.Mode == policy.SealOff:
	case s.Available && s.Mechanism == seal.Landlock:
		fmt.Fprintf(w, "seal:    %s, by Landlock (%s); credential files%s, envsieve's store and keys masked, the policy read-only; "+
			"nothing new can be made directly in HOME or another directory above a masked file%s\n", s.Mode, s.Why, also, writes)
	case s.Available:
		fmt.Fprintf(w, "seal:    %s, by namespaces; credential files%s, envsieve's store and keys masked, the policy read-only%s\n", s.Mode, also, writes)
	case s.Mode == policy.SealRequired:
		fmt.Fprintf(w, "seal:    required, and not available here (%s): run refuses to start\n", s.Why)
	default:
		fmt.Fprintf(w, "seal:    on, but not available here (%s): the command would run without it\n", s.Why)
	}
	printSSH(w, doc.SSH)
	for _, st := range doc.Seal.Logins {
		fmt.Fprintf(w, "login:   %s %s", st.Path, st.Seen)
		if len(st.Hosts) > 0 {
			fmt.Fprintf(w, ", bound to %s", strings.Join(st.Hosts, ", "))
		}
		if st.Why != "" {
			fmt.Fprintf(w, " (%s)", st.Why)
		}
		fmt.Fprintln(w)
		for _, a := range st.AWS {
			fmt.Fprintf(w, "aws:     %s: profile %s faked, real keys from the %s, re-signed for %s\n", st.Path, strings.TrimPrefix(a.Name, "aws:"), a.From, strings.Join(a.Hosts, ", "))
		}
	}
	if a := doc.AWSEnv; a != nil {
		from := "the environment"
		if a.Grant {
			from = "the environment, for a rule's grant"
		}
		fmt.Fprintf(w, "aws:     %s from %s: %s", strings.Join(a.Vars, ", "), from, a.Seen)
		if len(a.Hosts) > 0 {
			fmt.Fprintf(w, ", re-signed for %s", strings.Join(a.Hosts, ", "))
		}
		if a.Why != "" {
			fmt.Fprintf(w, " (%s)", a.Why)
		}
		fmt.Fprintln(w)
	}
	if a := doc.AWSWebIdentity; a != nil {
		fmt.Fprintf(w, "aws:     web identity %s: %s (%s)\n", a.File, a.Seen, a.Why)
	}
	for _, a := range doc.AWSConfig {
		file := "~/.aws/config"
		if a.File != "" {
			file = a.File // the user's AWS_CONFIG_FILE
		}
		fmt.Fprintf(w, "aws:     %s: profile %s %s (%s)\n", file, strings.TrimPrefix(a.Name, "aws:"), a.Seen, a.Why)
	}
	switch {
	case doc.Shim.RulesAt == "exec":
		fmt.Fprintf(w, "shim:    loads; rules apply at each exec, to the program that matches\n")
	case doc.Shim.Loads:
		fmt.Fprintf(w, "shim:    loads; the policy has no rules\n")
	default:
		fmt.Fprintf(w, "shim:    does not load (%s); rules apply to the whole command\n", doc.Shim.Why)
	}
	if len(doc.Shim.Hide) > 0 {
		fmt.Fprintf(w, "hidden:  %s (from environ, by the shim)\n", strings.Join(doc.Shim.Hide, ", "))
	}
	for _, sj := range doc.Secrets {
		if sj.Hand == "real" {
			fmt.Fprintf(w, "secret:  %s real (the child gets the value itself)%s\n", sj.Name, fromNote(sj.From))
			continue
		}
		where := strings.Join(sj.Hosts, ", ")
		if sj.BaseURL != "" {
			where = strings.TrimPrefix(where+", "+sj.BaseURL+"'s endpoint", ", ")
		}
		fmt.Fprintf(w, "secret:  %s brokered (the child gets a fake; the real value goes only to %s; %s binding)%s\n", sj.Name, where, sj.Binding, fromNote(sj.From))
	}
	if len(doc.Command) > 0 {
		fmt.Fprintf(w, "command: %s", strings.Join(doc.Command, " "))
		if doc.Path != "" {
			fmt.Fprintf(w, " (%s)", doc.Path)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KEY\tDECISION\tREASON")
	for _, d := range doc.Decisions {
		key := d.Key
		if key == "" {
			key = "(entry without '=')"
		}
		verdict := "dropped"
		switch {
		case d.WouldDrop:
			verdict = "kept (audit: enforce drops)"
		case d.Kept && d.Added:
			verdict = "added"
		case d.Kept:
			verdict = "kept"
		}
		reason := d.Reason
		if d.Detail != "" {
			reason += " (" + d.Detail + ")"
		}
		if s := d.Source; s != nil {
			reason += " by " + s.List + " " + fmt.Sprintf("%q", s.Entry) + " of " + s.Level
			if s.Line > 0 {
				reason += fmt.Sprintf(" (%s:%d:%d)", s.File, s.Line, s.Column)
			} else if s.File != "" {
				reason += " (" + s.File + ")"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", key, verdict, reason)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if r := doc.Redact; r.Enabled && len(r.Masked)+len(r.TooShort) > 0 {
		fmt.Fprintf(w, "\nredaction: the values of %s are masked in the output", strings.Join(r.Masked, " "))
		if len(r.TooShort) > 0 {
			fmt.Fprintf(w, "; not masked, shorter than %d bytes: %s", r.MinSecretLen, strings.Join(r.TooShort, " "))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "\nchild environment (%d variables):\n", len(doc.Env))
	for _, e := range doc.Env {
		if e.Masked {
			fmt.Fprintf(w, "  %s=<sensitive, %d bytes>\n", e.Key, e.Bytes)
		} else {
			fmt.Fprintf(w, "  %s=%s\n", e.Key, *e.Value)
		}
	}
	return nil
}

// fromNote says which source gives a secret, "" when none is known.
func fromNote(from string) string {
	if from == "" {
		return ""
	}
	return ", from " + from
}
