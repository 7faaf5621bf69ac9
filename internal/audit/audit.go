// Package audit writes envsieve's audit log: JSON Lines (log/slog), one
// event per launch, per decision, per injected secret, for what redaction
// masks, and per exec or exit, all carrying the launch's id so they can be
// put back together.
//
// # Security
//
// The API takes names, reasons, policy positions and fingerprints, never a
// value: there is no method that could put a secret in the log. A
// fingerprint is the same HMAC as in [MASKED:xxxxxxxx], so a log line can be
// matched with masked output without revealing anything.
package audit

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
)

// Log is an open audit log. A nil *Log discards everything, so callers need
// not check whether auditing is on.
//
// A write that fails (a full disk, an I/O error) is never silent: by
// default the log fails closed, calling the function given to [Log.OnFail]
// once with an error naming the file, and [Log.Err] reports it from then
// on; with [Log.WarnOnError] (the policy's `audit: {on_error: warn}`) it
// says so once on stderr instead, and counts the events lost, which the
// exit event carries.
type Log struct {
	l      *slog.Logger
	closer io.Closer
	id     string
	w      *guard
}

// guard is the log's writer: it passes each event on, and remembers the
// first failure and how many events were lost.
type guard struct {
	w    io.Writer
	path string
	// stderr is where a warning goes (os.Stderr; tests replace it).
	stderr io.Writer

	mu     sync.Mutex
	err    error
	lost   int
	warn   bool
	onFail func(error)
	// torn says the last event was written in part: the next one starts
	// on a line of its own.
	torn bool
}

func (g *guard) Write(p []byte) (int, error) {
	g.mu.Lock()
	torn := g.torn
	g.mu.Unlock()
	var n int
	var err error
	if torn {
		_, err = g.w.Write([]byte{'\n'})
	}
	if err == nil {
		n, err = g.w.Write(p)
		if err == nil && n < len(p) {
			err = io.ErrShortWrite
		}
	}
	g.mu.Lock()
	if torn && err == nil {
		g.torn = false
	}
	if err == nil {
		g.mu.Unlock()
		return n, nil
	}
	g.torn = g.torn || n > 0
	g.lost++
	first := g.err == nil
	if first {
		// The file is named once: an *os.PathError would name it again.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		g.err = fmt.Errorf("audit log %s: write: %w", g.path, err)
	}
	warn, onFail, ferr, stderr := g.warn, g.onFail, g.err, g.stderr
	g.mu.Unlock()
	if first && warn {
		fmt.Fprintf(stderr, warnFormat, ferr)
	}
	if first && !warn && onFail == nil {
		fmt.Fprintf(stderr, "envsieve: %v\n", ferr)
	}
	if first && !warn && onFail != nil {
		// Not from here: the caller holds the handler's lock, and onFail
		// may end the launch.
		go onFail(ferr)
	}
	return n, err
}

// warnFormat is the warning a failed write gives under `audit: {on_error:
// warn}`, said once.
const warnFormat = "envsieve: %v: the launch goes on (audit: {on_error: warn}); the events lost are counted in the exit event\n"

// Open opens the audit log at path for appending: "-" means stderr; a
// leading "~/" is the user's home. The file is created 0600 in a 0700
// directory.
func Open(path, home string) (*Log, error) {
	var w io.Writer
	var closer io.Closer
	if path == "-" {
		w = os.Stderr
	} else {
		if rest, ok := strings.CutPrefix(path, "~/"); ok {
			if home == "" {
				return nil, fmt.Errorf("audit log %s: HOME is not set", path)
			}
			path = filepath.Join(home, rest)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("audit log %s: %w", path, err)
		}
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|oNoFollow, 0o600)
		if err != nil {
			return nil, fmt.Errorf("audit log %s: %w", path, err)
		}
		w, closer = f, f
	}
	id := make([]byte, 6)
	if _, err := rand.Read(id); err != nil {
		return nil, err
	}
	return newLog(w, closer, path, os.Stderr, hex.EncodeToString(id)), nil
}

