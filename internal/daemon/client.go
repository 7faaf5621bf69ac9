package daemon

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"
)

// Client is a connection to a daemon. It is safe for concurrent use: calls,
// including several Execs, may run at once over one connection. Output
// notifications are handled in the order they arrive, all before the reply
// to their exec, so an Exec returns only once its writers hold all output.
type Client struct {
	nc  net.Conn
	wmu sync.Mutex

	mu      sync.Mutex
	nextID  int64
	pending map[string]chan *wireMsg
	sinks   map[string]*sink // by session_id + "\x00" + exec_id
	err     error            // why the connection ended; nil while it lives
	done    chan struct{}
	secrets map[string]string // client id -> client_secret, for the ids this Client registered or was given
}

type sink struct{ stdout, stderr io.Writer }

// wireMsg is any JSON-RPC message on the wire.
type wireMsg struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// ErrClosed is returned by calls on a Client whose connection has ended
// without an error of the daemon's. Use errors.Is.
var ErrClosed = errors.New("daemon connection closed")

// Dial connects to the daemon's socket.
func Dial(ctx context.Context, path string) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("connect to the envsieve daemon: %w", err)
	}
	c := &Client{nc: nc, pending: map[string]chan *wireMsg{}, sinks: map[string]*sink{}, done: make(chan struct{}), secrets: map[string]string{}}
	go c.read()
	return c, nil
}

// Close closes the connection. Commands still running for it are killed by
// the daemon.
func (c *Client) Close() error {
	err := c.nc.Close()
	<-c.done
	return err
}

func (c *Client) read() {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var err error
	for {
		var line []byte
		line, err = r.ReadBytes('\n')
		if len(line) > 0 {
			var m wireMsg
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				err = fmt.Errorf("daemon sent a message that is not JSON: %w", jerr)
				break
			}
			if stop := c.dispatch(&m); stop != nil {
				err = stop
				break
			}
		}
		if err != nil {
			break
		}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
		err = ErrClosed
	}
	c.nc.Close()
	c.mu.Lock()
	if c.err == nil {
		c.err = err
	}
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.mu.Unlock()
	close(c.done)
}

// dispatch handles one message; a non-nil result ends the connection.
func (c *Client) dispatch(m *wireMsg) error {
	switch {
	case m.Method == MethodOutput:
		var o Output
		if json.Unmarshal(m.Params, &o) != nil {
			return nil
		}
		c.mu.Lock()
		sk := c.sinks[o.SessionID+"\x00"+o.ExecID]
		c.mu.Unlock()
		if sk == nil {
			return nil
		}
		data := []byte(o.Data)
		if o.DataB64 != "" {
			b, err := base64.StdEncoding.DecodeString(o.DataB64)
			if err != nil {
				return nil
			}
			data = b
		}
		w := sk.stdout
		if o.Stream == "stderr" {
			w = sk.stderr
		}
		if w != nil {
			_, _ = w.Write(data)
		}
	case m.Method != "":
		// Another notification: none are defined yet.
	case string(m.ID) == "null" || len(m.ID) == 0:
		// An error about the connection itself (peer refused, message
		// too large): the daemon closes it.
		if m.Error != nil {
			c.mu.Lock()
			c.err = m.Error
			c.mu.Unlock()
			return m.Error
		}
	default:
		c.mu.Lock()
		ch := c.pending[string(m.ID)]
		delete(c.pending, string(m.ID))
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
	return nil
}

// Call sends a request and decodes its result into result (which may be
// nil). A daemon error is an *Error.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	m, err := c.call(ctx, method, params, nil)
	if err != nil {
		return err
	}
	if result != nil {
		if err := json.Unmarshal(m.Result, result); err != nil {
			return fmt.Errorf("%s: decode result: %w", method, err)
		}
	}
	return nil
}

