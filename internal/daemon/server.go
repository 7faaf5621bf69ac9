package daemon

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/creachadair/jrpc2"
	"github.com/creachadair/jrpc2/handler"

	"github.com/envsieve/envsieve/internal/detect"
	"github.com/envsieve/envsieve/internal/peercred"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/secret"
)

// Config is what a [Server] needs. Policy and Env are required.
type Config struct {
	// Policy is the loaded policy every session uses. Required.
	Policy *policy.Policy
	// Env is the daemon's own environment (os.Environ()): layer 1 of every
	// session's environment, and where `from: command` secret helpers run.
	// A nil Env is an error: an environment is given, never inherited.
	Env []string
	// RedactKey is the install's HMAC key for [MASKED:xxxxxxxx] tokens; nil
	// means a random key for this server's lifetime.
	RedactKey []byte
	// Store holds `from: store` secrets; nil means such secrets are not
	// found.
	Store secret.Source
	// RuntimeDir is where file-delivered secrets are written; "" means the
	// system temporary directory.
	RuntimeDir string
	// HelperStderr receives the standard error of `from: command` secret
	// helpers; nil discards it.
	HelperStderr io.Writer
	// Limits bound what clients may ask for; zero fields take the
	// defaults of [DefaultLimits].
	Limits Limits
	// Shim is the shim library (libenvsieve.so) the commands load; ""
	// looks next to the daemon's executable, as envsieve does.
	Shim string
	// AuditPath is the audit log every command is recorded in; "" means
	// the policy's audit.path, and none when that is empty too.
	AuditPath string
	// Home is the user's home directory, for the audit log's "~" paths
	// and the seal's credential files; "" seals none of HOME.
	Home string
	// ConfigDir and DataDir are envsieve's own directories, for the seal
	// of a session whose profile asks for it (the store and keys masked,
	// the policy read-only); "" leaves them out of it.
	ConfigDir, DataDir string
	// Log receives one record per connection, refusal, session and exec
	// (names, ids and exit codes; never a value); nil discards.
	Log *slog.Logger
	// Nested says why the daemon runs inside a tree envsieve started
	// (launch.Host.Nested); "" means it does not. Its commands then take
	// every secret from their session's snapshot: Store is not used and
	// no `from: command` helper runs.
	Nested string
}

// Limits bound the resources clients can take. Each refusal is a JSON-RPC
// error with a stable code (see [Code]). Snapshots are bounded by the
// policy's own limits (max_keys, max_bytes, max_value_bytes of the global
// level).
type Limits struct {
	// MaxMessageBytes bounds one JSON message (one line).
	MaxMessageBytes int
	// MaxClients bounds the registered client ids. When it is reached, the
	// least recently used id that no connection holds is dropped; when
	// every id is held, initialize is refused.
	MaxClients int
	// MaxSessionsPerClient bounds the open sessions of one client id, and
	// MaxSessions those of the whole daemon.
	MaxSessionsPerClient, MaxSessions int
	// MaxExecsPerClient bounds the commands running at once for one client
	// id, and MaxExecs those of the whole daemon.
	MaxExecsPerClient, MaxExecs int
}

// DefaultLimits are the limits of a zero [Limits] field.
var DefaultLimits = Limits{
	MaxMessageBytes:      4 << 20,
	MaxClients:           1024,
	MaxSessionsPerClient: 64,
	MaxSessions:          4096,
	MaxExecsPerClient:    32,
	MaxExecs:             256,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	for _, f := range []struct{ v, def *int }{
		{&l.MaxMessageBytes, &d.MaxMessageBytes}, {&l.MaxClients, &d.MaxClients},
		{&l.MaxSessionsPerClient, &d.MaxSessionsPerClient}, {&l.MaxSessions, &d.MaxSessions},
		{&l.MaxExecsPerClient, &d.MaxExecsPerClient}, {&l.MaxExecs, &d.MaxExecs},
	} {
		if *f.v <= 0 {
			*f.v = *f.def
		}
	}
	return l
}

