package shimwire

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Variables the launcher sets in the child for the shim: the other half
// of the protocol, read by shim/libenvsieve when it loads.
const (
	EnvPreload = "LD_PRELOAD"
	EnvSock    = "ENVSIEVE_SHIM_SOCK"    // the launcher's socket
	EnvHide    = "ENVSIEVE_SHIM_HIDE"    // keys to hide, comma-separated
	EnvExec    = "ENVSIEVE_SHIM_EXEC"    // "1": exec-time grants are on
	EnvStart   = "ENVSIEVE_SHIM_START"   // envsieve-start, which asks the launcher to start a program
	EnvGranted = "ENVSIEVE_SHIM_GRANTED" // keys granted to this program
	EnvRules   = "ENVSIEVE_SHIM_RULES"   // the rules' command globs, one per line
	EnvDeny    = "ENVSIEVE_SHIM_DENY"    // the rules' deny globs, one per line
	EnvDrop    = "ENVSIEVE_SHIM_DROP"    // the deny-only rules, applied in place: "command\tdeny\tdeny" per line
	// EnvInterp, in a granted #!/usr/bin/env script's environment, names
	// the one exec env may pass the granted keys on to: "NAME:REALPATH".
	EnvInterp = "ENVSIEVE_SHIM_INTERP"
)

// The wire format, version 3 (docs/shim.md). Every message is one
// SOCK_SEQPACKET packet: a version byte (3), a type byte, then fields, each
// ended by a NUL byte.
//
//	'A' access    pid, op, name        getenv and friends, once per (op, name) per process
//	'N' notice    pid, path, reason    an exec that went ahead without grants
//	'S' start     pid, length          envsieve-start asks the launcher to start a program;
//	                                   SCM_RIGHTS carries its working directory
//	'C' continued bytes                the start request's body, in order, up to length:
//	                                   path, argc, argv..., environment entries...
//	'F' files     stdio                after 'G' only: SCM_RIGHTS carries the descriptors
//	                                   stdio names ("012", those of 0-2 open)
//	'K' kill      signal               a signal sent to envsieve-start, for the program
//
// and from the launcher, on a start request's connection only:
//
//	'G' granted   (empty)              the program will start: send descriptors 0-2 ('F')
//	'B' begun     "g" or "o", [pid]    started, in the caller's process group or its own;
//	                                   pid as the caller's pid namespace numbers it, when it can see it;
//	                                   else, under the namespace seal, SCM_RIGHTS carries a pidfd of
//	                                   the program, to poll for its end
//	'D' declined  reason               not started: the caller runs the program itself
//	'E' ended     "x<code>" "s<sig>"   the program's exit
//
// Version 1 answered an exec request ('X') with the granted values ('R'):
// any process of the tree could ask. Version 2 never sends a value to the
// tree; the launcher starts a granted program itself. Version 3 sends the
// caller's descriptors 0-2 only once the launcher has decided to start the
// program ('G', then 'F'): a launcher that is stopped, or slow, before it
// decides holds none of them, so a caller that gave up waiting and ran
// the program itself is not held by the launcher's copies (`out=$(gh)`
// ends when the program does), and a request its caller gave up on
// cannot start, because its descriptors never come.
//
// The launcher parses what any process of the tree sends, so the parser
// takes nothing on trust: bounded sizes, valid names, no empty argv.
const (
	Version  = 3
	MaxMsg   = 16384   // one packet
	MaxStart = 1 << 20 // the body of one start request
)

// Access operations.
const (
	OpGetenv       = 'g'
	OpSecureGetenv = 's'
	OpSetenv       = 'S'
	OpUnsetenv     = 'U'
	OpPutenv       = 'P'
	OpClearenv     = 'C'
)

// OpName is the stable name of an access operation, as the audit log writes it.
func OpName(op byte) string {
	switch op {
	case OpGetenv:
		return "getenv"
	case OpSecureGetenv:
		return "secure_getenv"
	case OpSetenv:
		return "setenv"
	case OpUnsetenv:
		return "unsetenv"
	case OpPutenv:
		return "putenv"
	case OpClearenv:
		return "clearenv"
	}
	return "unknown"
}

// Reads reports whether op reads a value.
func Reads(op byte) bool { return op == OpGetenv || op == OpSecureGetenv }

// Access is one reported access to the environment.
type Access struct {
	PID  int
	Op   byte
	Name string // "" for clearenv
}

// StartHead opens a start request: what the caller sent with its working
// directory.
type StartHead struct {
	PID int
	Len int // of the body that follows in 'C' packets
}

// Files is what the caller sends, with its descriptors 0-2, once the
// launcher has answered [Granted].
type Files struct {
	Stdio string // which of 0, 1 and 2 came, in order ("012" when all did)
}

// Start is the body of a start request: the program envsieve-start stands
// in for, and the environment the caller gave it.
type Start struct {
	Path string // as the caller resolved it; may be relative to its working directory
	Argv []string
	Env  []string
}

// Kill is a signal envsieve-start received, to pass on to the program.
type Kill struct {
	Signal int
}

// Notice reports an exec that went ahead without grants, and why:
// "timeout", "argv-too-large".
type Notice struct {
	PID    int
	Path   string
	Reason string
}

// ErrMessage is wrapped by every parse error.
var ErrMessage = errors.New("bad shim message")

