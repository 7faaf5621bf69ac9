// Package seal gives an agent's process tree a filesystem view without the
// user's secret material: the credential files of a built-in list (clouds,
// git and the forges, package registries, containers and clusters,
// databases, key stores and password managers, browser profiles, SSH
// private keys by name and by content), envsieve's own store and keys,
// masked (empty, read-only), and the user's envsieve config directory
// read-only, so the tree can neither read a stored secret nor rewrite the
// policy for later launches. A [Spec]'s read-only paths may have write
// places beneath them ([Spec.Write]): the launcher makes HOME read-only but
// for the tree's work and caches, so the tree plants nothing that runs
// later outside it (shell start-up files, git and ssh config, user units,
// programs early in PATH).
//
// Two mechanisms give the same guarantee; [Choose] picks the best this
// system offers:
//
//   - [Namespaces]: the mount namespace of envsieve's --isolate. [Apply]
//     runs in the namespace's init, before the program starts and before
//     the init drops its capabilities, so the program cannot unmount the
//     masks. A masked file reads as empty, a masked directory as empty.
//     HOME and each directory between it and a masked path ([HoldDirs])
//     are replaced by read-only copies of their entries (bound back, the
//     masked ones empty stand-ins), so a mask holds while the user works:
//     a file renamed over, deleted and made anew, or a directory renamed
//     and another made in its place outside does not reach the tree. (The
//     C init, envsieve-init, holds them instead by one read-only overlay
//     of HOME whose top layer holds the masked names, where the kernel
//     allows it: shim/libenvsieve/init.c.)
//   - [Landlock], where unprivileged user namespaces are refused (Ubuntu
//     24.04's AppArmor restriction, a container's seccomp filter):
//     [Restrict] puts the program in a Landlock domain (ABI 3 or later)
//     that denies reading a masked file and changing anything masked or
//     read-only, however the tree names it (a link, a hard link it makes,
//     a rename, /proc/self/root). Reading a masked file fails with EACCES,
//     and the names in a masked directory stay listable. Landlock only
//     grants, by file: so a new entry directly in a directory above a
//     sealed path (HOME, ~/.config, ~/.ssh, ~/.aws, ~/.local/share) cannot
//     be made in the tree, and what exists there at the start stays fully
//     usable. Its rules are bound to files, not names, so a mask holds
//     while the user works here too. A hard link to a masked file made before the start, or a
//     bind mount of one elsewhere, is not masked (by either mechanism).
//
// A [Spec] is a plain list of paths; [Default] builds the one envsieve
// uses. A symbolic link in the list is masked where it leads (a mount
// follows it), so ~/.aws linked elsewhere masks the real directory.
package seal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Mechanism is how a seal is made.
type Mechanism string

// The mechanisms, best first.
const (
	Namespaces Mechanism = "namespaces"
	Landlock   Mechanism = "landlock"
)

// Choose returns the best mechanism this system offers for a seal, or an
// error saying why neither works. A refusal it cannot see (a container's
// seccomp filter refusing user namespaces) shows when the launch starts,
// and the launcher falls back to Landlock then.
func Choose() (Mechanism, error) {
	nsErr := Available()
	if nsErr == nil {
		return Namespaces, nil
	}
	llErr := LandlockAvailable()
	if llErr == nil {
		return Landlock, nil
	}
	return "", fmt.Errorf("%v; and %v", nsErr, llErr)
}

