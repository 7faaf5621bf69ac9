package detect

import "strings"

// injectionPrefixes start the names of variables that can make a child run
// code it did not ask for, whatever follows the prefix.
var injectionPrefixes = []string{
	"LD_",         // the dynamic linker: LD_PRELOAD, LD_AUDIT, LD_LIBRARY_PATH
	"DYLD_",       // the same on macOS: DYLD_INSERT_LIBRARIES
	"BASH_FUNC_",  // bash exported functions, defined in every bash child
	"GIT_CONFIG_", // GIT_CONFIG_COUNT, _KEY_n, _VALUE_n, _PARAMETERS, _GLOBAL: any git setting, core.sshCommand or core.fsmonitor among them
	"LUA_INIT_",   // LUA_INIT_5_4: like LUA_INIT, below
}

// injectionNames are the exact names of the other such variables.
var injectionNames = []string{
	// docs/design.md section 2, step 4.
	"GIT_CONFIG",        // a whole git config file
	"BASH_ENV",          // sourced by every non-interactive bash
	"ENV",               // sourced by sh and by bash in POSIX mode
	"IFS",               // changes how every shell splits words
	"PS4",               // expanded, command substitutions included, under set -x
	"SHELLOPTS",         // turns on bash options (xtrace, which runs PS4) at start
	"BASHOPTS",          // the same for shopt options
	"GLOBIGNORE",        // changes what every glob expands to
	"PROMPT_COMMAND",    // run before every prompt of an interactive bash
	"NODE_OPTIONS",      // --require, --import
	"PYTHONSTARTUP",     // run by the interactive interpreter
	"PYTHONHOME",        // the standard library python imports at start
	"PERL5OPT",          // -M: load a module
	"RUBYOPT",           // -r: require a file
	"JAVA_TOOL_OPTIONS", // -javaagent
	"_JAVA_OPTIONS",     // the same, read by HotSpot JVMs
	"GCONV_PATH",        // glibc's iconv loads shared objects from it
	// Added, because they load code into processes that did not ask for it
	// as surely as the above:
	"JDK_JAVA_OPTIONS",     // read by the java launcher (9+) like JAVA_TOOL_OPTIONS
	"ZDOTDIR",              // where every zsh, even zsh -c, reads .zshenv
	"PYTHONWARNINGS",       // a category module.Class makes python import module
	"OPENSSL_CONF",         // an OpenSSL config can load engines and providers (shared objects)
	"DOTNET_STARTUP_HOOKS", // assemblies the .NET runtime runs before Main
	"LUA_INIT",             // Lua code (or @file) that lua runs at start
}

// Deliberately not in the floor (keep them out unless docs/design.md changes):
//
//   - module search paths: PATH, PYTHONPATH and NODE_PATH are in the safe base
//     set, so PERL5LIB, PERLLIB, RUBYLIB, GIT_EXEC_PATH and GIT_TEMPLATE_DIR,
//     which are the same kind of thing, are too;
//   - programs that a tool runs on purpose: EDITOR, VISUAL, PAGER, BROWSER,
//     LESSOPEN, GIT_ASKPASS, GIT_SSH and GIT_SSH_COMMAND (the last two in the
//     safe base set);
//   - prompts that only an interactive shell expands: PS0, PS1, PS2.

// Injection reports whether a variable can inject code into a child process
// (the code-injection floor): its name is LD_*, DYLD_*, BASH_FUNC_*,
// GIT_CONFIG_* or LUA_INIT_*, or one of GIT_CONFIG, BASH_ENV, ENV, IFS, PS4,
// SHELLOPTS, BASHOPTS, GLOBIGNORE, PROMPT_COMMAND, NODE_OPTIONS,
// PYTHONSTARTUP, PYTHONHOME, PERL5OPT, RUBYOPT, JAVA_TOOL_OPTIONS,
// _JAVA_OPTIONS, GCONV_PATH, JDK_JAVA_OPTIONS, ZDOTDIR, PYTHONWARNINGS,
// OPENSSL_CONF, DOTNET_STARTUP_HOOKS or LUA_INIT; or its value starts with
// "() {", which is how bash exports a function and how Shellshock began.
//
// Names are compared without regard to case. A Unix loader reads only the
// upper-case spelling, but Windows looks names up without regard to case, and
// no program needs a variable called ld_preload or Node_Options.
func Injection(name, value string) bool {
	if strings.HasPrefix(value, "() {") {
		return true
	}
	if name == "" || !injectionFirst[name[0]] {
		return false
	}
	for _, p := range injectionPrefixes {
		if hasPrefixFold(name, p) {
			return true
		}
	}
	return equalsAny(name, injectionNames)
}

// injectionFirst holds the first bytes, in both cases, of the injection
// prefixes and names, so that most names are cleared by one look-up.
var injectionFirst = func() (t [256]bool) {
	for _, list := range [][]string{injectionPrefixes, injectionNames} {
		for _, s := range list {
			t[toUpper(s[0])], t[toLower(s[0])] = true, true
		}
	}
	return t
}()
