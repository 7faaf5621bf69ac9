package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/crypto/ssh/agent"

	"github.com/envsieve/envsieve/shim"
)

// chSSH is the channel of the user's ssh agent: the tree should reach it
// only through envsieve's filter (docs/ssh.md).
const chSSH = "ssh agent"

// startCanaryAgent serves, for verify's stand-in agent, an ssh agent of
// the user's holding one canary key, on a socket in dir (in /tmp when dir
// is too deep for a socket path). The stand-in's SSH_AUTH_SOCK names it.
func startCanaryAgent(dir string) (string, func(), error) {
	own := ""
	if len(dir)+len("/agent.sock") > shim.MaxSocketPath {
		d, err := os.MkdirTemp("/tmp", "envsieve-verify-")
		if err != nil {
			return "", nil, err
		}
		dir, own = d, d
	}
	fail := func(err error) (string, func(), error) {
		if own != "" {
			os.RemoveAll(own)
		}
		return "", nil, err
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return fail(err)
	}
	kr := agent.NewKeyring()
	if err := kr.Add(agent.AddedKey{PrivateKey: key, Comment: "envsieve-verify-canary"}); err != nil {
		return fail(err)
	}
	path := filepath.Join(dir, "agent.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fail(err)
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_ = agent.ServeAgent(kr, c)
			}()
		}
	}()
	return path, func() {
		ln.Close()
		os.Remove(path)
		if own != "" {
			os.RemoveAll(own)
		}
	}, nil
}

// sshAgent does with the tree's SSH_AUTH_SOCK what a hostile command
// would: take the user's own agent socket, sign data that is no login to
// a bound host with each key listed, add a key, and remove every key.
// Each that works is a leak.
func (p *probe) sshAgent() {
	sock := treeVar("SSH_AUTH_SOCK")
	if sock == "" {
		return
	}
	if p.in.SSHAgent != "" && sock == p.in.SSHAgent {
		p.leak(chSSH, "the user's agent socket")
	}
	c, err := net.Dial("unix", sock)
	if err != nil {
		return
	}
	defer c.Close()
	a := agent.NewClient(c)
	keys, _ := a.List()
	for _, k := range keys {
		if _, err := a.Sign(k, []byte("envsieve verify: a signature for no bound host")); err == nil {
			p.leak(chSSH, "a signature for no bound host")
		}
	}
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err == nil && a.Add(agent.AddedKey{PrivateKey: key, Comment: "envsieve-verify-added"}) == nil {
		p.leak(chSSH, "adding a key")
	}
	if len(keys) > 0 && a.RemoveAll() == nil {
		p.leak(chSSH, "removing every key")
	}
}
