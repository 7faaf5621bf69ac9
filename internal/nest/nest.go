// Package nest tells whether this process runs inside a process tree that
// envsieve started, so that an envsieve started there only narrows what it
// was given: it opens no secret store, reads no install key, runs no
// `from: command` helper and loads no policy file the tree could have
// written (docs/design.md, "The boundary" and "The seal", issue 14 item 4).
//
// # What counts as a tree
//
// A process is inside an envsieve tree when either holds:
//
//   - its environment has the marker [Var] (ENVSIEVE_TREE), which the
//     launcher puts in every environment it builds (package launch: the
//     first program, each program it starts for an exec-time grant, each
//     command of a daemon session); or
//   - one of its ancestors, found by walking the parent chain through
//     /proc/PID/stat for at most [MaxDepth] steps, is an envsieve process
//     ([Launcher]). The process name (comm) in /proc/PID/stat is readable for
//     a non-dumpable process of the same user, which the launcher is;
//     /proc/PID/exe and /proc/PID/environ are not, so the name is what is
//     checked.
//
// [Detect] returns why, or "" when neither holds.
//
// # What it does not guarantee
//
// In an UNSEALED tree this is a guard against the convenient path (an agent
// that runs `envsieve run --tool twilio` because it read the README), not
// a boundary. The tree runs as the user and could read the store and its
// key directly, and it can defeat both signals: remove the marker
// (`env -u ENVSIEVE_TREE`), and, where the launcher exec'd the program in
// place (nothing to mask, no shim, no broker, so envsieve is no longer in
// the process tree), no ancestor is left to find. An envsieve binary
// installed under another name is not recognised by the walk either, only
// by the marker. The boundary is the seal (package seal): a sealed tree
// cannot read the store, the keys or write the policy, whatever runs in it.
//
// The walk needs /proc (Linux); elsewhere only the marker is checked.
// A false positive (an unrelated ancestor named envsieve) only makes
// envsieve narrow: it fails closed.
package nest

import (
	"fmt"
)

// Var is the marker the launcher sets in every environment it builds. Its
// value is "1"; any non-empty value counts.
const Var = "ENVSIEVE_TREE"

// MaxDepth bounds the walk up the parent chain.
const MaxDepth = 64

// Launcher reports whether a process name (comm, at most 15 bytes) is
// one of envsieve's own programs: the CLI (a resident launcher, `envsieve
// sh`), envsieve-sh (the drop-in SHELL), envsieve-daemon (whose sessions'
// commands are its children), envsieve-start (the shim's helper) and
// envsieve-init (pid 1 of an isolated launch's namespaces).
func Launcher(comm string) bool {
	switch comm {
	case "envsieve", "envsieve-sh", "envsieve-daemon", "envsieve-start", "envsieve-init":
		return true
	}
	return false
}

// Proc reads one process's name and parent from the process table; ok is
// false when the process cannot be read (gone, another namespace).
type Proc func(pid int) (comm string, ppid int, ok bool)

// Detect returns why this process is inside an envsieve tree, or "" when it
// is not. marker is the value of [Var] in the process's environment.
func Detect(marker string) string {
	return detect(marker, parent(), readProc)
}

func detect(marker string, ppid int, proc Proc) string {
	if marker != "" {
		return Var + " is set"
	}
	if proc == nil {
		return ""
	}
	pid := ppid
	for range MaxDepth {
		if pid <= 1 {
			return ""
		}
		comm, next, ok := proc(pid)
		if !ok {
			return ""
		}
		if Launcher(comm) {
			return fmt.Sprintf("an ancestor process is envsieve (pid %d, %s)", pid, comm)
		}
		if next == pid {
			return ""
		}
		pid = next
	}
	return ""
}
