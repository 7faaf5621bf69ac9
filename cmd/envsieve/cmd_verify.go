package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/envknob"
	"github.com/envsieve/envsieve/internal/nest"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/profiles"
	"github.com/envsieve/envsieve/seal"
	"github.com/envsieve/envsieve/secret"
)

// canaryNames are the names verify plants: credentials by name, and one
// innocent name that holds a token-shaped value.
var canaryNames = []string{"AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "DATABASE_URL", "STRIPE_SECRET_KEY", "ENVSIEVE_VERIFY_NOTE"}

func newCanaries() ([]string, error) {
	out := make([]string, 0, len(canaryNames))
	for _, n := range canaryNames {
		b := make([]byte, 18)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		v := hex.EncodeToString(b)
		switch n {
		case "ENVSIEVE_VERIFY_NOTE", "GITHUB_TOKEN":
			v = "ghp_" + strings.ToUpper(v[:4]) + v[4:]
		case "DATABASE_URL":
			v = "postgres://app:" + v + "@db.internal:5432/app"
		}
		out = append(out, n+"="+v)
	}
	return out, nil
}

// storedName is the canary verify puts in the store of its stand-in HOME.
const storedName = "ENVSIEVE_VERIFY_STORED"

// credentialDirs are the entries of the seal's list that are directories:
// verify plants its canary in a file inside them.
var credentialDirs = map[string]bool{
	".aws/sso/cache": true, ".config/gcloud": true, ".azure": true, ".gnupg": true, ".password-store": true,
}

// loginCanaryHost is the host a canary login of verify's names: under
// .invalid, which no resolver answers.
func loginCanaryHost(what string) string { return what + ".envsieve-verify.invalid" }

// awsCanaryHost is the AWS endpoint the probe sends a request signed
// with the canary profile's fake to: an AWS host the broker re-signs
// for, served by verify's stand-in through the stand-in user's proxy.
const awsCanaryHost = "sts.us-east-1.amazonaws.com"

// loginCanaries are the credential files verify plants as logins of the
// stand-in user's, in the formats package login fakes (git over https,
// gh, npm, an AWS profile): each returns the file and the real value the
// tree must never see (the probe's "login files" channel).
var loginCanaries = map[string]func() (file, real string, err error){
	".git-credentials": func() (string, string, error) {
		pw, err := randomHex("envsieve-verify-")
		return "https://verify:" + pw + "@" + loginCanaryHost("git") + "\n", pw, err
	},
	".config/gh/hosts.yml": func() (string, string, error) {
		tok, err := randomHex("ghp_")
		return loginCanaryHost("github") + ":\n    oauth_token: " + tok + "\n    user: verify\n    git_protocol: https\n", tok, err
	},
	".npmrc": func() (string, string, error) {
		tok, err := randomHex("npm_")
		return "//" + loginCanaryHost("registry") + "/:_authToken=" + tok + "\n", tok, err
	},
	".aws/credentials": func() (string, string, error) {
		b := make([]byte, 38)
		if _, err := rand.Read(b); err != nil {
			return "", "", err
		}
		id := "AKIA" + strings.ToUpper(hex.EncodeToString(b[:8]))
		secret := hex.EncodeToString(b[8:])[:40]
		return "[default]\naws_access_key_id = " + id + "\naws_secret_access_key = " + secret + "\n", secret, nil
	},
}

// verifyOptions are verify's flags: what it passes to envsieve run.
type verifyOptions struct {
	policy, profile     string
	isolate, seal, json bool
	home                bool // verify --home: list what the seal leaves readable (verify_home.go)
}

func newVerifyCmd(u *cli.UI) *cobra.Command {
	var o verifyOptions
	c := &cobra.Command{
		Use:   "verify [--profile P] [--isolate|--seal] [-- CMD [ARGS...]]",
		Short: "Plant canary secrets, run a command under envsieve, and report every leak",
		Long: `verify proves a setup. It makes a stand-in for your machine: a HOME of its own
holding a canary in every credential file the seal knows (~/.aws/credentials,
~/.config/gh/hosts.yml, SSH keys...), an envsieve store holding a canary, the
store's key and the install key, and your policy in its config directory. In
that HOME a shell holding canary secrets in its environment, as an agent's
does, runs 'envsieve run' with your flags, which runs CMD (default: a built-in
probe). Your own files are neither read nor changed.

The probe acts as a hostile command of the agent would. It reads environ,
getenv, /proc/self/environ, /proc/$PPID/environ and every readable
/proc/*/environ; writes to envsieve's shim socket (a version 1 exec request,
and a start request for a program of its own); runs copies of itself, and
links to itself, named after the programs your rules grant to; reads each
credential file; reads the canary logins (~/.git-credentials, gh's
hosts.yml, ~/.npmrc, ~/.aws/credentials, each in its format) at their
paths, where NPM_CONFIG_USERCONFIG, GH_CONFIG_DIR and
AWS_SHARED_CREDENTIALS_FILE name them, and through 'git credential fill': a
real value is a leak, a fake is listed on the 'logins:' line (a sealed
launch with a broker shows the tree fakes), and runs 'git ls-remote'
against the canary git host and, with curl, an AWS request signed with the
fake profile, which a stand-in of verify's serves (through the stand-in
user's HTTPS_PROXY, its CA in GIT_SSL_CAINFO): a second 'logins:' line says
whether the real password came, and the request was re-signed with the real
keys, through the broker; opens the store with its key; asks an envsieve inside the
tree for each canary; tries to change the policy file and its directory; and
runs, as a program each of your rules matches (a shell for a catch-all, cat,
env, git through an alias, python3, node), a read of every credential file
and a write of the policy: a program a rule matches must be in the same seal.
With a stand-in ssh agent (one canary key) as its SSH_AUTH_SOCK, it takes
that socket, signs data that is no login to a bound host, adds a key and
removes every key: the tree's agent is envsieve's filter (docs/ssh.md).
verify reports what leaked on each channel: exit 0 only when nothing did.
When a launch that was not sealed leaks on a channel the seal closes (the
ancestors' /proc environ, credential files, the store, the policy, a rule's
program), verify says so and how to turn the seal on (JSON: seal_hint).

With a CMD of your own, a canary counts as leaked when its value appears in
the command's output (which passes through envsieve's redaction, as an agent
would read it).

With --home, verify looks at your own HOME instead: it lists the dotfiles and
dot-directories' files whose content looks like a credential (by path and
kind, never the value) that the seal of a launch with your policy and
profile would leave readable, and exits 1 when there is one.`,
		RunE: func(_ *cobra.Command, argv []string) error {
			if o.home {
				if len(argv) > 0 || o.isolate || o.seal {
					return cli.UsageError{Err: errors.New("verify --home takes no command, --isolate or --seal")}
				}
				return runVerifyHome(u, &o)
			}
			return runVerify(u, &o, argv)
		},
	}
	c.Flags().SetInterspersed(false)
	c.Flags().StringVar(&o.policy, "policy", "", "policy `file` to verify (default: the one envsieve run would load)")
	c.Flags().StringVar(&o.profile, "profile", "", "profile `name` for envsieve run")
	c.Flags().BoolVar(&o.isolate, "isolate", false, "run with --isolate")
	c.Flags().BoolVar(&o.seal, "seal", false, "run with --seal")
	c.Flags().BoolVar(&o.json, "json", false, "print JSON")
	c.Flags().BoolVar(&o.home, "home", false, "list the credential files of your HOME the seal would leave readable")
	completeRequestFlags(c)
	return c
}

// runVerify makes the stand-in world, runs argv (or the built-in probe)
// under envsieve run in it, and reports every leak; exit 1 when anything
// leaked.
func runVerify(u *cli.UI, o *verifyOptions, argv []string) error {
	src, name, err := verifyPolicy(u, o.policy)
	if err != nil {
		return err
	}
	p, err := policy.Parse(name, src)
	if err != nil {
		return err
	}
	canaries, err := newCanaries()
	if err != nil {
		return err
	}
	w, err := newWorld(src, p, canaries)
	if err != nil {
		return fmt.Errorf("verify: make the stand-in HOME: %w", err)
	}
	defer os.RemoveAll(w.dir)
	defer w.stopAgent()
	defer w.finishStandIn()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// verify tests a launch as the user would make it, not one nested in
	// a tree: the launch must not take verify for its launcher.
	if err := nest.Disclaim("envsieve-verify"); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	run := []string{self, "run"}
	if o.profile != "" {
		run = append(run, "--profile", o.profile)
	}
	if o.isolate {
		run = append(run, "--isolate")
	}
	if o.seal {
		run = append(run, "--seal")
	}
	run = append(run, "--")
	custom := len(argv) > 0
	if custom {
		run = append(run, argv...)
	} else {
		run = append(run, self, probeArg)
	}
	// The shell stays the parent of envsieve, holding the canaries in
	// its environment as an agent would.
	sh := exec.Command("/bin/sh", append([]string{"-c", `"$@"; exit $?`, "agent"}, run...)...)
	sh.Env = w.env
	sh.Dir, _ = os.Getwd()
	sh.Stderr = u.Err
	if !custom {
		in, err := json.Marshal(w.in)
		if err != nil {
			return err
		}
		sh.Stdin = bytes.NewReader(in)
	}
	out, err := sh.Output()
	if err != nil && !custom {
		return fmt.Errorf("verify: the probe failed: %w", err)
	}
	found := map[string][]string{}
	channels := probeChannels
	if custom {
		channels = []string{"output"}
		for name, value := range w.in.Canaries {
			if bytes.Contains(out, []byte(value)) {
				found["output"] = append(found["output"], name)
			}
		}
	} else if err := json.Unmarshal(out, &found); err != nil {
		return fmt.Errorf("verify: read the probe's report: %w", err)
	}
	leaks := 0
	for _, ch := range channels {
		leaks += len(found[ch])
	}
	work := loginsWork(w.finishStandIn(), found[loginTries], w.standInWhy)
	// Whether the launch asked for the seal: --seal, or a profile that
	// turns it on (--isolate alone closes only the /proc channels).
	sealed := o.seal
	if eff, err := p.Effective(profileOf(o)); err == nil && eff.Seal != policy.SealOff && eff.Seal != "" {
		sealed = true
	}
	if o.json {
		enc := json.NewEncoder(u.Out)
		enc.SetIndent("", "  ")
		leaksOnly := map[string][]string{}
		for _, ch := range channels {
			if len(found[ch]) > 0 {
				leaksOnly[ch] = found[ch]
			}
		}
		doc := map[string]any{"canaries": canaryNames, "stored": storedName, "channels": channels, "leaks": leaksOnly, "leaked": leaks > 0}
		if !custom {
			doc["login_fakes"] = append([]string{}, found[loginViews]...)
			doc["logins"] = work
		}
		if h := sealHint(channels, found, sealed, o); h != "" {
			doc["seal_hint"] = h
		}
		if err := enc.Encode(doc); err != nil {
			return err
		}
	} else {
		printMatrix(u, channels, found)
		if !custom {
			fmt.Fprintln(u.Out, loginLine(found[loginViews]))
			fmt.Fprintln(u.Out, work)
		}
		if h := sealHint(channels, found, sealed, o); h != "" {
			fmt.Fprintln(u.Out, h)
		}
	}
	if leaks > 0 {
		return cli.ExitStatus(1)
	}
	return nil
}

// verifyPolicy returns the text of the policy envsieve run would load
// (cli.PolicyPath), and its name.
func verifyPolicy(u *cli.UI, flagPath string) ([]byte, string, error) {
	path, _, err := cli.PolicyPath(u, flagPath)
	if err != nil {
		return nil, "", err
	}
	if path == "" {
		return profiles.Default, "embedded:default.yaml", nil
	}
	src, err := policy.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("load policy %s: %w", path, err)
	}
	return src, path, nil
}

