package daemon

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/redact"
	"github.com/envsieve/envsieve/sieve"
)

// session is one agent's (or sub-agent's) view: a profile and its own copy
// of a client's snapshot, fixed at creation.
type session struct {
	id, clientID, profile, parentID string
	eff                             *policy.Effective
	snapshot                        []string
	// masked holds the snapshot's sensitive values (first copy of each
	// key): masked in output unless the command's environment holds them.
	masked []redact.Secret
	pwd    string

	// Guarded by Server.mu.
	execs  map[string]*running
	nextID int
	closed bool
	// sets keeps the session's last compiled redaction sets.
	sets launch.RedactCache
}

// running is one command in flight.
type running struct {
	cancel context.CancelCauseFunc
}

func (c *conn) sessionNew(_ context.Context, p *SessionNewParams) (*SessionNewResult, error) {
	s := c.s
	pol := s.cfg.Policy
	eff, err := pol.Effective(p.Profile)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	cl := s.clients[p.ClientID]
	var parent *session
	if p.ParentSession != "" {
		parent = s.sessions[p.ParentSession]
	}
	s.mu.Unlock()
	if cl == nil || !sameSecret(cl.secret, p.ClientSecret) {
		// The same answer for an unknown id and a wrong secret: ids are
		// not to be probed.
		return nil, rpcError(CodeUnknownClient, fmt.Sprintf("unknown client_id %q or wrong client_secret: call initialize first", p.ClientID))
	}
	if p.ParentSession != "" && parent == nil {
		return nil, rpcError(CodeUnknownSession, fmt.Sprintf("unknown parent_session %q", p.ParentSession))
	}
	ss := &session{clientID: p.ClientID, profile: p.Profile, eff: eff, execs: map[string]*running{}}
	if parent != nil {
		if err := pol.CheckNarrows(p.Profile, parent.profile); err != nil {
			if errors.Is(err, policy.ErrUnknownProfile) {
				return nil, err
			}
			return nil, rpcError(CodeEscalation, "policy escalation: "+strings.ReplaceAll(err.Error(), "\n", "; "))
		}
		// A sub-agent starts from its parent's snapshot, never from a
		// newer, possibly wider one.
		ss.parentID, ss.snapshot, ss.masked, ss.pwd = parent.id, parent.snapshot, parent.masked, parent.pwd
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		return nil, rpcError(CodeShuttingDown, "the daemon is shutting down")
	}
	if parent == nil {
		cl = s.clients[p.ClientID]
		if cl == nil || cl.snapshot == nil {
			return nil, rpcError(CodeUnknownClient, fmt.Sprintf("unknown client_id %q: call initialize first", p.ClientID))
		}
		// The snapshot is never changed in place (initialize replaces
		// it), so the session may share its backing array.
		ss.snapshot = cl.snapshot
		ss.masked, ss.pwd = snapshotMasked(ss.snapshot)
	} else if parent.closed {
		return nil, rpcError(CodeUnknownSession, fmt.Sprintf("unknown parent_session %q", p.ParentSession))
	}
	cnt := s.countsLocked(p.ClientID)
	if cnt.sessions >= s.lim.MaxSessionsPerClient {
		return nil, limitError(CodeTooManySessions, "too many sessions for client "+p.ClientID, "max_sessions_per_client", cnt.sessions+1, s.lim.MaxSessionsPerClient)
	}
	if len(s.sessions) >= s.lim.MaxSessions {
		return nil, limitError(CodeTooManySessions, "too many sessions", "max_sessions", len(s.sessions)+1, s.lim.MaxSessions)
	}
	for ss.id == "" || s.sessions[ss.id] != nil {
		ss.id = "ses_" + randomHex(16)
	}
	s.sessions[ss.id] = ss
	cnt.sessions++
	if cl != nil {
		s.useClock++
		cl.used = s.useClock
	}
	s.log.Info("session opened", "session_id", ss.id, "client_id", p.ClientID, "profile", p.Profile, "parent", ss.parentID)
	return &SessionNewResult{SessionID: ss.id}, nil
}