// newLog is a log writing to w, named path in its errors, warning on
// stderr.
func newLog(w io.Writer, closer io.Closer, path string, stderr io.Writer, id string) *Log {
	g := &guard{w: w, path: path, stderr: stderr}
	h := slog.NewJSONHandler(g, &slog.HandlerOptions{Level: slog.LevelInfo})
	launch := "l_" + id
	return &Log{l: slog.New(h).With("launch", launch), closer: closer, id: launch, w: g}
}

// OnFail sets what a failed write does (unless [Log.WarnOnError]): fail is
// called once, in a goroutine of its own, with an error naming the file.
// A write that failed before is reported at once.
func (a *Log) OnFail(fail func(error)) {
	if a == nil {
		return
	}
	a.w.mu.Lock()
	a.w.onFail = fail
	err := a.w.err
	a.w.mu.Unlock()
	if err != nil && fail != nil {
		go fail(err)
	}
}

// WarnOnError makes a failed write a warning, said once on stderr, and
// the events lost a count in the exit event: the launch goes on.
func (a *Log) WarnOnError() {
	if a == nil {
		return
	}
	a.w.mu.Lock()
	a.w.warn = true
	a.w.mu.Unlock()
}

// WarnTo is [Log.WarnOnError] with the warning said on w (which must be
// safe to call from any goroutine) instead of stderr: a daemon's command
// tells its own client. A write that failed before is said on w at once.
func (a *Log) WarnTo(w io.Writer) {
	if a == nil {
		return
	}
	a.w.mu.Lock()
	a.w.warn, a.w.stderr = true, w
	err := a.w.err
	a.w.mu.Unlock()
	if err != nil {
		fmt.Fprintf(w, warnFormat, err)
	}
}

// Err returns the first write that failed, naming the file; nil when none
// has.
func (a *Log) Err() error {
	if a == nil {
		return nil
	}
	a.w.mu.Lock()
	defer a.w.mu.Unlock()
	return a.w.err
}

// Lost returns how many events could not be written.
func (a *Log) Lost() int {
	if a == nil {
		return 0
	}
	a.w.mu.Lock()
	defer a.w.mu.Unlock()
	return a.w.lost
}

// ID returns the launch id every event carries.
func (a *Log) ID() string {
	if a == nil {
		return ""
	}
	return a.id
}

// Close closes the log file.
func (a *Log) Close() error {
	if a == nil || a.closer == nil {
		return nil
	}
	return a.closer.Close()
}

func source(s *policy.Source) slog.Attr {
	if s == nil {
		return slog.Attr{}
	}
	return slog.Group("source", "level", s.Level, "list", s.List, "entry", s.Entry, "pos", s.Pos.String())
}

// Launch records a launch: the command, the policy and local file, the
// profile, the rule and the mode.
func (a *Log) Launch(argv []string, p *policy.Policy, res *sieve.Result) {
	if a == nil {
		return
	}
	rule := ""
	if res.Rule != nil {
		rule = res.Rule.Name
	}
	a.l.Info("launch", "argv", argv, "policy", p.File, "local_policy", p.Local, "profile", res.Profile,
		"rule", rule, "mode", string(res.Mode), "pid", os.Getpid())
}

// Decisions records one event per decision of a build.
func (a *Log) Decisions(res *sieve.Result) {
	if a == nil {
		return
	}
	for _, d := range res.Decisions {
		attrs := []any{"key", d.Key, "kept", d.Kept, "reason", d.Reason.String()}
		if d.WouldDrop {
			attrs = append(attrs, "would_drop", true)
		}
		if d.Added {
			attrs = append(attrs, "added", true)
		}
		if detail := d.Detail(); detail != "" {
			attrs = append(attrs, "detail", detail)
		}
		if d.Source != nil {
			attrs = append(attrs, source(d.Source))
		}
		a.l.Info("decision", attrs...)
	}
}

