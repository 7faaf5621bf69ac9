package sshfilter

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// The ssh agent protocol's message numbers (draft-miller-ssh-agent) that
// the filter reads or writes.
const (
	msgFailure           = 5
	msgSuccess           = 6
	msgRequestIdentities = 11
	msgIdentitiesAnswer  = 12
	msgSignRequest       = 13
	msgSignResponse      = 14
	msgExtension         = 27
)

// maxMessage is the largest agent message the filter accepts, OpenSSH's
// own limit (AGENT_MAX_LEN).
const maxMessage = 256 * 1024

// msgUserauthRequest is SSH_MSG_USERAUTH_REQUEST (RFC 4252).
const msgUserauthRequest = 50

var errMalformed = errors.New("malformed agent message")

// readMessage reads one framed agent message (uint32 length, then that
// many bytes, the first its type).
func readMessage(r io.Reader) ([]byte, error) {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return nil, err
	}
	l := binary.BigEndian.Uint32(n[:])
	if l == 0 || l > maxMessage {
		return nil, fmt.Errorf("%w: length %d", errMalformed, l)
	}
	b := make([]byte, l)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	return b, nil
}

// frame returns msg with its length in front.
func frame(msg []byte) []byte {
	out := make([]byte, 4, 4+len(msg))
	binary.BigEndian.PutUint32(out, uint32(len(msg)))
	return append(out, msg...)
}

// reader reads the ssh wire types from a message; after the first error
// every read fails, and ok reports whether all succeeded.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) byte() byte {
	if r.bad || len(r.b) < 1 {
		r.bad = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) uint32() uint32 {
	if r.bad || len(r.b) < 4 {
		r.bad = true
		return 0
	}
	v := binary.BigEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *reader) string() []byte {
	n := r.uint32()
	if r.bad || uint64(n) > uint64(len(r.b)) {
		r.bad = true
		return nil
	}
	s := r.b[:n:n]
	r.b = r.b[n:]
	return s
}

// bool reads an ssh boolean strictly: 0 or 1.
func (r *reader) bool() bool {
	c := r.byte()
	if c > 1 {
		r.bad = true
	}
	return c == 1
}

// done reports whether every read succeeded and nothing is left.
func (r *reader) done() bool { return !r.bad && len(r.b) == 0 }

func putString(b, s []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// identity is one key of an identities answer.
type identity struct {
	Blob    []byte
	Comment string
}

// parseIdentities parses SSH_AGENT_IDENTITIES_ANSWER.
func parseIdentities(msg []byte) ([]identity, error) {
	r := &reader{b: msg}
	if r.byte() != msgIdentitiesAnswer {
		return nil, fmt.Errorf("%w: not an identities answer", errMalformed)
	}
	n := r.uint32()
	if r.bad || uint64(n) > uint64(len(r.b))/8 {
		return nil, fmt.Errorf("%w: identities count", errMalformed)
	}
	ids := make([]identity, 0, n)
	for i := uint32(0); i < n; i++ {
		blob := r.string()
		comment := r.string()
		if r.bad {
			return nil, fmt.Errorf("%w: identity %d", errMalformed, i)
		}
		ids = append(ids, identity{Blob: bytes.Clone(blob), Comment: string(comment)})
	}
	if !r.done() {
		return nil, fmt.Errorf("%w: trailing bytes after the identities", errMalformed)
	}
	return ids, nil
}

// marshalIdentities builds SSH_AGENT_IDENTITIES_ANSWER.
func marshalIdentities(ids []identity) []byte {
	b := []byte{msgIdentitiesAnswer}
	b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		b = putString(b, id.Blob)
		b = putString(b, []byte(id.Comment))
	}
	return b
}

// signRequest is SSH_AGENTC_SIGN_REQUEST.
type signRequest struct {
	Key   []byte
	Data  []byte
	Flags uint32
}

func parseSignRequest(msg []byte) (signRequest, error) {
	r := &reader{b: msg}
	var s signRequest
	if r.byte() != msgSignRequest {
		return s, fmt.Errorf("%w: not a sign request", errMalformed)
	}
	s.Key = r.string()
	s.Data = r.string()
	s.Flags = r.uint32()
	if !r.done() {
		return s, fmt.Errorf("%w: sign request", errMalformed)
	}
	return s, nil
}

// extension is SSH_AGENTC_EXTENSION: its name and its contents.
type extension struct {
	Name     string
	Contents []byte
}

func parseExtension(msg []byte) (extension, error) {
	r := &reader{b: msg}
	if r.byte() != msgExtension {
		return extension{}, fmt.Errorf("%w: not an extension", errMalformed)
	}
	name := r.string()
	if r.bad {
		return extension{}, fmt.Errorf("%w: extension name", errMalformed)
	}
	return extension{Name: string(name), Contents: r.b}, nil
}

// sessionBind is the contents of the session-bind@openssh.com extension
// (OpenSSH's PROTOCOL.agent): the server's host key, the session
// identifier, the host key's signature over it, and whether the binding is
// for a forwarded agent.
type sessionBind struct {
	HostKey    []byte
	SessionID  []byte
	Signature  []byte
	Forwarding bool
}

func parseSessionBind(contents []byte) (sessionBind, error) {
	r := &reader{b: contents}
	var s sessionBind
	s.HostKey = r.string()
	s.SessionID = r.string()
	s.Signature = r.string()
	s.Forwarding = r.bool()
	if !r.done() {
		return s, fmt.Errorf("%w: session-bind", errMalformed)
	}
	return s, nil
}

// userauthRequest is the data an ssh client asks the agent to sign for
// public-key authentication (RFC 4252 section 7, and OpenSSH's
// publickey-hostbound-v00@openssh.com which adds the server's host key).
type userauthRequest struct {
	SessionID []byte
	User      string
	Service   string
	Method    string
	Algorithm string
	Key       []byte
	HostKey   []byte // publickey-hostbound only
}

const (
	methodPublickey = "publickey"
	methodHostbound = "publickey-hostbound-v00@openssh.com"
)

// parseUserauthRequest parses data strictly as a signed
// SSH_MSG_USERAUTH_REQUEST for public-key authentication; anything else
// (an sshsig signature, a request without its signature flag, trailing
// bytes) is an error.
func parseUserauthRequest(data []byte) (userauthRequest, error) {
	r := &reader{b: data}
	var u userauthRequest
	u.SessionID = r.string()
	if r.byte() != msgUserauthRequest || r.bad {
		return u, fmt.Errorf("%w: not a userauth request", errMalformed)
	}
	u.User = string(r.string())
	u.Service = string(r.string())
	u.Method = string(r.string())
	if r.bad || (u.Method != methodPublickey && u.Method != methodHostbound) {
		return u, fmt.Errorf("%w: userauth method is not publickey", errMalformed)
	}
	if !r.bool() {
		return u, fmt.Errorf("%w: userauth request without a signature", errMalformed)
	}
	u.Algorithm = string(r.string())
	u.Key = r.string()
	if u.Method == methodHostbound {
		u.HostKey = r.string()
	}
	if !r.done() || len(u.SessionID) == 0 || u.Service != "ssh-connection" {
		return u, fmt.Errorf("%w: userauth request", errMalformed)
	}
	return u, nil
}
