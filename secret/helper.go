package secret

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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

// errWritable is wrapped when a helper or a directory above it is one the
// agent's tree could write.
var errWritable = errors.New("you (and so every program an agent runs) can write")

// trusted returns an error when path (a file or a directory), or a
// directory above it, is one the tree's uid can write: owned by it, or
// writable by its group or by everyone. The tree runs as the user, so a
// helper there could be replaced by one of the agent's. Root's own files
// are trusted when the tree is root: nothing is out of a root tree's reach.
func trusted(path string) error {
	uid := treeUID()
	groups, _ := os.Getgroups()
	for p := path; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			mode := fi.Mode().Perm()
			// In a sticky directory (/tmp) others may add entries but not
			// replace the ones below it that they do not own.
			sticky := fi.IsDir() && fi.Mode()&os.ModeSticky != 0 && p != path
			switch {
			case int(st.Uid) == uid && uid != 0:
				return fmt.Errorf("%s: %w it (it is yours)", p, errWritable)
			case sticky:
			case mode&0o002 != 0:
				return fmt.Errorf("%s: %w it (everyone can)", p, errWritable)
			case mode&0o020 != 0 && (int(st.Gid) == os.Getegid() || slices.Contains(groups, int(st.Gid))):
				return fmt.Errorf("%s: %w it (its group can)", p, errWritable)
			}
		}
		if p == "/" || p == "." {
			return nil
		}
	}
}

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