// Spec is what a sealed tree cannot read (Mask) or write (ReadOnly, but
// for Write).
type Spec struct {
	// Mask are files and directories whose content the tree must not see:
	// a file reads as empty, a directory as empty; neither can be written.
	// A mask wins over every other path.
	Mask []string
	// ReadOnly are files and directories the tree may read but not change.
	ReadOnly []string
	// Write are places beneath a ReadOnly path that the tree may change
	// all the same (its work, caches). Of the ReadOnly and Write paths at
	// or above a file, the deepest decides.
	Write []string
	// Hold are directories a namespace seal replaces, in the tree's view,
	// by a read-only copy of their entries as they were at the start, the
	// masked ones left empty ([Apply]), so that the masks hold while the
	// user works outside the tree: the directories between HOME and its
	// masked paths ([HoldDirs]), and any other directory the launcher
	// names (an agent's state dir outside HOME that holds its view).
	Hold []string
	// Fake maps a masked file to a file of the same format holding fakes
	// (docs/design.md section 9.5, "Logins as fakes"), written by the launcher outside HOME:
	// a namespace seal shows that file, read-only, in the masked one's
	// place (in the held copies too, so it holds while the user works), in
	// place of an empty file. Each key must also be in Mask: a Landlock
	// seal cannot show other content at a path, and keeps it masked.
	Fake map[string]string
}

// credentialFiles is docs/design.md "The seal"'s list, relative to HOME: files
// and directories that hold a credential whole or in part. An entry that
// does not exist is skipped when the seal is made. No entry lies beneath
// another. Sources: the tools' own documentation, and the deny lists of
// the anchors (Claude Code's sandbox-runtime, Codex's sandbox, agentsh's
// default policy), which name few HOME credentials of their own: agentsh
// adds ~/.gcloud; sandbox-runtime and Codex leave reads to the user's list.
// What is left, verify --home lists.
var credentialFiles = []string{
	// Clouds. The AWS CLI's cache holds the temporary credentials of an
	// assumed role; gcloud's directory holds refresh tokens and keys.
	".aws/credentials", ".aws/sso/cache", ".aws/cli/cache",
	".config/gcloud", ".gcloud", ".azure", ".oci",
	".config/doctl", ".config/hcloud/cli.toml", ".fly/config.yml",
	".terraform.d/credentials.tfrc.json", ".vault-token",

	// Git and the forges.
	".git-credentials", ".config/git/credentials",
	".config/gh/hosts.yml", ".config/hub", ".config/glab-cli/config.yml",

	// Package registries.
	".npmrc", ".yarnrc.yml", ".pypirc", ".cargo/credentials.toml", ".cargo/credentials",
	".m2/settings.xml", ".m2/settings-security.xml", ".gem/credentials",
	".config/composer/auth.json", ".composer/auth.json", ".nuget/NuGet/NuGet.Config",
	".pub-cache/credentials.json", ".config/dart/pub-tokens.json",

	// Containers and clusters.
	".docker/config.json", ".kube/config", ".config/helm/repositories.yaml",

	// Databases, storage, and any host by password.
	".netrc", ".pgpass", ".my.cnf", ".mylogin.cnf",
	".config/rclone/rclone.conf", ".s3cfg", ".boto",

	// SSH private keys by their usual names; seal.Default adds the keys
	// of other names that sshPrivateKeys finds by their content.
	".ssh/id_rsa", ".ssh/id_ecdsa", ".ssh/id_ed25519", ".ssh/id_dsa", ".ssh/id_ecdsa_sk", ".ssh/id_ed25519_sk",

	// Key stores and password managers: GnuPG, pass, the desktop keyring
	// (GNOME Keyring, KWallet), the 1Password CLI, SOPS's age keys.
	".gnupg", ".password-store", ".local/share/keyrings", ".local/share/kwalletd",
	".config/op", ".op", ".config/sops/age/keys.txt",

	// Browser profiles: their session cookies are logins. Native, Flatpak
	// (~/.var/app/ID) and Snap (~/snap/NAME) installs.
	".mozilla", ".config/google-chrome", ".config/google-chrome-beta", ".config/chromium",
	".config/BraveSoftware", ".config/microsoft-edge", ".config/vivaldi", ".config/opera",
	".var/app/org.mozilla.firefox", ".var/app/com.google.Chrome", ".var/app/org.chromium.Chromium",
	".var/app/com.brave.Browser", ".var/app/com.microsoft.Edge",
	"snap/firefox", "snap/chromium",
}

