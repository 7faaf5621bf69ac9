package proc

import "errors"

// ScopeInitArg is the argument with which the launcher re-executes itself
// to put the program in a Landlock domain of its own before it starts. main
// hands such a process to [ScopeInit] before anything else runs.
const ScopeInitArg = "__envsieve-scope-init"

// ErrNoScope is returned (wrapped) where the kernel cannot put a tree in a
// Landlock domain. Use errors.Is.
var ErrNoScope = errors.New("the kernel has no Landlock")
