package secret

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/envsieve/envsieve/internal/trust"
)

// testOnlyUID, when not -1, stands for the uid of the agent's tree in the
// trust checks (tests run as root, which may write anywhere).
var testOnlyUID = -1

func treeUID() int {
	if testOnlyUID >= 0 {
		return testOnlyUID
	}
	return os.Geteuid()
}

// trusted returns an error when the tree's uid could have written path or
// a directory above it (see trust.Check).
func trusted(path string) error { return trust.Check(path, treeUID()) }

// resolveHelper returns the real path of the helper argv0: an absolute path
// as it is, a name looked up in the PATH of env, taking the first file that
// is executable and trusted (see trusted); a planted helper earlier in PATH
// is passed over. Symbolic links are followed, and the file they lead to is
// what is checked and run.
func resolveHelper(argv0 string, env []string) (string, error) {
	if strings.Contains(argv0, "/") {
		if !filepath.IsAbs(argv0) {
			return "", fmt.Errorf("helper %s: name it by a command name or an absolute path", argv0)
		}
		real, err := filepath.EvalSymlinks(argv0)
		if err != nil {
			return "", fmt.Errorf("helper %s: %w", argv0, err)
		}
		if err := trusted(real); err != nil {
			return "", fmt.Errorf("helper %s: %w: install it where only an administrator can write", argv0, err)
		}
		return real, nil
	}
	var refused error
	for _, dir := range filepath.SplitList(lookupEnv(env, "PATH")) {
		if !filepath.IsAbs(dir) {
			continue
		}
		cand := filepath.Join(dir, argv0)
		fi, err := os.Stat(cand)
		if err != nil || fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			continue
		}
		real, err := filepath.EvalSymlinks(cand)
		if err != nil {
			continue
		}
		if err := trusted(real); err != nil {
			if refused == nil {
				refused = err
			}
			continue
		}
		return real, nil
	}
	if refused != nil {
		return "", fmt.Errorf("helper %s: %w: install it where only an administrator can write, or name it by such an absolute path", argv0, refused)
	}
	return "", fmt.Errorf("helper %s: not found in PATH", argv0)
}

// helperBase are the variables a helper gets from the launcher's
// environment: the user's identity, locale, terminal and directories, the
// agents and proxies secret managers use; besides them only variables that
// start with the helper's own name (VAULT_ for vault, OP_ for op, BW_ for
// bw). PATH is rebuilt from its trusted directories.
var helperBase = []string{
	"HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TERM", "TMPDIR",
	"XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME",
	"GNUPGHOME", "GPG_AGENT_INFO", "GPG_TTY", "PASSWORD_STORE_DIR", "SSH_AUTH_SOCK", "DISPLAY", "WAYLAND_DISPLAY",
	"DBUS_SESSION_BUS_ADDRESS", // secret-tool reaches the Secret Service over the session bus
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "no_proxy", "all_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
}

// helperEnv returns the minimal environment of the helper the policy names
// argv0 (its prefix is that name's, not the resolved file's).
func helperEnv(argv0 string, env []string) []string {
	prefix := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(filepath.Base(argv0))) + "_"
	var out []string
	var dirs []string
	for _, d := range filepath.SplitList(lookupEnv(env, "PATH")) {
		if filepath.IsAbs(d) && trusted(d) == nil && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	out = append(out, "PATH="+strings.Join(dirs, string(filepath.ListSeparator)))
	seen := map[string]bool{"PATH": true}
	for _, kv := range env {
		k, _, ok := strings.Cut(kv, "=")
		if !ok || seen[k] {
			continue
		}
		if slices.Contains(helperBase, k) || strings.HasPrefix(k, prefix) {
			seen[k] = true
			out = append(out, kv)
		}
	}
	return out
}

// lookupEnv returns the first value of key in env ("KEY=value" entries).
func lookupEnv(env []string, key string) string {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// ResolveHelper returns the real path of the helper argv0 that a
// [Command] with the environment env would run, or why none would run (not
// found, or found only where the agent's tree can write): what `envsieve
// doctor` reports before a launch needs it.
func ResolveHelper(argv0 string, env []string) (string, error) {
	return resolveHelper(argv0, env)
}