// CredentialFiles returns the built-in list of credential files and
// directories, relative to HOME.
func CredentialFiles() []string { return append([]string(nil), credentialFiles...) }

// agentLoginFiles are the agents' own login files, relative to HOME: each
// lies in its agent's state dir, which the tree may write. [Default]
// masks one only when it exists: its mask holds the state dir's top level
// (a namespace seal's copy, Landlock's grants entry by entry), so that it
// holds however the file is replaced outside, and the agent then works in
// a view of its state dir that the launcher makes (docs/design.md section
// 9.6); a state dir with no login file stays as it is. The agents' other
// token files (their MCP servers' OAuth tokens, from the CLIs: Codex's
// fallback .credentials.json and provider accountgateway_oauth.json,
// Gemini CLI's mcp-oauth-tokens.json, a2a-oauth-tokens.json and its file
// keychain gemini-credentials.json) are masked the same way; the view
// holds fakes of the two MCP stores, and links the rest to the mask.
var agentLoginFiles = []string{".claude/.credentials.json", ".codex/auth.json", ".gemini/oauth_creds.json",
	".codex/.credentials.json", ".codex/accountgateway_oauth.json",
	".gemini/mcp-oauth-tokens.json", ".gemini/a2a-oauth-tokens.json", ".gemini/gemini-credentials.json"}