// world is verify's stand-in for the user's machine.
type world struct {
	dir string   // everything, removed at the end
	env []string // the stand-in agent's environment
	in  probeInput
	// stopAgent stops the stand-in user's ssh agent.
	stopAgent func()
	// standIn serves the canary logins' hosts (nil when it cannot run:
	// standInWhy says why).
	standIn    *standIn
	standInWhy error
}

// newWorld makes a HOME with a canary in every credential file of the
// seal's list, a store holding a canary, the store's key and the install
// key, and the policy src in its config directory; and the environment of
// an agent whose HOME it is, holding the canaries. It lives in the user's
// ~/.cache (else the temporary directory), where the seal of the launch
// under test looks as it would at home.
func newWorld(src []byte, p *policy.Policy, canaries []string) (*world, error) {
	parent := os.TempDir()
	if h := envknob.Home(); h != "" && isDir(h) {
		parent = filepath.Join(h, ".cache")
		if err := os.MkdirAll(parent, 0o700); err != nil {
			return nil, err
		}
	}
	dir, err := os.MkdirTemp(parent, "envsieve-verify-")
	if err != nil {
		return nil, err
	}
	w := &world{dir: dir}
	if err := w.fill(src, p, canaries); err != nil {
		w.finishStandIn()
		os.RemoveAll(dir)
		return nil, err
	}
	return w, nil
}

