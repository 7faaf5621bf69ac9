package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/envsieve/envsieve/internal/login"
)

// standInArg is envsieve-daemon's hidden verb for verify's stand-in of
// the canary logins' hosts (daemoncli.StandInArg: envsieve links no TLS,
// TestLean).
const standInArg = "__verify-standin"

// standInLogin, standInReady and standInSeen are daemoncli's StandInLogin,
// StandInReady and StandInSeen: what goes to the stand-in over its stdin,
// and the lines it answers.
type standInLogin struct {
	Host     string `json:"host"`
	User     string `json:"user,omitempty"`
	Password string `json:"password"`
	AWSKeyID string `json:"aws_key_id,omitempty"`
}

type standInReady struct {
	Proxy string `json:"proxy,omitempty"`
	CA    string `json:"ca,omitempty"`
	Error string `json:"error,omitempty"`
}

type standInSeen struct {
	Host  string `json:"host"`
	Login string `json:"login"`
}

// standIn is verify's stand-in for the hosts of its canary logins,
// running in envsieve-daemon: an HTTP proxy (the stand-in user's
// HTTPS_PROXY, which the broker goes through upstream) whose tunnels to
// those hosts end in a TLS server of a CA of its own (the user's
// GIT_SSL_CAINFO, which the broker trusts upstream). It says, per
// request, whether the login's real value came; never a value.
type standIn struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	proxy  string
	caFile string
}

// startStandIn starts the stand-in for logins, its CA written in dir.
func startStandIn(dir string, logins []standInLogin) (*standIn, error) {
	prog, err := findDaemonProgram()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(prog, standInArg)
	cmd.Env = []string{}
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the logins' stand-in: %w", err)
	}
	s := &standIn{cmd: cmd, in: in, out: bufio.NewReader(out)}
	fail := func(err error) (*standIn, error) {
		s.in.Close()
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
		return nil, fmt.Errorf("the logins' stand-in: %w", err)
	}
	if err := json.NewEncoder(in).Encode(logins); err != nil {
		return fail(err)
	}
	line, err := s.out.ReadBytes('\n')
	if err != nil {
		return fail(err)
	}
	var ready standInReady
	if err := json.Unmarshal(line, &ready); err != nil {
		return fail(err)
	}
	if ready.Error != "" {
		return fail(errors.New(ready.Error))
	}
	s.proxy = ready.Proxy
	s.caFile = filepath.Join(dir, "standin-ca.pem")
	if err := os.WriteFile(s.caFile, []byte(ready.CA), 0o644); err != nil {
		return fail(err)
	}
	return s, nil
}

// finish stops the stand-in and returns what it saw.
func (s *standIn) finish() []standInSeen {
	s.in.Close()
	var seen []standInSeen
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			line, err := s.out.ReadBytes('\n')
			var v standInSeen
			if len(line) > 0 && json.Unmarshal(line, &v) == nil && v.Login != "" {
				seen = append(seen, v)
			}
			if err != nil {
				return
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
	_ = s.cmd.Wait()
	return seen
}

// loginClients are the clients the probe tries against the stand-in:
// its name in the probe's report (loginTries), the host it sends to, and
// what working means.
var loginClients = []struct{ name, host, works string }{
	{"git", loginCanaryHost("git"), "git over https through the broker: the stand-in got the real password from the tree's fake"},
	{"aws", awsCanaryHost, "an AWS request the tree signed with its fake keys reached the stand-in re-signed with the real ones"},
}

// loginsWork says whether the tree's logins worked: what the stand-in
// saw of each client's host, given the clients the probe ran (tried) and
// why there is no stand-in (why, when there is none).
func loginsWork(seen []standInSeen, tried []string, why error) string {
	if why != nil {
		return "logins: not tried (" + why.Error() + ")"
	}
	var works, fails, skipped []string
	for _, c := range loginClients {
		if !slices.Contains(tried, c.name) {
			skipped = append(skipped, c.name+" not tried (no "+map[string]string{"git": "git", "aws": "curl, or no fake AWS profile"}[c.name]+" in the tree)")
			continue
		}
		got := map[string]bool{}
		n := 0
		for _, v := range seen {
			if v.Host == c.host {
				got[v.Login] = true
				n++
			}
		}
		switch {
		case got["real"]:
			works = append(works, c.works)
		case got["other"]:
			fails = append(fails, c.name+": the stand-in got a credential that is not the real one")
		case n > 0:
			fails = append(fails, c.name+": the stand-in got no login (the launch was not sealed, or no broker ran)")
		default:
			fails = append(fails, c.name+": no request reached the stand-in")
		}
	}
	switch {
	case len(fails) > 0:
		return "logins: do not work (" + strings.Join(append(fails, skipped...), "; ") + ")"
	case len(works) > 0:
		return "logins: work (" + strings.Join(append(works, skipped...), "; ") + ")"
	default:
		return "logins: not tried (" + strings.Join(skipped, "; ") + ")"
	}
}

// tryLogins runs git in the tree against the canary git host, as a
// client of the login would (`git ls-remote`, never prompting): its
// credential helper answers the fake, the broker swaps it for the real
// password on the way to verify's stand-in. It reports whether git ran.
func (p *probe) tryLogins() {
	if p.in.GitURL == "" {
		return
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, git, "ls-remote", p.in.GitURL+"/verify.git")
	c.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=/bin/false", "SSH_ASKPASS=/bin/false")
	c.Dir = p.in.Work
	_ = c.Run() // the stand-in says whether it worked
	p.leak(loginTries, "git")
}

// tryAWS sends an AWS request signed, by curl from PATH, with the keys of
// the AWS profile the tree sees (where AWS_SHARED_CREDENTIALS_FILE names
// it, else at ~/.aws/credentials): the broker re-signs it with the real
// keys on its way to verify's stand-in. A file holding the real secret
// is a leak already (logins), and is not tried. The keys go to curl on
// its stdin, never in argv.
func (p *probe) tryAWS() {
	if p.in.AWSURL == "" {
		return
	}
	var real probeFile
	for _, f := range p.in.Files {
		if f.Channel == chLogins && f.Label == "~/.aws/credentials" {
			real = f
		}
	}
	path := treeVar("AWS_SHARED_CREDENTIALS_FILE")
	if path == "" {
		path = real.Path
	}
	curl, err := exec.LookPath("curl")
	if path == "" || err != nil {
		return
	}
	b, err := os.ReadFile(path)
	if err != nil || len(real.Value) == 0 || bytes.Contains(b, real.Value) {
		return
	}
	f, ok := login.ByPath(".aws/credentials")
	if !ok {
		return
	}
	_, creds, err := f.Fake(b, func(_, v string) string { return strings.Repeat("x", len(v)) })
	if err != nil || len(creds) == 0 || creds[0].AWS == nil {
		return
	}
	k := creds[0].AWS.Real // the keys in the file the tree sees: the fakes
	if strings.ContainsAny(k.AccessKeyID+k.SecretAccessKey, "\"\\\n") {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, curl, "-s", "-o", "/dev/null", "-K", "-")
	c.Env = os.Environ()
	c.Stdin = strings.NewReader("url = \"" + p.in.AWSURL + "\"\naws-sigv4 = \"aws:amz:us-east-1:sts\"\nuser = \"" +
		k.AccessKeyID + ":" + k.SecretAccessKey + "\"\n")
	_ = c.Run() // the stand-in says whether it worked
	p.leak(loginTries, "aws")
}

// loginTries lists, in the probe's report, the clients it ran against
// the stand-in (not a channel).
const loginTries = "login tries"
