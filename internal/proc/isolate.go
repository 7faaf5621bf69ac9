package proc

import (
	"errors"
	"strings"
)

// IsolateInitArg is the argument with which the launcher re-executes itself
// as the init of an isolated child's namespaces. main hands such a process to
// [IsolateInit] before anything else runs.
const IsolateInitArg = "__envsieve-isolate-init"

// ErrNamespaces is returned (wrapped) when the kernel refuses to create the
// namespaces --isolate needs, and where there are none (not Linux). Use
// errors.Is.
var ErrNamespaces = errors.New("the kernel refused to create user, pid and mount namespaces")

// InitEnv is the environment of an init: the program's, with its
// LD_PRELOAD set aside (initPreload), and without any of the inits' own
// variables (initVars) the caller's environment held and a policy let
// through: only the launcher speaks to an init, by the ones it adds.
func InitEnv(programEnv []string) []string {
	env := make([]string, 0, len(programEnv))
	for _, kv := range programEnv {
		if strings.HasPrefix(kv, initVars) {
			continue
		}
		if v, ok := strings.CutPrefix(kv, "LD_PRELOAD="); ok {
			kv = initPreload + v
		}
		env = append(env, kv)
	}
	return env
}

// initVars is the prefix of the variables the launcher hands an init
// (initPreload, InitSeal, and in package proc's Linux files the reaper's
// launcher and the Landlock ruleset): never the program's.
const initVars = "ENVSIEVE_INIT_"

// initPreload carries the program's LD_PRELOAD past the isolated init.
const initPreload = "ENVSIEVE_INIT_LD_PRELOAD="

// InitSeal carries a seal's spec to the isolated init, which applies it and
// removes it before the program starts (the tree does not exist yet, and
// never sees it).
const InitSeal = "ENVSIEVE_INIT_SEAL="
