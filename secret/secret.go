// Package secret fetches secret values by name and delivers them to a child.
//
// A [Source] fetches one value by name. Three sources exist: [Env], the
// launcher's own environment (the usual case: the user's shell holds the keys,
// and the child gets one only when it is asked for); [Command], a helper such
// as `pass show x` or `op read op://...` ([HostKeychainArgv] and
// [OnePasswordArgv] give the argv of the OS keychain's and 1Password's); and
// [Store], an encrypted file managed by `envsieve secrets`. [Files] delivers values as private files instead of
// variables. internal/dotenv reads a dotenv file (run --env-file) strictly:
// a line that does not parse is an error at its line and column.
//
// # Security
//
// A value never appears in an error: errors name the secret, the source and
// the helper, never what was fetched. A store or key file readable by anyone
// but its owner is refused, not fixed silently.
package secret

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"
)

// Source fetches a secret's value by name.
type Source interface {
	Fetch(ctx context.Context, name string) (string, error)
}

// ErrNotFound is returned (wrapped) when a source has no value for a name.
// Use errors.Is.
var ErrNotFound = errors.New("not found")

// Env is the launcher's own environment, "KEY=value" entries as os.Environ
// returns them, as a Source. The first entry of a key wins, as for getenv.
type Env []string

// Fetch returns the value of name.
func (e Env) Fetch(_ context.Context, name string) (string, error) {
	for _, kv := range e {
		if len(kv) > len(name) && kv[len(name)] == '=' && kv[:len(name)] == name {
			return kv[len(name)+1:], nil
		}
	}
	return "", fmt.Errorf("secret %s: %w in the launcher's environment", name, ErrNotFound)
}

// maxHelperOutput bounds what a helper may print.
const maxHelperOutput = 1 << 20

// Command runs a helper program and takes its standard output, without one
// trailing newline, as the value.
type Command struct {
	// Argv is the helper and its arguments; it is run directly, not through
	// a shell.
	Argv []string
	// Timeout bounds the helper; zero means 10 seconds.
	Timeout time.Duration
	// Env is the environment the helper's is taken from (usually the
	// launcher's own). A nil Env is an error. The helper gets only a part of
	// it: the user's identity, locale, terminal, directories, agents and
	// proxies, the variables that start with its own name (VAULT_ for
	// vault), and a PATH of the directories of Env's that the agent's tree
	// cannot write (see resolveHelper for how the helper itself is found).
	Env []string
	// Stderr receives the helper's prompts and errors; nil discards them.
	Stderr io.Writer
}

// Fetch runs the helper: found as resolveHelper says (a planted one in a
// directory the agent's tree can write is never run), with the minimal
// environment Env describes.
func (c *Command) Fetch(ctx context.Context, name string) (string, error) {
	if len(c.Argv) == 0 {
		return "", fmt.Errorf("secret %s: no helper command", name)
	}
	if c.Env == nil {
		return "", fmt.Errorf("secret %s: helper %s: nil environment", name, c.Argv[0])
	}
	timeout := c.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	path, err := resolveHelper(c.Argv[0], c.Env)
	if err != nil {
		return "", fmt.Errorf("secret %s: %w", name, err)
	}
	cmd := exec.CommandContext(ctx, path, c.Argv[1:]...)
	cmd.Args[0] = c.Argv[0]
	cmd.Env = helperEnv(c.Argv[0], c.Env)
	var out limitedBuffer
	cmd.Stdout = &out
	cmd.Stderr = c.Stderr
	cmd.WaitDelay = time.Second
	ownProcessGroup(cmd) // a timeout kills the helper and what it started
	err = cmd.Run()
	helper := strings.Join(c.Argv, " ")
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return "", fmt.Errorf("secret %s: helper %q timed out after %s", name, helper, timeout)
	case err != nil:
		return "", fmt.Errorf("secret %s: helper %q failed: %w", name, helper, err)
	case out.over:
		return "", fmt.Errorf("secret %s: helper %q printed more than %d bytes", name, helper, maxHelperOutput)
	}
	v := strings.TrimSuffix(strings.TrimSuffix(out.String(), "\n"), "\r")
	if v == "" {
		return "", fmt.Errorf("secret %s: helper %q printed nothing: %w", name, helper, ErrNotFound)
	}
	if strings.IndexByte(v, 0) >= 0 {
		return "", fmt.Errorf("secret %s: helper %q printed a NUL byte", name, helper)
	}
	return v, nil
}

// limitedBuffer keeps at most maxHelperOutput bytes. It wraps rather than
// embeds bytes.Buffer, whose ReadFrom io.Copy would use to bypass Write.
type limitedBuffer struct {
	buf  bytes.Buffer
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if b.buf.Len()+len(p) > maxHelperOutput {
		b.over = true
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *limitedBuffer) String() string { return b.buf.String() }
