package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/envsieve/envsieve/launch"
)

// Method names. docs/protocol.md describes each with examples.
const (
	MethodInitialize   = "initialize"
	MethodSessionNew   = "session/new"
	MethodSessionExec  = "session/exec"
	MethodSessionEnv   = "session/env"
	MethodSessionClose = "session/close"
	MethodSessionCncl  = "session/cancel"
	MethodShutdown     = "shutdown"
	// MethodOutput is the notification the daemon sends for every chunk of
	// a running command's stdout or stderr.
	MethodOutput = "session/output"
)

// ProtocolVersion is the version initialize reports. It changes only when a
// method or field changes meaning; new optional fields do not change it.
const ProtocolVersion = 1

// Code is a JSON-RPC error code. The daemon's own codes are stable: clients
// may branch on them. The standard JSON-RPC codes (-32700 parse error,
// -32600 invalid request, -32601 method not found, -32602 invalid params,
// -32603 internal error) keep their meaning.
type Code int32

// The daemon's error codes. docs/protocol.md lists them with their data.
const (
	CodeInvalidParams Code = -32602 // a missing, malformed or contradictory parameter

	CodePeerRefused     Code = 1001 // the connecting process runs as another user
	CodeMessageTooLarge Code = 1002 // a message longer than Limits.MaxMessageBytes
	CodeShuttingDown    Code = 1003 // the daemon is shutting down

	CodeUnknownClient  Code = 1101 // no initialize for this client_id
	CodeUnknownSession Code = 1102 // no such session (never opened, or closed)
	CodeUnknownProfile Code = 1103 // the policy has no such profile
	CodeEscalation     Code = 1104 // a sub-agent's profile widens its parent's
	CodeUnknownExec    Code = 1105 // session/cancel: no such running exec

	CodeSnapshotTooLarge Code = 1201 // a snapshot over the policy's limits
	CodeTooManyClients   Code = 1202 // Limits.MaxClients client entries, all connected
	CodeTooManySessions  Code = 1203 // Limits.MaxSessionsPerClient or Limits.MaxSessions
	CodeTooManyExecs     Code = 1204 // Limits.MaxExecsPerClient or Limits.MaxExecs running
	CodeEnvLimit         Code = 1205 // the built environment exceeds the policy's limits

	CodeSecret        Code = 1301 // a requested secret cannot be given (denied, not found)
	CodeUnknownTool   Code = 1302 // the policy has no such tool
	CodeNotFound      Code = 1401 // the program is not in the child's PATH (127)
	CodeNotExecutable Code = 1402 // the program cannot be executed (126)
	CodeExecFailed    Code = 1403 // the command could not be started for another reason
	CodePolicy        Code = 1404 // the policy refuses the launch for another reason
)

