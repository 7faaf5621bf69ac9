package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/envsieve/envsieve/internal/login"
)

// chLogins is the channel of the credential files a sealed launch shows
// the tree as fakes (package login): the canary logins verify plants
// (loginCanaries), read at their paths, where the variables of the tools
// name them, and through git's credential helper. A real value found is a
// leak; what the tree saw of each is reported under loginViews.
const chLogins = "login files"

// loginViews is the probe's report (not a channel: nothing in it is a
// leak) of where the tree found a fake of a canary login: "~/.npmrc",
// "$NPM_CONFIG_USERCONFIG", "git credential fill".
const loginViews = "login fakes"

// loginFileVars are the variables through which a launch names a fake
// file to its tool when the seal masks the real path (launch's toolVars),
// and the file each names (a directory's entry, for a directory).
var loginFileVars = []struct{ name, rel, entry string }{
	{"NPM_CONFIG_USERCONFIG", ".npmrc", ""},
	{"GH_CONFIG_DIR", ".config/gh/hosts.yml", "hosts.yml"},
	{"AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials", ""},
}

// logins reads every place the tree finds a canary login: the files at
// their paths (files reads them for leaks too), the files the tools'
// variables name, and what git's credential helpers answer for the canary
// git host. A place holding a real value is a leak; one holding a file
// that reads, in its format, as a login with another value of the real
// one's length is a fake, and reported as seen.
func (p *probe) logins() {
	byRel := map[string]probeFile{}
	for _, f := range p.in.Files {
		if f.Channel == chLogins {
			byRel[strings.TrimPrefix(f.Label, "~/")] = f
		}
	}
	if len(byRel) == 0 {
		return
	}
	look := func(label, rel string, b []byte) {
		f, ok := byRel[rel]
		if !ok {
			return
		}
		if bytes.Contains(b, f.Value) {
			p.leak(chLogins, label)
			return
		}
		if isFakeOf(rel, b, f.Value) {
			p.leak(loginViews, label)
		}
	}
	for rel, f := range byRel {
		if b, err := os.ReadFile(f.Path); err == nil {
			look(f.Label, rel, b)
		}
	}
	for _, v := range loginFileVars {
		path := treeVar(v.name)
		if path == "" {
			continue
		}
		if v.entry != "" {
			path = filepath.Join(path, v.entry)
		}
		if b, err := os.ReadFile(path); err == nil {
			look("$"+v.name, v.rel, b)
		}
	}
	if f, ok := byRel[".git-credentials"]; ok && p.in.GitURL != "" {
		if pw, ok := gitFill(p.in.GitURL); ok {
			switch {
			case bytes.Contains([]byte(pw), f.Value):
				p.leak(chLogins, "git credential fill")
			case len(pw) == len(f.Value):
				p.leak(loginViews, "git credential fill")
			}
		}
	}
}

// isFakeOf says whether b reads, in the format of the file at rel, as a
// login whose value has real's length and is not real.
func isFakeOf(rel string, b, real []byte) bool {
	f, ok := login.ByPath(rel)
	if !ok {
		return false
	}
	_, creds, err := f.Fake(b, func(_, v string) string { return strings.Repeat("x", len(v)) })
	if err != nil {
		return false
	}
	for _, c := range creds {
		if len(c.Real) == len(real) && c.Real != string(real) {
			return true
		}
	}
	return false
}

// gitFill asks git, from PATH, for the password of url as a client would
// (`git credential fill`), never prompting; false when there is no git or
// no answer within ten seconds.
func gitFill(url string) (string, bool) {
	git, err := exec.LookPath("git")
	if err != nil {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, git, "credential", "fill")
	c.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=/bin/false", "SSH_ASKPASS=/bin/false")
	c.Stdin = strings.NewReader("url=" + url + "\n\n")
	out, err := c.Output()
	if err != nil {
		return "", false
	}
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "password="); ok {
			return v, true
		}
	}
	return "", false
}