// Injected records a secret handed to the child: its name, where it came
// from, how it was delivered, and its fingerprint.
func (a *Log) Injected(name, from, deliver, fingerprint string) {
	if a == nil {
		return
	}
	a.l.Info("inject", "name", name, "from", from, "deliver", deliver, "fingerprint", fingerprint)
}

// Redaction records which names' values are masked in the output, and
// which are too short to mask.
func (a *Log) Redaction(masked, tooShort []string) {
	if a == nil {
		return
	}
	a.l.Info("redaction", "masked", masked, "too_short", tooShort)
}

// Exec records that the launcher replaced itself with the program: no exit
// event follows, the program's status is its own.
func (a *Log) Exec(path string) {
	if a == nil {
		return
	}
	a.l.Info("exec", "path", path)
}

// Exit records the child's exit status (128+N for signal N), or the error
// that stopped the launch, and how many events were lost (audit_lost)
// when writes failed.
func (a *Log) Exit(status int, err error) {
	if a == nil {
		return
	}
	attrs := []any{"status", status}
	if err != nil {
		attrs = append(attrs, "error", err.Error())
	}
	if lost := a.Lost(); lost > 0 {
		attrs = append(attrs, "audit_lost", lost)
	}
	a.l.Info("exit", attrs...)
}

// Shim records that the shim was loaded into the child: the library, the
// keys it hides, and whether it asks for exec-time grants.
func (a *Log) Shim(lib string, hide []string, grants bool) {
	if a == nil {
		return
	}
	a.l.Info("shim", "lib", lib, "hide", hide, "exec_grants", grants)
}

// Seal records the seal the tree runs under: its mode (on, required) and
// mechanism (namespaces, landlock), or "none" with why it has none.
func (a *Log) Seal(mode, mechanism, why string) {
	if a == nil {
		return
	}
	if why != "" {
		a.l.Info("seal", "mode", mode, "mechanism", mechanism, "why", why)
		return
	}
	a.l.Info("seal", "mode", mode, "mechanism", mechanism)
}

// Access records one access to the environment that the shim reported:
// which process, the operation ("getenv", "setenv", ...), the key, and what
// the policy did with it: "given", "dropped" (the parent had it, the
// policy dropped it; logs of earlier versions call it withheld),
// "would-drop" (audit mode: given, but enforce would drop it) or "unset"
// (nobody had it).
func (a *Log) Access(pid int, op, key, verdict string) {
	if a == nil {
		return
	}
	a.l.Info("access", "pid", pid, "op", op, "key", key, "verdict", verdict)
}

// Grant records the keys one exec received from a command rule.
func (a *Log) Grant(pid int, path, argv0, rule string, keys, removed []string) {
	if a == nil {
		return
	}
	a.l.Info("grant", "pid", pid, "path", path, "argv0", argv0, "rule", rule, "keys", keys, "removed", removed)
}

// NoGrant records an exec that went ahead without grants, and why.
func (a *Log) NoGrant(pid int, path, reason string) {
	if a == nil {
		return
	}
	a.l.Info("no_grant", "pid", pid, "path", path, "reason", reason)
}

// Brokered records the secrets whose real value the broker keeps: the
// child holds their fakes.
func (a *Log) Brokered(names []string) {
	if a == nil {
		return
	}
	a.l.Info("brokered", "names", names)
}

// Broker records what the credential broker did or refused: kind
// ("swapped", "unswapped", "refused", "denied"), the secret's name, the
// request's host and the place in the request (never a value).
func (a *Log) Broker(kind, secret, host, place string) {
	if a == nil {
		return
	}
	a.l.Info("broker", "kind", kind, "secret", secret, "host", host, "place", place)
}

// Warn records a warning the launcher printed: a setting that does not hold.
// msg is built by envsieve from names, never from values.
func (a *Log) Warn(msg string) {
	if a == nil {
		return
	}
	a.l.Warn("warning", "message", msg)
}