func (w *world) fill(src []byte, p *policy.Policy, canaries []string) error {
	home := filepath.Join(w.dir, "home")
	configDir := filepath.Join(home, ".config", "envsieve")
	dataDir := filepath.Join(home, ".local", "share", "envsieve")
	w.in = probeInput{
		Canaries:  map[string]string{},
		Policy:    filepath.Join(configDir, "policy.yaml"),
		ConfigDir: configDir,
		Work:      filepath.Join(w.dir, "work"),
		Store:     filepath.Join(configDir, "secrets.age"),
		StoreKey:  filepath.Join(dataDir, "store.key"),
		Stored:    storedName,
		Programs:  rulePrograms(p),
		Rules:     ruleCommands(p),
	}
	for _, d := range []string{home, w.in.Work, configDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
	}
	if err := os.WriteFile(w.in.Policy, src, 0o600); err != nil {
		return err
	}
	var gitPassword, awsKeyID, awsSecret string
	for _, f := range seal.CredentialFiles() {
		path := filepath.Join(home, f)
		if credentialDirs[f] {
			path = filepath.Join(path, "verify-canary")
		}
		value, err := randomHex("envsieve-verify-")
		if err != nil {
			return err
		}
		body, channel := value+"\n", chFiles
		if lc, ok := loginCanaries[f]; ok {
			// A login of the stand-in user's, in the file's own format:
			// a sealed launch shows the tree a fake of it.
			var real string
			if body, real, err = lc(); err != nil {
				return err
			}
			value, channel = real, chLogins
			switch f {
			case ".git-credentials":
				gitPassword = real
			case ".aws/credentials":
				awsSecret = real
				for _, l := range strings.Split(body, "\n") {
					if v, ok := strings.CutPrefix(l, "aws_access_key_id = "); ok {
						awsKeyID = v
					}
				}
			}
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			return err
		}
		w.in.Files = append(w.in.Files, probeFile{Channel: channel, Label: "~/" + f, Path: path, Value: []byte(value)})
	}
	w.in.GitURL = "https://" + loginCanaryHost("git")
	// The stand-in for the canary git host, which checks that the tree's
	// fake reached it as the real password (through the broker).
	w.in.AWSURL = "https://" + awsCanaryHost + "/?Action=GetCallerIdentity&Version=2011-06-15"
	w.standIn, w.standInWhy = startStandIn(w.dir, []standInLogin{
		{Host: loginCanaryHost("git"), User: "verify", Password: gitPassword},
		{Host: awsCanaryHost, Password: awsSecret, AWSKeyID: awsKeyID},
	})
	stored, err := randomHex("stored-")
	if err != nil {
		return err
	}
	w.in.Canaries[storedName] = stored
	store := &secret.Store{Path: w.in.Store, KeyPath: w.in.StoreKey}
	if err := store.Set(storedName, stored); err != nil {
		return err
	}
	if _, err := secret.InstallKey(filepath.Join(dataDir, "redact.key")); err != nil {
		return err
	}
	for _, key := range []string{"store.key", "redact.key"} {
		b, err := os.ReadFile(filepath.Join(dataDir, key))
		if err != nil {
			return err
		}
		w.in.Files = append(w.in.Files, probeFile{Channel: chStore, Label: "~/.local/share/envsieve/" + key,
			Path: filepath.Join(dataDir, key), Value: bytes.TrimSpace(b)})
	}
	for _, kv := range os.Environ() {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "ENVSIEVE_POLICY", "SSH_AUTH_SOCK":
		case "HTTPS_PROXY", "https_proxy", "GIT_SSL_CAINFO":
			if w.standIn == nil {
				w.env = append(w.env, kv)
			}
		default:
			w.env = append(w.env, kv)
		}
	}
	w.env = append(w.env, "HOME="+home)
	if w.standIn != nil {
		// The stand-in user's proxy and company CA: the broker goes
		// through the one and trusts the other upstream.
		w.env = append(w.env, "HTTPS_PROXY="+w.standIn.proxy, "GIT_SSL_CAINFO="+w.standIn.caFile)
	}
	if w.in.SSHAgent, w.stopAgent, err = startCanaryAgent(w.dir); err != nil {
		return err
	}
	w.env = append(w.env, "SSH_AUTH_SOCK="+w.in.SSHAgent)
	for _, c := range canaries {
		name, value, _ := strings.Cut(c, "=")
		w.in.Canaries[name] = value
		w.env = append(w.env, c)
	}
	return nil
}