// Server is the daemon. Create it with [New], then [Server.Listen] and
// [Server.Serve]; [Server.Shutdown] (or the shutdown method) ends it.
type Server struct {
	cfg  Config
	lim  Limits
	key  []byte
	exe  string // the daemon's executable, next to which the shim is found
	log  *slog.Logger
	uid  int
	snap policy.Limits // the limits a snapshot must fit
	// layer1 holds, per base, the daemon's own entries whose key is in
	// that base set.
	layer1 map[policy.Base][]string

	mu       sync.Mutex
	clients  map[string]*client
	sessions map[string]*session
	execs    int                // running commands
	perID    map[string]*counts // sessions and execs by client id
	conns    map[*conn]struct{}
	closing  bool
	useClock uint64 // orders client use, for dropping the least recent

	ln       *net.UnixListener
	lock     *os.File
	path     string
	done     chan struct{} // closed when shutdown begins
	stopped  chan struct{} // closed when shutdown has finished
	shutOnce sync.Once
	connWG   sync.WaitGroup
	execWG   sync.WaitGroup
}

// counts are what one client id holds, whether or not it is registered.
type counts struct{ sessions, execs int }

type client struct {
	id       string
	secret   string // what initialize gave; session/new and a new initialize must show it
	snapshot []string
	conns    int    // connections that registered this id and are open
	used     uint64 // Server.useClock at the last initialize or session/new
}

// testOnlyUID, when set, replaces the daemon's uid in the peer check.
var testOnlyUID = -1

// New checks cfg and prepares a server.
func New(cfg Config) (*Server, error) {
	if cfg.Policy == nil {
		return nil, errors.New("daemon: nil policy")
	}
	if cfg.Env == nil {
		return nil, errors.New("daemon: nil Env (the daemon's environment must be given, never inherited)")
	}
	global, err := cfg.Policy.Effective("")
	if err != nil {
		return nil, fmt.Errorf("daemon: %w", err)
	}
	s := &Server{cfg: cfg, lim: cfg.Limits.withDefaults(), key: cfg.RedactKey, log: cfg.Log,
		uid: os.Getuid(), snap: global.Limits, layer1: map[policy.Base][]string{},
		clients: map[string]*client{}, perID: map[string]*counts{}, sessions: map[string]*session{}, conns: map[*conn]struct{}{},
		done: make(chan struct{}), stopped: make(chan struct{})}
	if testOnlyUID >= 0 {
		s.uid = testOnlyUID
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.exe, _ = os.Executable()
	if s.key == nil {
		s.key = make([]byte, 32)
		if _, err := rand.Read(s.key); err != nil {
			return nil, fmt.Errorf("daemon: redaction key: %w", err)
		}
	}
	cat := cfg.Policy.Catalog()
	env := firstCopies(cfg.Env)
	for base, g := range cat.Bases {
		var l1 []string
		for _, k := range cat.AllKeys(g) {
			if v, ok := env[k]; ok {
				l1 = append(l1, k+"="+v)
			}
		}
		if l1 == nil {
			l1 = []string{}
		}
		s.layer1[base] = l1
	}
	return s, nil
}

// sensitive reports whether a variable's name or value looks like a
// credential: its value is masked in output and in session/env.
func sensitive(k, v string) bool {
	return v != "" && detect.Sensitive(k, v)
}

// firstCopies maps each valid key of env to its first value, as getenv sees it.
func firstCopies(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !policy.ValidName(k) {
			continue
		}
		if _, dup := m[k]; !dup {
			m[k] = v
		}
	}
	return m
}

// Listen takes the socket at path (see [DefaultSocket]): its directory must
// be private to this user (made 0700 when missing), a stale socket left by a
// dead daemon is replaced, and a live one is refused with [ErrDaemonRunning].
// The socket is made 0600.
func (s *Server) Listen(path string) error {
	ln, lock, err := listen(path)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.ln, s.lock, s.path = ln, lock, path
	s.mu.Unlock()
	s.log.Info("listening", "socket", path)
	return nil
}

// Addr returns the socket's path.
func (s *Server) Addr() string { return s.path }

