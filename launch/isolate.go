package launch

import "errors"

// IsolateInitArg is the argument with which the launcher re-executes itself
// as the init of an isolated child's namespaces. main hands such a process to
// [IsolateInit] before anything else runs.
const IsolateInitArg = "__envsieve-isolate-init"

// ErrNamespaces is returned (wrapped) when the kernel refuses to create the
// namespaces --isolate needs, and where there are none (not Linux). Use
// errors.Is.
var ErrNamespaces = errors.New("the kernel refused to create user, pid and mount namespaces")
