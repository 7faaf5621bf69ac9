// Package envknob is the only place envsieve reads its own configuration from
// the environment. envsieve reads variables named ENVSIEVE_* and, for where
// its files live, XDG_CONFIG_HOME, XDG_DATA_HOME, XDG_RUNTIME_DIR and HOME;
// nothing else. [Knobs] lists every
// one of them, and `envsieve manifest` prints that list as JSON, so what
// envsieve depends on can be checked rather than trusted.
package envknob

import (
	"os"
	"path/filepath"
)

// Knob is one environment variable envsieve itself reads.
type Knob struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
}

// Knobs lists every variable envsieve reads, in the order of the manifest.
var Knobs = []Knob{
	{Name: "ENVSIEVE_POLICY", Description: "path of the policy file; --policy wins over it; unset means $XDG_CONFIG_HOME/envsieve/policy.yaml, then the embedded default"},
	{Name: "ENVSIEVE_PROFILE", Description: "profile used when --profile is not given (useful when envsieve sh is the SHELL of an agent)"},
	{Name: "ENVSIEVE_AUDIT", Description: "audit log path (- for stderr) when --audit is not given; wins over the policy's audit.path"},
	{Name: "ENVSIEVE_DEBUG", Description: "when 1, envsieve prints debug lines on stderr: which policy it loaded and how long each step took"},
	{Name: "ENVSIEVE_SESSION", Description: "envsieve client exec, env and close: the daemon session to use (a capability: never in argv, which every process can read)"},
	{Name: "ENVSIEVE_CLIENT_SECRET", Description: "envsieve client init and new: the client_secret that envsieve client init printed for the --client id"},
	{Name: "ENVSIEVE_SHIM", Description: "path of libenvsieve.so; unset means next to the envsieve binary, then ../lib/envsieve/ beside it"},
	{Name: "ENVSIEVE_SHIM_SOCK", Description: "read by the shim in the child: the launcher's socket for access reports and exec-time grants; set by the launcher"},
	{Name: "ENVSIEVE_SHIM_HIDE", Description: "read by the shim in the child: comma-separated keys to hide from environ; set by the launcher, removed by the shim before main"},
	{Name: "ENVSIEVE_SHIM_EXEC", Description: "read by the shim in the child: 1 when exec-time grants are on (the launcher starts each program a rule grants to); set by the launcher"},
	{Name: "ENVSIEVE_SHIM_START", Description: "read by the shim in the child: envsieve-start, which it runs in place of a program a rule may match, to have the launcher start it; set by the launcher"},
	{Name: "ENVSIEVE_SHIM_RULES", Description: "read by the shim in the child: the rules' command globs, one per line; only programs they match go to the launcher; set by the launcher"},
	{Name: "ENVSIEVE_SHIM_DENY", Description: "read by the shim and envsieve-start in the child: the rules' deny globs, removed from a program a rule may match when the launcher cannot be reached; set by the launcher"},
	{Name: "ENVSIEVE_SHIM_DROP", Description: "read by the shim in the child: the rules that only deny keys by command name (command TAB deny TAB ... per line), applied in place to a program no other rule may match; set by the launcher"},
	{Name: "ENVSIEVE_SHIM_GRANTED", Description: "read by the shim in a program the launcher started with grants: the keys granted to it, withheld from its children; set by the launcher"},
	{Name: "ENVSIEVE_SHIM_INTERP", Description: "read by the shim in the /usr/bin/env that runs a granted #!/usr/bin/env script: NAME:PATH, the interpreter the launcher checked, the one exec that keeps the granted keys; set by the launcher, removed by the shim before main"},
	{Name: "ENVSIEVE_TREE", Description: "set to 1 by the launcher in every environment it builds; an envsieve that finds it (or an envsieve process among its ancestors) is inside an envsieve tree and only narrows: no secret store, no install key, no from: command helper, no user policy file, every secret from its own environment; a guard in an unsealed tree, not a boundary (the seal is)"},
	{Name: "XDG_CONFIG_HOME", Description: "base directory of the user's policy file and secret store; unset means $HOME/.config"},
	{Name: "XDG_DATA_HOME", Description: "base directory of the secret store's key; unset means $HOME/.local/share"},
	{Name: "XDG_RUNTIME_DIR", Description: "where the shim's socket and file-delivered secrets go, each in a private directory (a per-user tmpfs); unset means /tmp for the socket (an agent's sandbox may hide /dev/shm from its commands), and /dev/shm for secret files when it is usable, else /tmp"},
	{Name: "HOME", Description: "used only to find $HOME/.config and $HOME/.local/share when the XDG variables are unset"},
}

// Policy returns ENVSIEVE_POLICY.
func Policy() string { return os.Getenv("ENVSIEVE_POLICY") }

// Profile returns ENVSIEVE_PROFILE.
func Profile() string { return os.Getenv("ENVSIEVE_PROFILE") }

// Audit returns ENVSIEVE_AUDIT.
func Audit() string { return os.Getenv("ENVSIEVE_AUDIT") }

// Session returns ENVSIEVE_SESSION.
func Session() string { return os.Getenv("ENVSIEVE_SESSION") }

// ClientSecret returns ENVSIEVE_CLIENT_SECRET.
func ClientSecret() string { return os.Getenv("ENVSIEVE_CLIENT_SECRET") }

// Tree returns ENVSIEVE_TREE, the marker of a process inside an envsieve
// tree (package internal/nest).
func Tree() string { return os.Getenv("ENVSIEVE_TREE") }

// Shim returns ENVSIEVE_SHIM.
func Shim() string { return os.Getenv("ENVSIEVE_SHIM") }

// Debug reports whether ENVSIEVE_DEBUG is 1.
func Debug() bool { return os.Getenv("ENVSIEVE_DEBUG") == "1" }

// Home returns $HOME when it is an absolute path, else "".
func Home() string {
	if h := os.Getenv("HOME"); filepath.IsAbs(h) {
		return h
	}
	return ""
}

// DataDir returns envsieve's data directory, $XDG_DATA_HOME/envsieve or
// $HOME/.local/share/envsieve; "" when neither is set to an absolute path.
func DataDir() string {
	if x := os.Getenv("XDG_DATA_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "envsieve")
	}
	if h := os.Getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "share", "envsieve")
	}
	return ""
}

// RuntimeDir returns where short-lived private files go, each in a 0700
// directory of its own (the shim's socket, file-delivered secrets):
// $XDG_RUNTIME_DIR; else /dev/shm when it is a sticky directory this user
// may write to, a memory filesystem where a secret never reaches a disk and
// a directory costs a fraction of what it costs on one; else /tmp.
func RuntimeDir() string {
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		return x
	}
	if sharedMemoryUsable() {
		return sharedMemory
	}
	return "/tmp"
}

// SocketDir returns where the shim's socket goes, in a 0700 directory of
// its own: $XDG_RUNTIME_DIR, else /tmp. Not /dev/shm: an agent's own
// sandbox may give its commands a private one (Codex's bubblewrap mounts a
// new /dev) while it shows them the host's /tmp and the rest of /, and a
// command that cannot reach the socket gets no grant.
func SocketDir() string {
	if x := os.Getenv("XDG_RUNTIME_DIR"); filepath.IsAbs(x) {
		return x
	}
	return "/tmp"
}

// ConfigDir returns envsieve's configuration directory,
// $XDG_CONFIG_HOME/envsieve or $HOME/.config/envsieve; "" when neither is set
// to an absolute path.
func ConfigDir() string {
	if x := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "envsieve")
	}
	if h := os.Getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".config", "envsieve")
	}
	return ""
}