// Serve accepts connections until [Server.Shutdown], then waits for every
// connection and command to end, and returns nil. The socket is removed.
func (s *Server) Serve() error {
	if s.ln == nil {
		return errors.New("daemon: Serve before Listen")
	}
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			select {
			case <-s.done:
				<-s.stopped
				return nil
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// EMFILE and the like: back off rather than spin.
			s.log.Warn("accept", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		s.accept(c)
	}
}

// Shutdown stops the daemon: new requests are refused, every running
// command's process group is killed, the socket is removed and every
// connection is closed. It waits for all of it and is safe to call more
// than once.
func (s *Server) Shutdown() {
	s.shutdown(nil)
	<-s.stopped
}

// shutdown starts the shutdown. keep, when not nil, is the connection that
// asked for it: it is given a second to read its reply before it is closed.
func (s *Server) shutdown(keep *conn) {
	s.shutOnce.Do(func() {
		s.mu.Lock()
		s.closing = true
		close(s.done)
		var runs []*running
		for _, ss := range s.sessions {
			for _, r := range ss.execs {
				runs = append(runs, r)
			}
		}
		conns := make([]*conn, 0, len(s.conns))
		for c := range s.conns {
			conns = append(conns, c)
		}
		ln, lock := s.ln, s.lock
		s.mu.Unlock()
		for _, r := range runs {
			r.cancel(errShutdown)
		}
		if ln != nil {
			ln.Close() // removes the socket
		}
		s.execWG.Wait()
		for _, c := range conns {
			if c != keep {
				c.srv.Stop()
			}
		}
		go func() {
			if keep != nil {
				select {
				case <-keep.ended:
				case <-time.After(time.Second):
				}
				keep.srv.Stop()
			}
			s.connWG.Wait()
			if lock != nil {
				lock.Close()
			}
			s.log.Info("stopped")
			close(s.stopped)
		}()
	})
}

// conn is one client connection.
type conn struct {
	s     *Server
	srv   *jrpc2.Server
	ids   map[string]bool // client ids registered over this connection; guarded by Server.mu
	ended chan struct{}
}

func (s *Server) accept(nc *net.UnixConn) {
	uid, err := peercred.UID(nc)
	if err != nil || uid != s.uid {
		msg := fmt.Sprintf("peer uid %d is not the daemon's uid %d: refused", uid, s.uid)
		if err != nil {
			msg = "cannot check the peer's uid (SO_PEERCRED): refused"
		}
		s.log.Warn("connection refused", "peer_uid", uid, "err", err)
		line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil,
			"error": Error{Code: CodePeerRefused, Message: msg}})
		_ = nc.SetWriteDeadline(time.Now().Add(time.Second))
		_, _ = nc.Write(append(line, '\n'))
		nc.Close()
		return
	}
	c := &conn{s: s, ids: map[string]bool{}, ended: make(chan struct{})}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		nc.Close()
		return
	}
	s.conns[c] = struct{}{}
	s.connWG.Add(1)
	s.mu.Unlock()
	c.srv = jrpc2.NewServer(c.methods(), &jrpc2.ServerOptions{
		AllowPush:      true,
		DisableBuiltin: true,
		Concurrency:    s.lim.MaxExecsPerClient + 8,
	})
	c.srv.Start(newLineChannel(nc, s.lim.MaxMessageBytes))
	go func() {
		_ = c.srv.Wait()
		s.mu.Lock()
		delete(s.conns, c)
		for id := range c.ids {
			if cl := s.clients[id]; cl != nil {
				cl.conns--
			}
		}
		s.mu.Unlock()
		close(c.ended)
		s.connWG.Done()
	}()
}

func (c *conn) methods() handler.Map {
	return handler.Map{
		MethodInitialize:   method(c, c.initialize),
		MethodSessionNew:   method(c, c.sessionNew),
		MethodSessionExec:  method(c, c.sessionExec),
		MethodSessionEnv:   method(c, c.sessionEnv),
		MethodSessionClose: method(c, c.sessionClose),
		MethodSessionCncl:  method(c, c.sessionCancel),
		MethodShutdown: func(context.Context, *jrpc2.Request) (any, error) {
			c.s.log.Info("shutdown requested")
			c.s.shutdown(c)
			return struct{}{}, nil
		},
	}
}

// method adapts a typed handler: parameters are decoded strictly (an unknown
// field is an error, not ignored), a panic becomes an internal error rather
// than a crash, and errors become JSON-RPC errors with the daemon's codes.
func method[P, R any](c *conn, fn func(context.Context, *P) (R, error)) jrpc2.Handler {
	return func(ctx context.Context, req *jrpc2.Request) (res any, err error) {
		defer func() {
			if p := recover(); p != nil {
				c.s.log.Error("panic in handler", "method", req.Method())
				res, err = nil, &jrpc2.Error{Code: jrpc2.InternalError, Message: "internal error in " + req.Method()}
			}
		}()
		select {
		case <-c.s.done:
			return nil, rpcError(CodeShuttingDown, "the daemon is shutting down")
		default:
		}
		p := new(P)
		if !req.HasParams() {
			return nil, rpcError(CodeInvalidParams, req.Method()+": parameters are required")
		}
		if err := req.UnmarshalParams(jrpc2.StrictFields(p)); err != nil {
			return nil, err
		}
		r, err := fn(ctx, p)
		if err != nil {
			return nil, toRPC(err)
		}
		return r, nil
	}
}