// rulePrograms are the program names p's rules grant to, and gh, so that
// the channels that name a program are tried even when no rule does.
func rulePrograms(p *policy.Policy) []string {
	names := []string{"gh"}
	for _, r := range p.Rules {
		name := filepath.Base(r.Path)
		if r.Path == "" {
			lit, ok := r.Command.Literal()
			if !ok {
				continue
			}
			name = filepath.Base(lit)
		}
		if name != "" && name != "." && name != "/" && !contains(names, name) {
			names = append(names, name)
		}
	}
	return names
}

// ruleCommands are the command globs of p's rules (by name; a rule that
// names a path names one file the probe cannot be).
func ruleCommands(p *policy.Policy) []string {
	var globs []string
	for _, r := range p.Rules {
		if r.Command != nil && !r.ByPath {
			globs = append(globs, r.Command.String())
		}
	}
	return globs
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

func randomHex(prefix string) (string, error) {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return prefix + hex.EncodeToString(b), nil
}

// printMatrix prints one row per channel: what leaked through it.
func printMatrix(u *cli.UI, channels []string, found map[string][]string) {
	tw := tabwriter.NewWriter(u.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHANNEL\tLEAKED")
	leaks := 0
	for _, ch := range channels {
		names := found[ch]
		leaks += len(names)
		cell := "-"
		if len(names) > 0 {
			shown := names
			if len(shown) > 4 {
				shown = shown[:4]
			}
			cell = strings.Join(shown, ", ")
			if len(names) > len(shown) {
				cell += fmt.Sprintf(" and %d more", len(names)-len(shown))
			}
		}
		fmt.Fprintf(tw, "%s\t%s\n", ch, cell)
	}
	tw.Flush()
	if leaks == 0 {
		fmt.Fprintln(u.Out, "\nno canary leaked")
	} else {
		fmt.Fprintf(u.Out, "\n%d leaks\n", leaks)
	}
}

// sealClosed are the probe's channels the seal closes: with --isolate the
// ancestors' /proc/PID/environ, with --seal also the credential files,
// the store and its keys, the policy file and what a rule's program can
// reach.
var sealClosed = []string{"/proc/PPID/environ", "/proc/*/environ", chFiles, chLogins, chStore, chPolicy, chRules}

// profileOf is the profile verify's launch asks for: --profile, else
// ENVSIEVE_PROFILE as run reads it.
func profileOf(o *verifyOptions) string {
	if o.profile != "" {
		return o.profile
	}
	return envknob.Profile()
}

// sealHint returns the line that says which leaks the seal would close and
// how to turn it on, or "" when none leaked on such a channel or the
// launch was sealed already (then the seal did not close them: the leaks
// are the report).
func sealHint(channels []string, found map[string][]string, sealed bool, o *verifyOptions) string {
	if sealed {
		return ""
	}
	var closable []string
	n := 0
	for _, ch := range channels {
		if len(found[ch]) > 0 && slices.Contains(sealClosed, ch) {
			closable = append(closable, ch)
			n += len(found[ch])
		}
	}
	if n == 0 {
		return ""
	}
	again := "envsieve verify --seal"
	if o.profile != "" {
		again = "envsieve verify --profile " + o.profile + " --seal"
	}
	return fmt.Sprintf("%d of these leaks (%s) are what the seal closes, and this launch was not sealed: run with --seal, or add 'seal: on' to the profile (the built-in agent profiles have it); check with '%s'",
		n, strings.Join(closable, ", "), again)
}

// loginLine says where the probe found fakes of the canary logins.
func loginLine(views []string) string {
	if len(views) == 0 {
		return "logins: the tree saw no fake of a login (the launch was not sealed, or no broker could run: the files stay masked)"
	}
	return "logins: the tree saw fakes at " + strings.Join(views, ", ")
}

// finishStandIn stops the logins' stand-in, and returns what it saw.
func (w *world) finishStandIn() []standInSeen {
	if w.standIn == nil {
		return nil
	}
	s := w.standIn
	w.standIn = nil
	return s.finish()
}
