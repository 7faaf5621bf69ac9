// Package daemon is envsieve's daemon: a JSON-RPC 2.0 server on a unix
// socket that AI coding agents (and the frameworks that run them) ask to run
// commands, and a small [Client] for it. Each client registers its own
// environment snapshot, opens sessions, and runs commands in them; a
// session's commands get the environment the policy allows, built from the
// daemon's own environment and the client's snapshot, and never see another
// session's.
//
// The package is internal: its users are envsieve's own programs
// (cmd/internal/daemoncli) and tests; other languages speak the wire.
//
// docs/protocol.md is the wire reference, with examples; this comment is the
// model behind it.
//
// # Wire
//
// One JSON message per line (JSON-RPC 2.0, [github.com/creachadair/jrpc2]),
// so any language can speak it with a socket and a JSON library. A message
// longer than [Limits].MaxMessageBytes gets an error reply and the
// connection is closed; malformed JSON gets a parse error. The daemon sends
// session/output notifications while a command runs, before the reply to
// its session/exec.
//
// # Clients, sessions, execs
//
//   - initialize registers a client id ("cli_" and 8 hex digits unless the
//     client names one) with a snapshot of the client's environment. The
//     same id again replaces the snapshot. Ids outlive connections, so a
//     shell can drive the daemon one connection per command.
//   - session/new copies the client's current snapshot into a new session
//     with a profile. Nothing the client does later (re-registering,
//     disconnecting) changes a session. With parent_session the new session
//     is a sub-agent's: its profile may only narrow the parent's
//     ([policy.Policy.CheckNarrows]; anything wider is refused with the key
//     named), it starts from the parent's snapshot, and it is closed with
//     its parent.
//   - session/exec builds the environment in two layers (below), runs the
//     command in a process group of its own, streams its stdout and stderr
//     through the redaction filters as session/output notifications, and
//     replies with the exit status. A command ends with its connection: a
//     client that disconnects mid-exec has its commands' process groups
//     killed. session/cancel, session/close, the timeout and shutdown kill
//     them too.
//
// # Environment layers
//
// Layer 1 comes from the daemon's own environment: the keys of the
// profile's base set, passed through the engine ([sieve.Build]; their values
// face the value test, deny entries apply), plus the profile's
// shell_env_passthrough names (exact names; only a deny entry removes one).
// Layer 2 is the session's snapshot through the whole pipeline: the rule
// chosen for the command, the tool's and requested secrets, set values; or,
// with `client_env: full`, the snapshot as it is minus the code-injection
// floor. Layer 2 wins on conflict, and the merged environment must fit the
// policy's limits. The daemon's other variables never reach a command.
//
// # Security
//
// The socket lives in a directory only its user can enter (0700; the socket
// itself 0600), and every connection's peer is checked with SO_PEERCRED: a
// process of another uid is refused. Within that uid the ids are handles,
// not secrets: a session id (128 random bits) is a capability, usable from
// any connection that has it, so a person can drive a session from a shell.
// Sessions never share environments: each holds its own copy.
//
// Values never travel in errors or logs: the daemon's log records ids,
// names and exit codes. Output is masked as `envsieve run` masks it: every
// sensitive value of the snapshot and of the daemon's environment that the
// command was not given, every injected secret, and, with redact.entropy,
// credential-looking strings nobody named. The daemon holds its clients'
// environments in memory: `envsieve daemon` makes itself non-dumpable, so
// that a command of the same user cannot read them from /proc.
//
// A command's process group is killed on cancellation; a grandchild that
// starts a session of its own (setsid) escapes it, as it escapes a shell.
package daemon