// Error is a JSON-RPC error object, as the daemon sends it and as [Client]
// returns it. Its Message never holds a variable's value.
type Error struct {
	Code    Code            `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *Error) Error() string { return fmt.Sprintf("%s (code %d)", e.Message, e.Code) }

// Unwrap maps the error's code to the launch package's sentinel, so that a
// caller's one exit switch treats a daemon's refusal as a local launch's:
// CodeNotExecutable is launch.ErrNotExecutable (126).
func (e *Error) Unwrap() error {
	if e.Code == CodeNotExecutable {
		return launch.ErrNotExecutable
	}
	return nil
}

// As makes CodeNotFound a *launch.NotFoundError (127) for errors.As.
func (e *Error) As(target any) bool {
	if nf, ok := target.(**launch.NotFoundError); ok && e.Code == CodeNotFound {
		*nf = &launch.NotFoundError{Name: e.Message, Err: e}
		return true
	}
	return false
}

// LimitData is the data of the limit errors (CodeSnapshotTooLarge,
// CodeTooManyClients, CodeTooManySessions, CodeTooManyExecs, CodeEnvLimit):
// which limit, the figure that exceeded it and the maximum.
type LimitData struct {
	Limit  string `json:"limit"`
	Actual int    `json:"actual"`
	Max    int    `json:"max"`
}

// Snapshot is a client's environment, as os.Environ returns it: "KEY=value"
// entries in the order the client's getenv sees them (the first copy of a
// duplicated key wins, as in the engine). On the wire it is a JSON array of
// "KEY=value" strings, or an object {"KEY": "value"}.
type Snapshot []string

// UnmarshalJSON accepts an array of "KEY=value" strings or an object of
// string values (whose keys then come in sorted order). null is refused:
// an environment must be given, never assumed.
func (s *Snapshot) UnmarshalJSON(b []byte) error {
	t := strings.TrimLeft(string(b), " \t\r\n")
	switch {
	case strings.HasPrefix(t, "["):
		var list []string
		if err := json.Unmarshal(b, &list); err != nil {
			return fmt.Errorf("env: %w", err)
		}
		if list == nil {
			list = []string{}
		}
		*s = list
	case strings.HasPrefix(t, "{"):
		var m map[string]string
		if err := json.Unmarshal(b, &m); err != nil {
			return fmt.Errorf("env: %w", err)
		}
		list := make([]string, 0, len(m))
		for k, v := range m {
			list = append(list, k+"="+v)
		}
		sort.Strings(list)
		*s = list
	default:
		return errors.New(`env: want an array of "KEY=value" strings or an object of strings`)
	}
	return nil
}

// InitializeParams are the parameters of initialize.
type InitializeParams struct {
	// ClientID is the id to register under; "" means a new one,
	// "cli_" and 8 random hex digits. Registering an id again replaces its
	// snapshot; sessions already open keep their own copy.
	ClientID string `json:"client_id,omitempty"`
	// ClientSecret is the secret initialize gave for ClientID, required to
	// register an id that is already registered.
	ClientSecret string `json:"client_secret,omitempty"`
	// Env is the client's environment. Required; [] is an empty one.
	Env Snapshot `json:"env"`
}

// InitializeResult is the result of initialize.
type InitializeResult struct {
	ClientID string `json:"client_id"`
	// ClientSecret binds the id to whoever registered it: session/new and
	// a later initialize of the same id need it. It is given once, when the
	// id is registered, and is never in an argv.
	ClientSecret string `json:"client_secret,omitempty"`
	Protocol     int    `json:"protocol"`
}

// SessionNewParams are the parameters of session/new.
type SessionNewParams struct {
	ClientID string `json:"client_id"`
	// ClientSecret is the secret initialize gave for ClientID. Required.
	ClientSecret string `json:"client_secret"`
	// Profile names the policy's profile; "" means the global level only.
	Profile string `json:"profile"`
	// ParentSession makes the session a sub-agent's: its profile may only
	// narrow the parent's, and it starts from the parent's snapshot.
	ParentSession string `json:"parent_session,omitempty"`
}

// SessionNewResult is the result of session/new.
type SessionNewResult struct {
	SessionID string `json:"session_id"`
}

// ExecParams are the parameters of session/exec. Exactly one of Argv and
// Shell is given.
type ExecParams struct {
	SessionID string `json:"session_id"`
	// Argv is the program and its arguments; the program is looked up in
	// the child's PATH.
	Argv []string `json:"argv,omitempty"`
	// Shell is a shell string, run as the policy's shell (default /bin/sh)
	// with -c; command rules apply as for `envsieve sh -c`.
	Shell string `json:"shell,omitempty"`
	// Tool gives the secrets of the policy's tools.NAME.injects_env.
	Tool string `json:"tool,omitempty"`
	// Secrets are requested secret names.
	Secrets []string `json:"secrets,omitempty"`
	// Stdin is the command's standard input as text; "" (and no StdinB64)
	// means the null device.
	Stdin string `json:"stdin,omitempty"`
	// StdinB64 is standard input as base64, for bytes that are not UTF-8.
	StdinB64 string `json:"stdin_b64,omitempty"`
	// Cwd is the working directory, an absolute path; "" means the
	// snapshot's PWD when it is absolute, else "/".
	Cwd string `json:"cwd,omitempty"`
	// Timeout in seconds; 0 means none. At the timeout the command's
	// process group is killed.
	Timeout float64 `json:"timeout,omitempty"`
	// ExecID names this exec in session/output notifications and
	// session/cancel; "" means the daemon assigns one. It must be unique
	// among the session's running execs.
	ExecID string `json:"exec_id,omitempty"`
}

// ExecResult is the result of session/exec.
type ExecResult struct {
	ExecID string `json:"exec_id"`
	// ExitCode is the command's exit status, 128+N when signal N killed it.
	ExitCode int `json:"exit_code"`
	// Signal names the signal that killed the command ("SIGKILL").
	Signal string `json:"signal,omitempty"`
	// TimedOut is true when the timeout killed the command.
	TimedOut bool `json:"timed_out,omitempty"`
	// Cancelled is true when session/cancel or session/close killed it.
	Cancelled bool `json:"cancelled,omitempty"`
}

// Output is the session/output notification: one chunk of a running
// command's stdout or stderr, after redaction. Data holds the chunk when it
// is valid UTF-8, else DataB64 holds it in base64. A UTF-8 character split
// across two writes of the command is sent whole, in the later chunk.
type Output struct {
	SessionID string `json:"session_id"`
	ExecID    string `json:"exec_id"`
	Stream    string `json:"stream"` // "stdout" or "stderr"
	Data      string `json:"data,omitempty"`
	DataB64   string `json:"data_b64,omitempty"`
}

// SessionParams name a session (session/env, session/close).
type SessionParams struct {
	SessionID string `json:"session_id"`
}

// CancelParams are the parameters of session/cancel.
type CancelParams struct {
	SessionID string `json:"session_id"`
	ExecID    string `json:"exec_id"`
}

// EnvEntry is one variable of session/env. Value is masked ("<sensitive,
// N bytes>") when the name or the value looks like a credential.
type EnvEntry struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Masked bool   `json:"masked,omitempty"`
	// Layer is "daemon" for a variable from the daemon's own environment
	// (layer 1), "client" for one from the client's snapshot (layer 2), and
	// "policy" for a value the policy sets.
	Layer string `json:"layer"`
}

// SessionEnvResult is the result of session/env: the environment a command
// without a rule, tool or secret would get, sorted by name.
type SessionEnvResult struct {
	SessionID string     `json:"session_id"`
	Profile   string     `json:"profile"`
	Env       []EnvEntry `json:"env"`
}
