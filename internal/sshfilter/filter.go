// Package sshfilter is envsieve's filtering ssh agent: it serves an agent
// socket to the agent's tree and forwards to the user's own agent only
// what the policy allows.
//
// It guarantees, for every connection to its socket:
//   - listing answers only the allowed keys of the user's agent;
//   - a signature is made only with an allowed key, only for a connection
//     that first bound itself (OpenSSH's session-bind@openssh.com, 8.9 and
//     later) to a server host key that the user's known_hosts, read once
//     when the filter starts, names for an allowed host, with a valid host
//     key signature over the session identifier and not for a forwarded
//     agent, and only over data that is an ssh public-key userauth request
//     for that very session (and, for publickey-hostbound, that host key);
//   - adding, removing, locking, unlocking keys and every other request or
//     extension are refused;
//   - only the users of Config.UIDs are served: the kernel's credentials of
//     each connection's peer are checked when it is accepted.
//
// Every refusal is reported as an [Event] with a named reason; no key
// material beyond public fingerprints is ever reported.
package sshfilter

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/envsieve/envsieve/internal/peercred"
	"golang.org/x/crypto/ssh"
)

// Config is what a filter serves.
type Config struct {
	// Upstream is the path of the user's agent socket.
	Upstream string
	// Keys are the allowed keys: a SHA256 fingerprint ("SHA256:..."), a
	// public key in authorized_keys form (a .pub file's line), or a key's
	// comment. Empty allows every key of the user's agent.
	Keys []string
	// Hosts are the allowed hosts: names or globs (* and ?), each with an
	// optional ":port" ("git.example.com", "*.corp", "10.0.0.2:2222").
	// Without a port, a host matches its known_hosts entries on any port
	// (hashed entries: port 22 only).
	Hosts []string
	// KnownHosts are the known_hosts files, read once by New. A missing
	// file is skipped.
	KnownHosts []string
	// UIDs are the users whose connections the filter serves (the
	// kernel's credentials of the peer: SO_PEERCRED, LOCAL_PEERCRED): the
	// launch's, os.Getuid(). A connection of any other user, or whose
	// user the system cannot tell, is closed unanswered. None is an
	// error.
	UIDs []int
	// Event, when set, receives what the filter did and refused.
	Event func(Event)
}

// Event is one thing the filter did or refused.
type Event struct {
	// Kind is "ssh-signed" or "ssh-refused".
	Kind string
	// Key is the fingerprint of the key concerned, if any.
	Key string
	// Host is the allowed host the connection is bound to, or the host
	// key's fingerprint when no allowed host has it.
	Host string
	// Reason says why a request was refused.
	Reason string
}

// Filter is a filtering agent.
type Filter struct {
	cfg   Config
	keys  []keySpec
	known []knownLine

	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	closed bool
	ln     net.Listener
	wg     sync.WaitGroup
}

// New returns a filter for cfg, reading its known_hosts files now.
func New(cfg Config) (*Filter, error) {
	if cfg.Upstream == "" {
		return nil, errors.New("sshfilter: no upstream agent socket")
	}
	if len(cfg.UIDs) == 0 {
		return nil, errors.New("sshfilter: no user to serve")
	}
	f := &Filter{cfg: cfg, conns: map[net.Conn]struct{}{}}
	for _, k := range cfg.Keys {
		s, err := parseKeySpec(k)
		if err != nil {
			return nil, err
		}
		f.keys = append(f.keys, s)
	}
	f.cfg.Hosts = nil
	for _, h := range cfg.Hosts {
		h = strings.ToLower(strings.TrimSpace(h))
		if h == "" {
			return nil, errors.New("sshfilter: an empty host")
		}
		f.cfg.Hosts = append(f.cfg.Hosts, h)
	}
	for _, path := range cfg.KnownHosts {
		b, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("sshfilter: known hosts: %w", err)
		}
		f.known = append(f.known, parseKnownHosts(b)...)
	}
	return f, nil
}

// Listen makes the filter's socket, agent.sock in dir (a private
// directory of the caller's), and serves it until Close.
func (f *Filter) Listen(dir string) (string, error) {
	path := filepath.Join(dir, "agent.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		return "", fmt.Errorf("sshfilter: %w", err)
	}
	f.mu.Lock()
	f.ln = ln
	f.mu.Unlock()
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		f.Serve(ln)
	}()
	return path, nil
}