func (s *Server) countsLocked(id string) *counts {
	c := s.perID[id]
	if c == nil {
		c = &counts{}
		s.perID[id] = c
	}
	return c
}

func (s *Server) releaseCountsLocked(id string) {
	if c := s.perID[id]; c != nil && c.sessions == 0 && c.execs == 0 {
		delete(s.perID, id)
	}
}

// snapshotMasked returns the snapshot's sensitive values, the first copy of
// each key, and its PWD when absolute.
func snapshotMasked(snap []string) (masked []redact.Secret, pwd string) {
	for k, v := range firstCopies(snap) {
		if sensitive(k, v) {
			masked = append(masked, redact.Secret{Name: k, Value: []byte(v)})
		}
		if k == "PWD" && filepath.IsAbs(v) {
			pwd = v
		}
	}
	sort.Slice(masked, func(i, j int) bool { return masked[i].Name < masked[j].Name })
	return masked, pwd
}

// lookup returns an open session.
func (s *Server) lookup(id string) (*session, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := s.sessions[id]
	if ss == nil || ss.closed {
		return nil, rpcError(CodeUnknownSession, fmt.Sprintf("unknown session_id %q", id))
	}
	return ss, nil
}

func (c *conn) sessionEnv(_ context.Context, p *SessionParams) (*SessionEnvResult, error) {
	ss, err := c.s.lookup(p.SessionID)
	if err != nil {
		return nil, err
	}
	b, err := c.s.buildEnv(ss, sieve.Request{Profile: ss.profile}, nil, nil)
	if err != nil {
		return nil, err
	}
	out := &SessionEnvResult{SessionID: ss.id, Profile: ss.profile, Env: make([]EnvEntry, 0, len(b.Env))}
	for _, kv := range b.Env {
		k, v, _ := strings.Cut(kv, "=")
		e := EnvEntry{Name: k, Value: v, Layer: b.layer[k]}
		if sensitive(k, v) {
			e.Value, e.Masked = fmt.Sprintf("<sensitive, %d bytes>", len(v)), true
		}
		out.Env = append(out.Env, e)
	}
	return out, nil
}

func (c *conn) sessionClose(_ context.Context, p *SessionParams) (struct{}, error) {
	s := c.s
	s.mu.Lock()
	ss := s.sessions[p.SessionID]
	if ss == nil || ss.closed {
		s.mu.Unlock()
		return struct{}{}, rpcError(CodeUnknownSession, fmt.Sprintf("unknown session_id %q", p.SessionID))
	}
	// A sub-agent's sessions end with their parent's.
	var runs []*running
	closing := []*session{ss}
	for i := 0; i < len(closing); i++ {
		cur := closing[i]
		cur.closed = true
		delete(s.sessions, cur.id)
		if cnt := s.perID[cur.clientID]; cnt != nil {
			cnt.sessions--
			s.releaseCountsLocked(cur.clientID)
		}
		for _, r := range cur.execs {
			runs = append(runs, r)
		}
		for _, o := range s.sessions {
			if o.parentID == cur.id && !o.closed {
				closing = append(closing, o)
			}
		}
	}
	s.mu.Unlock()
	for _, r := range runs {
		r.cancel(errCancelled)
	}
	s.log.Info("session closed", "session_id", p.SessionID, "with_children", len(closing)-1)
	return struct{}{}, nil
}

func (c *conn) sessionCancel(_ context.Context, p *CancelParams) (struct{}, error) {
	s := c.s
	s.mu.Lock()
	ss := s.sessions[p.SessionID]
	var r *running
	if ss != nil {
		r = ss.execs[p.ExecID]
	}
	s.mu.Unlock()
	if ss == nil {
		return struct{}{}, rpcError(CodeUnknownSession, fmt.Sprintf("unknown session_id %q", p.SessionID))
	}
	if r == nil {
		return struct{}{}, rpcError(CodeUnknownExec, fmt.Sprintf("no running exec %q in session %s", p.ExecID, p.SessionID))
	}
	r.cancel(errCancelled)
	return struct{}{}, nil
}