// call sends one request and waits for its reply. When ctx ends first,
// onCancel (if not nil) is called and the reply is still awaited.
func (c *Client) call(ctx context.Context, method string, params any, onCancel func()) (*wireMsg, error) {
	p, err := json.Marshal(params)
	if err != nil {
		return nil, fmt.Errorf("%s: encode params: %w", method, err)
	}
	ch := make(chan *wireMsg, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.nextID++
	id := strconv.FormatInt(c.nextID, 10)
	c.pending[id] = ch
	c.mu.Unlock()
	line, err := json.Marshal(wireMsg{JSONRPC: "2.0", ID: json.RawMessage(id), Method: method, Params: p})
	if err != nil {
		return nil, err
	}
	c.wmu.Lock()
	_, err = c.nc.Write(append(line, '\n'))
	c.wmu.Unlock()
	if err != nil {
		c.forget(id)
		// The daemon may have said why it closed the connection (a
		// refused peer): that is the better error.
		select {
		case <-c.done:
			var de *Error
			if errors.As(c.err, &de) {
				return nil, de
			}
		case <-time.After(time.Second):
		}
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	var m *wireMsg
	select {
	case m = <-ch:
	case <-ctx.Done():
		if onCancel == nil {
			c.forget(id)
			return nil, ctx.Err()
		}
		onCancel()
		m = <-ch
	}
	if m == nil {
		c.mu.Lock()
		err := c.err
		c.mu.Unlock()
		var de *Error
		if errors.As(err, &de) {
			return nil, de
		}
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	if m.Error != nil {
		return nil, m.Error
	}
	return m, nil
}

func (c *Client) forget(id string) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Initialize registers env (os.Environ() for the caller's own) under
// clientID, or under a new id when clientID is "", and returns the id.
func (c *Client) Initialize(ctx context.Context, clientID string, env []string) (string, error) {
	if env == nil {
		env = []string{}
	}
	var r InitializeResult
	err := c.Call(ctx, MethodInitialize, InitializeParams{ClientID: clientID, ClientSecret: c.secret(clientID), Env: env}, &r)
	if err == nil && r.ClientSecret != "" {
		c.SetClientSecret(r.ClientID, r.ClientSecret)
	}
	return r.ClientID, err
}

// ClientSecret returns the client_secret of an id this Client registered
// or was given (SetClientSecret), "" when it has none.
func (c *Client) ClientSecret(clientID string) string { return c.secret(clientID) }

// SetClientSecret gives the Client the secret of an id registered by
// another connection (the CLI passes it between invocations in
// ENVSIEVE_CLIENT_SECRET).
func (c *Client) SetClientSecret(clientID, secret string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.secrets[clientID] = secret
}

func (c *Client) secret(clientID string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.secrets[clientID]
}

// NewSession opens a session of clientID with profile; parent, when not "",
// makes it a sub-agent session of that session. The client's secret is the
// one Initialize got (or SetClientSecret gave).
func (c *Client) NewSession(ctx context.Context, clientID, profile, parent string) (string, error) {
	var r SessionNewResult
	err := c.Call(ctx, MethodSessionNew, SessionNewParams{ClientID: clientID, ClientSecret: c.secret(clientID), Profile: profile, ParentSession: parent}, &r)
	return r.SessionID, err
}

// Exec runs a command in a session, writing its (redacted) output to stdout
// and stderr (nil discards) as it arrives. When ctx ends first, the command
// is cancelled (its process group killed) and Exec returns its result, with
// Cancelled set.
func (c *Client) Exec(ctx context.Context, p ExecParams, stdout, stderr io.Writer) (*ExecResult, error) {
	if p.ExecID == "" {
		p.ExecID = "c" + randomHex(6)
	}
	key := p.SessionID + "\x00" + p.ExecID
	c.mu.Lock()
	c.sinks[key] = &sink{stdout: stdout, stderr: stderr}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.sinks, key)
		c.mu.Unlock()
	}()
	cancel := func() {
		// Errors are moot: the command may have just ended.
		go func() {
			cctx, stop := context.WithTimeout(context.Background(), 5*time.Second)
			defer stop()
			_ = c.Call(cctx, MethodSessionCncl, CancelParams{SessionID: p.SessionID, ExecID: p.ExecID}, nil)
		}()
	}
	m, err := c.call(ctx, MethodSessionExec, p, cancel)
	if err != nil {
		return nil, err
	}
	var r ExecResult
	if err := json.Unmarshal(m.Result, &r); err != nil {
		return nil, fmt.Errorf("session/exec: decode result: %w", err)
	}
	return &r, nil
}

// Env returns the environment a command of the session would get, with
// sensitive values masked.
func (c *Client) Env(ctx context.Context, sessionID string) (*SessionEnvResult, error) {
	var r SessionEnvResult
	err := c.Call(ctx, MethodSessionEnv, SessionParams{SessionID: sessionID}, &r)
	return &r, err
}

// CloseSession closes a session (and its sub-agent sessions), killing the
// commands still running in them.
func (c *Client) CloseSession(ctx context.Context, sessionID string) error {
	return c.Call(ctx, MethodSessionClose, SessionParams{SessionID: sessionID}, nil)
}

// Shutdown asks the daemon to stop.
func (c *Client) Shutdown(ctx context.Context) error {
	return c.Call(ctx, MethodShutdown, struct{}{}, nil)
}