// Serve accepts connections on ln until it closes.
func (f *Filter) Serve(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		f.mu.Lock()
		if f.closed {
			f.mu.Unlock()
			c.Close()
			return
		}
		f.conns[c] = struct{}{}
		f.wg.Add(1)
		f.mu.Unlock()
		go func() {
			defer f.wg.Done()
			uid, err := -1, errors.New("not a unix socket connection")
			if uc, ok := c.(*net.UnixConn); ok {
				uid, err = peercred.UID(uc)
			}
			if err != nil || !slices.Contains(f.cfg.UIDs, uid) {
				why := "peer uid " + strconv.Itoa(uid) + " is not the launch's"
				if err != nil {
					why = "the peer's uid: " + err.Error()
				}
				f.event(Event{Kind: "ssh-refused", Reason: why})
				c.Close()
			} else {
				f.ServeConn(c)
			}
			f.mu.Lock()
			delete(f.conns, c)
			f.mu.Unlock()
		}()
	}
}

// Close stops the filter and ends every connection.
func (f *Filter) Close() error {
	f.mu.Lock()
	f.closed = true
	if f.ln != nil {
		f.ln.Close()
	}
	for c := range f.conns {
		c.Close()
	}
	f.mu.Unlock()
	f.wg.Wait()
	return nil
}

// conn is one client connection's state.
type conn struct {
	f        *Filter
	up       net.Conn
	bound    *sessionBind
	host     string // the allowed host the connection is bound to
	unbound  string // why a bind was refused, if one was
	hostName string // the refused bind's host, for events
}

// ServeConn serves one client connection until it closes.
func (f *Filter) ServeConn(c net.Conn) {
	defer c.Close()
	s := &conn{f: f}
	defer func() {
		if s.up != nil {
			s.up.Close()
		}
	}()
	for {
		msg, err := readMessage(c)
		if err != nil {
			return
		}
		reply := s.handle(msg)
		if reply == nil {
			return
		}
		if _, err := c.Write(frame(reply)); err != nil {
			return
		}
	}
}

var failure = []byte{msgFailure}

// refusedRequests names the requests the filter refuses by type.
var refusedRequests = map[byte]string{
	17: "adding a key", 25: "adding a key", 20: "adding a smartcard key", 26: "adding a smartcard key",
	18: "removing a key", 19: "removing every key", 21: "removing a smartcard key",
	22: "locking the agent", 23: "unlocking the agent",
}

// handle answers one message; nil ends the connection.
func (s *conn) handle(msg []byte) []byte {
	switch msg[0] {
	case msgRequestIdentities:
		if len(msg) != 1 {
			return s.refuse("", "malformed identities request")
		}
		ids, err := s.list()
		if err != nil {
			return s.refuse("", "the user's agent: "+err.Error())
		}
		return marshalIdentities(s.f.allowed(ids))
	case msgSignRequest:
		return s.sign(msg)
	case msgExtension:
		e, err := parseExtension(msg)
		if err != nil {
			return s.refuse("", "malformed extension")
		}
		if e.Name != "session-bind@openssh.com" {
			name := e.Name
			if len(name) > 64 {
				name = name[:64] + "..." // the audit log gets no client's megabytes
			}
			return s.refuse("", fmt.Sprintf("extension %q", name))
		}
		return s.bind(e.Contents)
	}
	if what, ok := refusedRequests[msg[0]]; ok {
		return s.refuse("", what)
	}
	return s.refuse("", fmt.Sprintf("agent request %d", msg[0]))
}

// refuse reports a refusal and answers SSH_AGENT_FAILURE.
func (s *conn) refuse(key, reason string) []byte {
	host := s.host
	if host == "" {
		host = s.hostName
	}
	s.f.event(Event{Kind: "ssh-refused", Key: key, Host: host, Reason: reason})
	return failure
}

func (f *Filter) event(e Event) {
	if f.cfg.Event != nil {
		f.cfg.Event(e)
	}
}

// upstream returns the connection to the user's agent, dialling it the
// first time.
func (s *conn) upstream() (net.Conn, error) {
	if s.up == nil {
		c, err := net.Dial("unix", s.f.cfg.Upstream)
		if err != nil {
			return nil, errors.New("cannot reach the user's agent")
		}
		s.up = c
	}
	return s.up, nil
}

// call sends msg to the user's agent and returns its answer.
func (s *conn) call(msg []byte) ([]byte, error) {
	up, err := s.upstream()
	if err != nil {
		return nil, err
	}
	if _, err := up.Write(frame(msg)); err != nil {
		return nil, errors.New("lost the user's agent")
	}
	rep, err := readMessage(up)
	if err != nil {
		return nil, errors.New("lost the user's agent")
	}
	return rep, nil
}

func (s *conn) list() ([]identity, error) {
	rep, err := s.call([]byte{msgRequestIdentities})
	if err != nil {
		return nil, err
	}
	return parseIdentities(rep)
}