// AgentLogins returns the agents' login and token files (those
// [Default] masks in HOME/name) that exist in dir: the state dir named
// name (".claude", ".codex", ".gemini") moved by the user's own variable
// (CLAUDE_CONFIG_DIR, CODEX_HOME, GEMINI_CLI_HOME), where the agent then
// keeps them. The caller masks them.
func AgentLogins(name, dir string) []string {
	var out []string
	for _, f := range agentLoginFiles {
		if d, file, _ := strings.Cut(f, "/"); d == name {
			if p := filepath.Join(dir, file); exists(p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// Default returns envsieve's seal for a user: the built-in credential files
// under home, the agents' login files there that exist (agentLoginFiles),
// and the SSH private keys found there by content ([sshPrivateKeys]), envsieve's store (in configDir) and its data directory (the
// store's key, the install key), masked; configDir (the policy) read-only;
// extra paths masked too. Empty arguments are skipped.
func Default(home, configDir, dataDir string, extra []string) Spec {
	var s Spec
	if home != "" {
		for _, f := range credentialFiles {
			s.Mask = append(s.Mask, filepath.Join(home, f))
		}
		s.Mask = appendNew(s.Mask, sshPrivateKeys(home)...)
		for _, f := range agentLoginFiles {
			if p := filepath.Join(home, f); exists(p) {
				s.Mask = append(s.Mask, p)
			}
		}
	}
	if configDir != "" {
		s.Mask = append(s.Mask, filepath.Join(configDir, "secrets.age"))
		s.ReadOnly = append(s.ReadOnly, configDir)
	}
	if dataDir != "" {
		s.Mask = append(s.Mask, dataDir)
	}
	s.Mask = append(s.Mask, extra...)
	return s
}

// exists reports whether something is at p (a link, even a dangling one).
func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// appendNew appends to list the paths it does not hold yet.
func appendNew(list []string, paths ...string) []string {
	for _, p := range paths {
		if !slices.Contains(list, p) {
			list = append(list, p)
		}
	}
	return list
}

// overlaps reports whether path is one of s's paths, lies beneath one, or
// lies above one.
func (s Spec) overlaps(path string) bool {
	path = filepath.Clean(path)
	within := func(p, dir string) bool {
		return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
	}
	for _, p := range append(append([]string{}, s.Mask...), s.ReadOnly...) {
		p = filepath.Clean(p)
		if within(path, p) || within(p, path) {
			return true
		}
	}
	return false
}

// bind is a path of a read-only or write list, in the order the mounts of
// a namespace seal bind them.
type bind struct {
	path  string
	write bool
}

// binds returns s's read-only and write paths, the deepest first (a
// longer clean path is never above a shorter one), so that each one's bind
// holds the deeper ones already made: the deepest decides, and at the
// same path read-only.
func binds(s Spec) []bind {
	var out []bind
	for _, p := range s.Write {
		out = append(out, bind{filepath.Clean(p), true})
	}
	for _, p := range s.ReadOnly { // after: at the same path, read-only wins
		out = append(out, bind{filepath.Clean(p), false})
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].path) > len(out[j].path) })
	return out
}

// HoldDirs returns the directories a namespace seal replaces by copies so
// that the masks beneath root hold while the user works (Spec.Hold): each
// directory from root down to the parent of a masked path beneath it, by
// clean name, the shallowest first.
func HoldDirs(masks []string, root string) []string {
	root = filepath.Clean(root)
	var dirs []string
	seen := map[string]bool{}
	for _, m := range masks {
		m = filepath.Clean(m)
		if root == "/" || !strings.HasPrefix(m, root+"/") {
			continue
		}
		for d := filepath.Dir(m); !seen[d]; d = filepath.Dir(d) {
			seen[d] = true
			dirs = append(dirs, d)
			if d == root {
				break
			}
		}
	}
	sortShallowFirst(dirs)
	return dirs
}

// sortShallowFirst sorts clean paths so that each comes after the ones
// above it (a shorter path is never beneath a longer one).
func sortShallowFirst(dirs []string) {
	sort.SliceStable(dirs, func(i, j int) bool { return len(dirs[i]) < len(dirs[j]) })
}

// Encode writes s as lines "m PATH", "r PATH", "w PATH" and "h PATH",
// for the init of the namespace, a faked mask's "m PATH" preceded by
// "s SOURCE" (Spec.Fake); a path holding a newline is an error, and so is
// a fake of a path that is not masked.
func (s Spec) Encode() (string, error) {
	var b strings.Builder
	line := func(tag, p string) error {
		if strings.ContainsAny(p, "\n\x00") || !filepath.IsAbs(p) {
			return fmt.Errorf("seal: %q is not an absolute path on one line", p)
		}
		b.WriteString(tag + " " + p + "\n")
		return nil
	}
	for p := range s.Fake {
		if !slices.Contains(s.Mask, p) {
			return "", fmt.Errorf("seal: the fake of %s is not of a masked path", p)
		}
	}
	for _, l := range []struct {
		tag   string
		paths []string
	}{{"m", s.Mask}, {"r", s.ReadOnly}, {"w", s.Write}, {"h", s.Hold}} {
		for _, p := range l.paths {
			if src, ok := s.Fake[p]; ok && l.tag == "m" {
				if err := line("s", src); err != nil {
					return "", err
				}
			}
			if err := line(l.tag, p); err != nil {
				return "", err
			}
		}
	}
	return b.String(), nil
}

// Decode reads what Encode wrote.
func Decode(text string) (Spec, error) {
	var s Spec
	src := "" // an "s" line's source, for the "m" line that must follow
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if line == "" {
			continue
		}
		tag, p, ok := strings.Cut(line, " ")
		if src != "" && tag != "m" {
			return Spec{}, errors.New("seal: malformed spec line (a fake's source not followed by its mask)")
		}
		switch {
		case !ok || !filepath.IsAbs(p) || strings.IndexByte(p, 0) >= 0:
			return Spec{}, errors.New("seal: malformed spec line")
		case tag == "s":
			src = p
		case tag == "m":
			s.Mask = append(s.Mask, p)
			if src != "" {
				if s.Fake == nil {
					s.Fake = map[string]string{}
				}
				s.Fake[p], src = src, ""
			}
		case tag == "r":
			s.ReadOnly = append(s.ReadOnly, p)
		case tag == "w":
			s.Write = append(s.Write, p)
		case tag == "h":
			s.Hold = append(s.Hold, p)
		default:
			return Spec{}, errors.New("seal: malformed spec line")
		}
	}
	if src != "" {
		return Spec{}, errors.New("seal: malformed spec (a fake's source at its end)")
	}
	return s, nil
}
