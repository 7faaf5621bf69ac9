package launch

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/envsieve/envsieve/internal/sshfilter"
	"github.com/envsieve/envsieve/shim"
)

// knownHostsFiles are the known_hosts files the ssh agent filter reads,
// outside the tree, when the launch starts ("~/" is the launcher's HOME).
var knownHostsFiles = []string{"~/.ssh/known_hosts", "/etc/ssh/ssh_known_hosts"}

// sshDirPrefix names the directories the ssh agent filter's socket lives
// in (agent.sock, sshfilter's Listen); the next launch removes one a
// killed launcher left (sweepSocketDirs).
const sshDirPrefix = "envsieve-ssh-"

// startSSHAgent puts envsieve's filtering ssh agent (package sshfilter)
// in place of the user's when the child's environment carries
// SSH_AUTH_SOCK: a goroutine of the launcher serves a socket in a private
// directory and forwards to the user's agent only the keys and hosts of
// the policy's ssh: settings; the child's SSH_AUTH_SOCK names that
// socket. Without SSH_AUTH_SOCK nothing changes. Call it before
// Plan.openAudit, which from then on records each refusal.
func (l *Plan) startSSHAgent() error {
	if l.sshAgent != nil || l.opt.Policy == nil {
		return nil
	}
	upstream := ""
	for _, kv := range l.Env {
		if v, ok := strings.CutPrefix(kv, "SSH_AUTH_SOCK="); ok {
			upstream = v
		}
	}
	if upstream == "" {
		return nil
	}
	h, s := l.host, l.opt.Policy.SSH
	cfg := sshfilter.Config{Upstream: upstream, Hosts: append([]string(nil), s.Hosts...), UIDs: []int{os.Getuid()},
		Event: func(e sshfilter.Event) { l.alog.Load().Broker(e.Kind, e.Key, e.Host, e.Reason) }}
	for _, k := range s.Keys {
		if strings.HasPrefix(k, "~/") || strings.HasPrefix(k, "/") {
			line, err := h.publicKeyFile(k)
			if err != nil {
				return fmt.Errorf("ssh: keys: %w", err)
			}
			k = line
		}
		cfg.Keys = append(cfg.Keys, k)
	}
	for _, p := range knownHostsFiles {
		p, err := h.expandHome(p)
		if err != nil {
			continue // no HOME: no user's known_hosts
		}
		cfg.KnownHosts = append(cfg.KnownHosts, p)
	}
	f, err := sshfilter.New(cfg)
	if err != nil {
		return fmt.Errorf("ssh agent: %w", err)
	}
	// The socket's directory is the shim's (one the commands of an
	// agent's own sandbox still see), private to the user; one too deep
	// for a socket's path gives way to /tmp, as the shim's does.
	parent := h.socketDir()
	if len(parent)+len("/"+sshDirPrefix+"4294967295/agent.sock") > shim.MaxSocketPath {
		parent = "/tmp"
	}
	dir, err := os.MkdirTemp(parent, sshDirPrefix)
	if err == nil {
		err = os.Chmod(dir, 0o700)
	}
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("ssh agent: %w", err)
	}
	sock, err := f.Listen(dir)
	if err != nil {
		os.RemoveAll(dir)
		return fmt.Errorf("ssh agent: %w", err)
	}
	l.sshAgent, l.sshDir = f, dir
	l.Env = overlay(l.Env, map[string]string{"SSH_AUTH_SOCK": sock})
	h.debugf("ssh agent: the child's SSH_AUTH_SOCK is envsieve's filter (%s)", sshfilter.Describe(s.Keys, s.Hosts))
	return nil
}

// publicKeyFile reads the first key line of a public key file.
func (h *Host) publicKeyFile(p string) (string, error) {
	path, err := h.expandHome(p)
	if err != nil {
		return "", err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			return line, nil
		}
	}
	return "", fmt.Errorf("%s: no public key", p)
}

// sshOverlay returns env with SSH_AUTH_SOCK, when it has one, naming the
// filter's socket: a program an exec-time grant starts gets the filter
// too, never the user's agent.
func (l *Plan) sshOverlay(env []string) []string {
	if l.sshAgent == nil {
		return env
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "SSH_AUTH_SOCK=") {
			return overlay(env, map[string]string{"SSH_AUTH_SOCK": l.sshSocket()})
		}
	}
	return env
}

func (l *Plan) sshSocket() string {
	for _, kv := range l.Env {
		if v, ok := strings.CutPrefix(kv, "SSH_AUTH_SOCK="); ok {
			return v
		}
	}
	return ""
}

// stopSSHAgent stops the filter and removes its directory.
func (l *Plan) stopSSHAgent() {
	if l.sshAgent != nil {
		_ = l.sshAgent.Close()
		l.sshAgent = nil
	}
	if l.sshDir != "" {
		os.RemoveAll(l.sshDir)
		l.sshDir = ""
	}
}