// validID reports whether id is 1 to 64 bytes of [A-Za-z0-9_.:-]: a client
// or exec id. (A regexp here would be compiled at every start of envsieve.)
func validID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '.', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("daemon: crypto/rand failed: " + err.Error())
	}
	return hex.EncodeToString(b)
}

func (c *conn) initialize(_ context.Context, p *InitializeParams) (*InitializeResult, error) {
	s := c.s
	if p.Env == nil {
		return nil, rpcError(CodeInvalidParams, `initialize: env is required (send [] for an empty environment)`)
	}
	if p.ClientID != "" && !validID(p.ClientID) {
		return nil, rpcError(CodeInvalidParams, "initialize: client_id must be 1 to 64 characters of [A-Za-z0-9_.:-]")
	}
	if err := checkSnapshot(p.Env, s.snap); err != nil {
		return nil, err
	}
	snap := []string(p.Env)
	s.mu.Lock()
	defer s.mu.Unlock()
	id := p.ClientID
	if id == "" {
		for id == "" || s.clients[id] != nil {
			id = "cli_" + randomHex(4)
		}
	}
	cl := s.clients[id]
	if cl != nil && !sameSecret(cl.secret, p.ClientSecret) {
		return nil, rpcError(CodeUnknownClient, fmt.Sprintf("initialize: client_id %q is registered: give its client_secret to register it again", id))
	}
	var secret string
	if cl == nil {
		if len(c.ids) >= maxClientsPerConn {
			return nil, limitError(CodeTooManyClients, "too many client ids on one connection", "max_clients_per_connection", len(c.ids)+1, maxClientsPerConn)
		}
		if len(s.clients) >= s.lim.MaxClients && !s.dropIdleClientLocked() {
			return nil, limitError(CodeTooManyClients, "too many clients, all connected", "max_clients", len(s.clients), s.lim.MaxClients)
		}
		secret = "cs_" + randomHex(16)
		cl = &client{id: id, secret: secret}
		s.clients[id] = cl
	}
	s.useClock++
	cl.snapshot, cl.used = snap, s.useClock
	if !c.ids[id] {
		c.ids[id] = true
		cl.conns++
	}
	s.log.Info("client registered", "client_id", id, "keys", len(snap))
	return &InitializeResult{ClientID: id, ClientSecret: secret, Protocol: ProtocolVersion}, nil
}

// maxClientsPerConn bounds the client ids one connection may register, so
// that one connection cannot take every client slot.
const maxClientsPerConn = 16

// sameSecret compares a client's secret with the one given, in constant
// time.
func sameSecret(want, got string) bool {
	return len(want) == len(got) && subtle.ConstantTimeCompare([]byte(want), []byte(got)) == 1
}

// dropIdleClientLocked forgets the least recently used client id that no
// connection holds. Its sessions live on: they have their own snapshot, and
// their counts are kept by id.
func (s *Server) dropIdleClientLocked() bool {
	var victim *client
	for _, cl := range s.clients {
		if cl.conns == 0 && (victim == nil || cl.used < victim.used) {
			victim = cl
		}
	}
	if victim == nil {
		return false
	}
	delete(s.clients, victim.id)
	return true
}

// checkSnapshot checks a snapshot against the policy's limits, as the
// engine counts them: entries, bytes (len(key)+len(value)+2 each) and the
// longest value.
func checkSnapshot(env []string, lim policy.Limits) error {
	total, longest := 0, 0
	for _, kv := range env {
		total += len(kv) + 1
		_, v, _ := strings.Cut(kv, "=")
		longest = max(longest, len(v))
	}
	switch {
	case len(env) > lim.MaxKeys:
		return limitError(CodeSnapshotTooLarge, "snapshot too large", "max_keys", len(env), lim.MaxKeys)
	case total > lim.MaxBytes:
		return limitError(CodeSnapshotTooLarge, "snapshot too large", "max_bytes", total, lim.MaxBytes)
	case longest > lim.MaxValueBytes:
		return limitError(CodeSnapshotTooLarge, "snapshot too large", "max_value_bytes", longest, lim.MaxValueBytes)
	}
	return nil
}
