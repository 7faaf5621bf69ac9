package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/envsieve/envsieve/internal/pattern"
	"github.com/envsieve/envsieve/internal/shimwire"
	"github.com/envsieve/envsieve/secret"
)

// The probe of `envsieve verify` runs inside the tree as the agent's
// commands would, as hostile as they may be: it looks for every canary on
// every channel it knows and prints one JSON object, channel -> what leaked.
// Everything it is told (the canary values among it) comes on stdin, never
// in argv.
const (
	probeArg    = "__envsieve-probe"
	probeEnvArg = "__envsieve-probe-env" // prints its own environ, masked (see probeEnvMain)
)

// The channels, in report order. The first five read environments; the rest
// are the ways around them that a sealed tree closes.
const (
	chShim    = "shim socket"
	chRenamed = "renamed program"
	chFiles   = "credential files"
	chStore   = "store"
	chNested  = "nested envsieve"
	chPolicy  = "policy file"
	chRules   = "rule programs"
)

var probeChannels = []string{
	"environ", "getenv", "/proc/self/environ", "/proc/PPID/environ", "/proc/*/environ",
	chShim, chRenamed, chFiles, chLogins, chStore, chNested, chPolicy, chRules, chSSH,
}

// probeInput is what verify tells the probe.
type probeInput struct {
	// Canaries are the secrets planted in the stand-in agent's environment
	// and in the store: name -> value.
	Canaries map[string]string `json:"canaries"`
	// Files are planted files whose bytes must not be readable, each
	// reported under Channel by Label.
	Files []probeFile `json:"files"`
	// Store is the planted store: its file, its key, and the name of the
	// canary stored in it.
	Store, StoreKey, Stored string
	// Policy is the user's policy file, ConfigDir the directory holding it.
	Policy, ConfigDir string
	// Programs are the names the policy's rules grant to.
	Programs []string
	// Rules are the command globs of the policy's rules, for the probe to
	// run, as each, the programs they match that can read a file.
	Rules []string
	// Work is a directory the probe may write, outside every sealed path.
	Work string
	// SSHAgent is the socket of the stand-in user's ssh agent.
	SSHAgent string `json:"ssh_agent,omitempty"`
	// GitURL is the URL the canary ~/.git-credentials holds a login for.
	GitURL string `json:"git_url,omitempty"`
	// AWSURL is the AWS request the probe signs with the canary
	// profile's fake keys.
	AWSURL string `json:"aws_url,omitempty"`
}

type probeFile struct {
	Channel, Label, Path string
	Value                []byte
}

// probe is one run of the probe: what it was told, and what it found.
type probe struct {
	in    probeInput
	found map[string][]string
}

func probeMain() int {
	var p probe
	if err := json.NewDecoder(os.Stdin).Decode(&p.in); err != nil {
		fmt.Fprintf(os.Stderr, "envsieve probe: read the canaries: %v\n", err)
		return 1
	}
	p.found = map[string][]string{}
	p.environments()
	p.shimSocket()
	p.renamed()
	p.files()
	p.logins()
	p.tryLogins()
	p.tryAWS()
	p.store()
	p.nested()
	p.policy()
	p.rules()
	p.sshAgent()
	for _, names := range p.found {
		sort.Strings(names)
	}
	if err := json.NewEncoder(os.Stdout).Encode(p.found); err != nil {
		return 1
	}
	return 0
}

// leak records name under channel once.
func (p *probe) leak(channel, name string) {
	if !contains(p.found[channel], name) {
		p.found[channel] = append(p.found[channel], name)
	}
}

// check records every canary whose value text holds.
func (p *probe) check(channel string, text []byte) {
	for name, value := range p.in.Canaries {
		if value != "" && bytes.Contains(text, []byte(value)) {
			p.leak(channel, name)
		}
	}
}

// treeVar returns a variable of the tree's environment, read as a hostile
// command in the tree reads it. The probe plays the agent's tree inside a
// verify launch: these are the tree's values (SSH_AUTH_SOCK, the tools'
// file variables), never a setting of envsieve's own (docs/design.md
// section 8 lists those).
func treeVar(name string) string { return os.Getenv(name) }

func (p *probe) environments() {
	p.check("environ", []byte(strings.Join(os.Environ(), "\x00")))
	for name := range p.in.Canaries {
		if v, ok := os.LookupEnv(name); ok {
			p.check("getenv", []byte(v))
		}
	}
	if b, err := os.ReadFile("/proc/self/environ"); err == nil {
		p.check("/proc/self/environ", b)
	}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(os.Getppid()) + "/environ"); err == nil {
		p.check("/proc/PPID/environ", b)
	}
	self := strconv.Itoa(os.Getpid())
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		if filepath.Base(d) == self {
			continue
		}
		if b, err := os.ReadFile(d + "/environ"); err == nil {
			p.check("/proc/*/environ", b)
		}
	}
}