// Parse decodes one packet into an *Access, *Notice, *StartHead, *Files or
// *Kill.
// A 'C' packet is not a message of its own: see [ParseStart].
func Parse(b []byte) (any, error) {
	if len(b) < 3 {
		return nil, fmt.Errorf("%w: %d bytes", ErrMessage, len(b))
	}
	if len(b) > MaxMsg {
		return nil, fmt.Errorf("%w: %d bytes, over %d", ErrMessage, len(b), MaxMsg)
	}
	if b[0] != Version {
		return nil, fmt.Errorf("%w: version %d", ErrMessage, b[0])
	}
	if b[len(b)-1] != 0 {
		return nil, fmt.Errorf("%w: unterminated field", ErrMessage)
	}
	fields := bytes.Split(b[2:len(b)-1], []byte{0})
	if b[1] == 'K' {
		sig, err := strconv.Atoi(string(fields[0]))
		if len(fields) != 1 || err != nil || sig < 1 || sig > 64 {
			return nil, fmt.Errorf("%w: kill wants a signal number", ErrMessage)
		}
		return &Kill{Signal: sig}, nil
	}
	if b[1] == 'F' {
		if len(fields) != 1 || !validStdio(string(fields[0])) {
			return nil, fmt.Errorf("%w: files wants which of 0-2 came", ErrMessage)
		}
		return &Files{Stdio: string(fields[0])}, nil
	}
	pid, err := strconv.Atoi(string(fields[0]))
	if err != nil || pid < 0 || pid > 1<<30 {
		return nil, fmt.Errorf("%w: the pid is not a number", ErrMessage)
	}
	switch typ := b[1]; typ {
	case 'A':
		if len(fields) != 3 || len(fields[1]) != 1 {
			return nil, fmt.Errorf("%w: access wants pid, op and name", ErrMessage)
		}
		a := &Access{PID: pid, Op: fields[1][0], Name: string(fields[2])}
		switch a.Op {
		case OpClearenv:
			if a.Name != "" {
				return nil, fmt.Errorf("%w: clearenv with a name", ErrMessage)
			}
		case OpGetenv, OpSecureGetenv, OpSetenv, OpUnsetenv, OpPutenv:
			if !validName(a.Name) {
				return nil, fmt.Errorf("%w: access to an invalid name", ErrMessage)
			}
		default:
			return nil, fmt.Errorf("%w: op %q", ErrMessage, a.Op)
		}
		return a, nil
	case 'S':
		if len(fields) != 2 {
			return nil, fmt.Errorf("%w: start wants pid and length", ErrMessage)
		}
		n, err := strconv.Atoi(string(fields[1]))
		if err != nil || n < 1 || n > MaxStart {
			return nil, fmt.Errorf("%w: start body length", ErrMessage)
		}
		return &StartHead{PID: pid, Len: n}, nil
	case 'N':
		if len(fields) != 3 || len(fields[2]) == 0 {
			return nil, fmt.Errorf("%w: notice wants pid, path and reason", ErrMessage)
		}
		return &Notice{PID: pid, Path: string(fields[1]), Reason: string(fields[2])}, nil
	default:
		return nil, fmt.Errorf("%w: type %q", ErrMessage, typ)
	}
}

// ParseStart decodes the body of a start request.
func ParseStart(b []byte) (*Start, error) {
	if len(b) == 0 || len(b) > MaxStart || b[len(b)-1] != 0 {
		return nil, fmt.Errorf("%w: start body unterminated or too large", ErrMessage)
	}
	fields := strings.Split(string(b[:len(b)-1]), "\x00")
	if len(fields) < 3 {
		return nil, fmt.Errorf("%w: start wants path, argc and argv[0]", ErrMessage)
	}
	argc, err := strconv.Atoi(fields[1])
	if err != nil || argc < 1 || argc > len(fields)-2 {
		return nil, fmt.Errorf("%w: start argc", ErrMessage)
	}
	st := &Start{Path: fields[0], Argv: fields[2 : 2+argc], Env: fields[2+argc:]}
	if st.Path == "" {
		return nil, fmt.Errorf("%w: start without a path", ErrMessage)
	}
	for _, kv := range st.Env {
		if eq := strings.IndexByte(kv, '='); eq <= 0 {
			return nil, fmt.Errorf("%w: an environment entry without a name", ErrMessage)
		}
	}
	return st, nil
}

// Granted is the launcher's answer to a start request it will start: the
// caller sends its descriptors 0-2 ('F') in reply, and only then.
func Granted() []byte { return []byte{Version, 'G', 0} }

// Begun is the launcher's answer to a start request it started: joined
// says whether the program is in the caller's process group.
func Begun(joined bool) []byte { return begunAt(joined, 0) }

// begunAt is [Begun] with the program's pid as the caller's pid namespace
// numbers it, a second field, when pid > 0 (the caller can see it): the
// caller then sees the program end without the launcher, and waits for
// the launcher's 'E' only the bound longer (docs/shim.md).
func begunAt(joined bool, pid int) []byte {
	b := []byte{Version, 'B', 'o', 0}
	if joined {
		b[2] = 'g'
	}
	if pid > 0 {
		b = append(strconv.AppendInt(b, int64(pid), 10), 0)
	}
	return b
}

// Declined is the launcher's answer to a start request it did not start;
// the reason is cut to fit a packet.
func Declined(reason string) []byte {
	reason = strings.ReplaceAll(reason, "\x00", " ")
	if len(reason) > 256 {
		reason = reason[:256]
	}
	return append(append([]byte{Version, 'D'}, reason...), 0)
}

// Ended reports a started program's exit: its exit code, or the signal
// that ended it (sig > 0).
func Ended(code, sig int) []byte {
	if sig > 0 {
		return append(append([]byte{Version, 'E', 's'}, strconv.Itoa(sig)...), 0)
	}
	return append(append([]byte{Version, 'E', 'x'}, strconv.Itoa(code&0xff)...), 0)
}

func validStdio(s string) bool {
	return s == "" || s == "0" || s == "1" || s == "2" || s == "01" || s == "02" || s == "12" || s == "012"
}

func validName(s string) bool {
	if s == "" || len(s) > 256 || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