// allowed returns the identities the policy allows.
func (f *Filter) allowed(ids []identity) []identity {
	var out []identity
	for _, id := range ids {
		if f.keyAllowed(id) {
			out = append(out, id)
		}
	}
	return out
}

// bind checks a session-bind and, when it holds, binds the connection.
func (s *conn) bind(contents []byte) []byte {
	b, err := parseSessionBind(contents)
	if err != nil {
		return s.refuse("", "malformed session-bind")
	}
	if s.bound != nil || s.unbound != "" {
		return s.refuse("", "a second session-bind on one connection")
	}
	hk, err := ssh.ParsePublicKey(b.HostKey)
	if err != nil {
		s.unbound = "session-bind with an unreadable host key"
		return s.refuse("", s.unbound)
	}
	fp := ssh.FingerprintSHA256(hk)
	s.hostName = "host key " + fp
	sig := new(ssh.Signature)
	if err := ssh.Unmarshal(b.Signature, sig); err != nil || len(b.SessionID) == 0 || hk.Verify(b.SessionID, sig) != nil {
		s.unbound = "session-bind whose signature the host key did not make"
		return s.refuse("", s.unbound)
	}
	if b.Forwarding {
		s.unbound = "session-bind for a forwarded agent"
		return s.refuse("", s.unbound)
	}
	host, why := s.f.hostFor(b.HostKey)
	if host == "" {
		s.unbound = why
		return s.refuse("", s.unbound)
	}
	s.bound, s.host = &b, host
	// The user's agent learns the binding too, so that its own destination
	// constraints (ssh-add -h) hold; an agent without the extension answers
	// a failure, which changes nothing here.
	msg := putString([]byte{msgExtension}, []byte("session-bind@openssh.com"))
	if _, err := s.call(append(msg, contents...)); err != nil {
		return s.refuse("", "the user's agent: "+err.Error())
	}
	return []byte{msgSuccess}
}

// sign checks a sign request and forwards it when it holds.
func (s *conn) sign(msg []byte) []byte {
	req, err := parseSignRequest(msg)
	if err != nil {
		return s.refuse("", "malformed sign request")
	}
	fp := "unreadable key"
	if k, err := ssh.ParsePublicKey(req.Key); err == nil {
		fp = ssh.FingerprintSHA256(k)
	}
	if s.bound == nil {
		if s.unbound != "" {
			return s.refuse(fp, s.unbound)
		}
		return s.refuse(fp, "the connection did not bind to a host (session-bind@openssh.com; OpenSSH 8.9 or later)")
	}
	ok, err := s.keyAllowed(req.Key)
	if err != nil {
		return s.refuse(fp, "the user's agent: "+err.Error())
	}
	if !ok {
		return s.refuse(fp, "key not allowed")
	}
	u, err := parseUserauthRequest(req.Data)
	if err != nil {
		return s.refuse(fp, "the data to sign is not an ssh userauth request")
	}
	switch {
	case !bytes.Equal(u.SessionID, s.bound.SessionID):
		return s.refuse(fp, "userauth request for another session than the bound one")
	case !bytes.Equal(u.Key, req.Key):
		return s.refuse(fp, "userauth request for another key than the signing one")
	case u.Method == methodHostbound && !bytes.Equal(u.HostKey, s.bound.HostKey):
		return s.refuse(fp, "userauth request for another host key than the bound one")
	}
	rep, err := s.call(msg)
	if err != nil {
		return s.refuse(fp, "the user's agent: "+err.Error())
	}
	if rep[0] != msgSignResponse {
		return s.refuse(fp, "the user's agent refused to sign")
	}
	s.f.event(Event{Kind: "ssh-signed", Key: fp, Host: s.host})
	return rep
}

// keyAllowed reports whether the policy allows the key blob; a policy
// naming keys by comment asks the user's agent for the comment.
func (s *conn) keyAllowed(blob []byte) (bool, error) {
	f := s.f
	if len(f.keys) == 0 {
		return true, nil
	}
	id := identity{Blob: blob}
	if f.needComments() {
		ids, err := s.list()
		if err != nil {
			return false, err
		}
		found := false
		for _, i := range ids {
			if bytes.Equal(i.Blob, blob) {
				id, found = i, true
				break
			}
		}
		if !found {
			return false, nil
		}
	}
	return f.keyAllowed(id), nil
}

// Describe returns, for explain, the keys and hosts the filter allows.
func Describe(keys, hosts []string) string {
	k := "every key of the user's agent"
	if len(keys) > 0 {
		k = strings.Join(keys, ", ")
	}
	return fmt.Sprintf("keys: %s; hosts: %s", k, strings.Join(hosts, ", "))
}

var _ io.Closer = (*Filter)(nil)