// shimSocket writes to the launcher's socket what a hostile process would:
// the exec request of wire version 1 (answered with the granted values,
// once), and a start request for a program of its own that it named after
// a rule's program (see renamed). Whatever comes back, on the socket or
// from the program, is searched for canaries.
func (p *probe) shimSocket() {
	sock := os.Getenv(shimwire.EnvSock)
	if sock == "" {
		return
	}
	for _, prog := range p.in.Programs {
		for _, path := range []string{prog, "/usr/bin/" + prog, "/usr/local/bin/" + prog} {
			req := append([]byte{1, 'X'}, strconv.Itoa(os.Getpid())+"\x00"+path+"\x00"+prog+"\x00"...)
			p.check(chShim, socketAnswer(sock, req))
		}
		if copied, err := p.copyAs("socket", prog); err == nil {
			p.check(chShim, startThrough(sock, copied, []string{prog, probeEnvArg}))
		}
	}
}

// socketAnswer sends one packet and returns what the launcher answers
// within a second.
func socketAnswer(sock string, packet []byte) []byte {
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		return nil
	}
	defer c.Close()
	if _, err := c.Write(packet); err != nil {
		return nil
	}
	c.CloseWrite() // the launcher reads the end, answers if it will, and closes
	c.SetReadDeadline(time.Now().Add(time.Second))
	var out []byte
	buf := make([]byte, shimwire.MaxMsg)
	for {
		n, err := c.Read(buf)
		if err != nil || n == 0 {
			return out
		}
		out = append(out, buf[:n]...)
	}
}

// copyAs puts a copy of this program at Work/<kind>/<name>: a program the
// tree wrote, in a place the tree can write.
func (p *probe) copyAs(kind, name string) (string, error) {
	if p.in.Work == "" || strings.ContainsRune(name, '/') {
		return "", errors.New("no place for a copy")
	}
	self, err := os.Executable()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(p.in.Work, kind)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	dst := filepath.Join(dir, name)
	if _, err := os.Stat(dst); err == nil {
		return dst, nil
	}
	src, err := os.Open(self)
	if err != nil {
		return "", err
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		return "", err
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		return "", err
	}
	return dst, out.Close()
}

// renamed runs programs the tree made and named after a rule's program (a
// copy, and a symbolic link to this program) the way an agent's command
// would, through a shell, whose shim asks the launcher for grants.
func (p *probe) renamed() {
	self, err := os.Executable()
	if err != nil {
		return
	}
	for _, prog := range p.in.Programs {
		var paths []string
		if copied, err := p.copyAs("copy", prog); err == nil {
			paths = append(paths, copied)
		}
		dir := filepath.Join(p.in.Work, "link")
		if os.MkdirAll(dir, 0o700) == nil {
			link := filepath.Join(dir, prog)
			if os.Symlink(self, link) == nil || fileExists(link) {
				paths = append(paths, link)
			}
		}
		for _, path := range paths {
			out := probeRun(exec.Command("/bin/sh", "-c", `exec "$0" `+probeEnvArg, path))
			p.check(chRenamed, unmask(out))
		}
	}
}

// files reads each planted file.
func (p *probe) files() {
	for _, f := range p.in.Files {
		b, err := os.ReadFile(f.Path)
		if err == nil && len(f.Value) > 0 && bytes.Contains(b, f.Value) {
			p.leak(f.Channel, f.Label)
		}
	}
}

// store opens the planted store with its key, as any program of the user
// could where both are readable.
func (p *probe) store() {
	if p.in.Store == "" {
		return
	}
	s := &secret.Store{Path: p.in.Store, KeyPath: p.in.StoreKey}
	if v, err := s.Fetch(context.Background(), p.in.Stored); err == nil && v == p.in.Canaries[p.in.Stored] {
		p.leak(chStore, p.in.Stored)
	}
}

// nested asks an envsieve inside the tree for each canary, under a policy
// the probe writes itself, naming the store as the stored canary's source.
func (p *probe) nested() {
	self, err := os.Executable()
	if err != nil || p.in.Work == "" {
		return
	}
	pol := filepath.Join(p.in.Work, "nested.yaml")
	text := "version: 1\n"
	if p.in.Stored != "" {
		text += "secrets:\n  " + p.in.Stored + ": {from: store}\n"
	}
	if err := os.WriteFile(pol, []byte(text), 0o600); err != nil {
		return
	}
	for name := range p.in.Canaries {
		out := probeRun(exec.Command(self, "run", "--no-shim", "--policy", pol, "--secret", name, "--", self, probeEnvArg))
		p.check(chNested, unmask(out))
	}
}

// policy tries to change the policy every later launch loads: open the
// policy file for writing (nothing is written), and make a file beside it.
func (p *probe) policy() {
	if p.in.Policy != "" {
		if f, err := os.OpenFile(p.in.Policy, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			f.Close()
			p.leak(chPolicy, filepath.Base(p.in.Policy))
		}
	}
	if p.in.ConfigDir != "" {
		b := make([]byte, 8)
		rand.Read(b)
		made := filepath.Join(p.in.ConfigDir, ".verify-"+hex.EncodeToString(b))
		if f, err := os.OpenFile(made, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
			f.Close()
			os.Remove(made)
			p.leak(chPolicy, "a new file in "+filepath.Base(p.in.ConfigDir))
		}
	}
}

// ruleProbes are the programs the probe runs as a rule's program: each
// reads the planted files (and a shell tries the policy) as a hostile
// command could through that program (a shell string, an alias of git's,
// an interpreter's one-liner).
var ruleProbes = []struct {
	name string
	argv func(files []string, policy string) []string
}{
	{"sh", func(f []string, pol string) []string {
		return append([]string{"sh", "-c", `p=$1; shift; cat "$@" 2>/dev/null; : >> "$p" 2>/dev/null && echo ` + rulePolicyMark, "sh", pol}, f...)
	}},
	{"bash", func(f []string, pol string) []string {
		return append([]string{"bash", "-c", `p=$1; shift; cat "$@" 2>/dev/null; : >> "$p" 2>/dev/null && echo ` + rulePolicyMark, "bash", pol}, f...)
	}},
	{"cat", func(f []string, _ string) []string { return append([]string{"cat"}, f...) }},
	{"env", func(f []string, _ string) []string { return append([]string{"env", "cat"}, f...) }},
	{"git", func(f []string, _ string) []string {
		return []string{"git", "-c", "alias.envsieve-verify=!cat " + shellQuote(f) + " 2>/dev/null", "envsieve-verify"}
	}},
	{"python3", func(f []string, _ string) []string {
		return append([]string{"python3", "-c", "import sys\nfor f in sys.argv[1:]:\n  try: print(open(f).read())\n  except Exception: pass"}, f...)
	}},
	{"node", func(f []string, _ string) []string {
		return append([]string{"node", "-e", "for (const f of process.argv.slice(1)) { try { console.log(require('fs').readFileSync(f, 'utf8')) } catch (e) {} }"}, f...)
	}},
}

// rulePolicyMark is what a rule's shell prints when it could open the
// policy for writing.
const rulePolicyMark = "ENVSIEVE-VERIFY-POLICY-WRITABLE"

// rules runs, for each program of ruleProbes some rule's command glob
// matches, that program through a dynamic shell (so the shim sees its exec
// and the rule applies, as it would to the agent's command), and records
// it when it read a planted file or could write the policy: a program a
// rule matches must be inside the same seal as the tree.
func (p *probe) rules() {
	var files []string
	for _, f := range p.in.Files {
		files = append(files, f.Path)
	}
	for _, rp := range ruleProbes {
		matched := false
		for _, g := range p.in.Rules {
			if pg, err := pattern.Compile(g); err == nil && pg.Match(rp.name) {
				matched = true
				break
			}
		}
		if !matched {
			continue
		}
		if _, err := exec.LookPath(rp.name); err != nil {
			continue
		}
		argv := append([]string{"/bin/sh", "-c", `exec "$@"`, "sh"}, rp.argv(files, p.in.Policy)...)
		out := probeRun(exec.Command(argv[0], argv[1:]...))
		read := bytes.Contains(out, []byte(rulePolicyMark))
		for _, f := range p.in.Files {
			read = read || (len(f.Value) > 0 && bytes.Contains(out, f.Value))
		}
		if read {
			p.leak(chRules, rp.name)
		}
	}
}

// shellQuote quotes each word for sh, joined by spaces.
func shellQuote(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}

// probeRun runs cmd for at most ten seconds and returns its standard output.
func probeRun(cmd *exec.Cmd) []byte {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, cmd.Path, cmd.Args[1:]...)
	c.Env = os.Environ()
	c.Dir = cmd.Dir
	out, _ := c.Output()
	return out
}

func fileExists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// probeKey masks what probeEnvMain prints, so that neither redaction nor a
// reader of the output sees a value as such.
const probeKey = 0x5a

// probeEnvMain prints this process's environ, every byte xored with
// probeKey and hex-encoded; [unmask] reverses it.
func probeEnvMain() int {
	b := []byte(strings.Join(os.Environ(), "\x00"))
	for i := range b {
		b[i] ^= probeKey
	}
	fmt.Println(hex.EncodeToString(b))
	return 0
}

// unmask decodes what probeEnvMain printed; other text comes back empty.
func unmask(out []byte) []byte {
	b, err := hex.DecodeString(strings.TrimSpace(string(out)))
	if err != nil {
		return nil
	}
	for i := range b {
		b[i] ^= probeKey
	}
	return b
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
