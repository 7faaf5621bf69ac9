// Package seal gives an agent's process tree a filesystem view without the
// user's secret material: the credential files of a built-in list (cloud,
// git, package registries, containers, Kubernetes, SSH private keys, GnuPG,
// pass), envsieve's own store and keys, masked (empty, read-only), and the
// user's envsieve config directory read-only, so the tree can neither read
// a stored secret nor rewrite the policy for later launches.
//
// The mechanism is the mount namespace of envsieve's --isolate: [Apply]
// runs in the namespace's init, before the program starts and before the
// init drops its capabilities, so the program cannot unmount the masks.
// Where user namespaces are refused, there is no seal yet (Landlock is the
// planned fallback; docs/design.md section 9); asking for it is an error.
//
// A [Spec] is a plain list of paths; [Default] builds the one envsieve
// uses. A symbolic link in the list is masked where it leads (a mount
// follows it), so ~/.aws linked elsewhere masks the real directory.
package seal

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// Spec is what a sealed tree cannot read (Mask) or write (ReadOnly).
type Spec struct {
	// Mask are files and directories whose content the tree must not see:
	// a file reads as empty, a directory as empty; neither can be written.
	Mask []string
	// ReadOnly are files and directories the tree may read but not change.
	ReadOnly []string
}

// credentialFiles is DESIGN.md section 12's list, relative to HOME.
var credentialFiles = []string{
	".aws/credentials", ".aws/sso/cache", ".config/gh/hosts.yml", ".config/hub",
	".git-credentials", ".netrc", ".npmrc", ".yarnrc.yml", ".pypirc",
	".cargo/credentials.toml", ".cargo/credentials", ".docker/config.json", ".kube/config",
	".config/gcloud", ".azure", ".terraform.d/credentials.tfrc.json",
	".ssh/id_rsa", ".ssh/id_ecdsa", ".ssh/id_ed25519", ".ssh/id_dsa", ".ssh/id_ecdsa_sk", ".ssh/id_ed25519_sk",
	".gnupg", ".password-store",
}

// Default returns envsieve's seal for a user: the built-in credential files
// under home, envsieve's store (in configDir) and its data directory (the
// store's key, the install key), masked; configDir (the policy) read-only;
// extra paths masked too. Empty arguments are skipped.
func Default(home, configDir, dataDir string, extra []string) Spec {
	var s Spec
	if home != "" {
		for _, f := range credentialFiles {
			s.Mask = append(s.Mask, filepath.Join(home, f))
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

// Encode writes s as lines "m PATH" and "r PATH", for the init of the
// namespace; a path holding a newline is an error.
func (s Spec) Encode() (string, error) {
	var b strings.Builder
	for _, l := range []struct {
		tag   string
		paths []string
	}{{"m", s.Mask}, {"r", s.ReadOnly}} {
		for _, p := range l.paths {
			if strings.ContainsAny(p, "\n\x00") || !filepath.IsAbs(p) {
				return "", fmt.Errorf("seal: %q is not an absolute path on one line", p)
			}
			b.WriteString(l.tag + " " + p + "\n")
		}
	}
	return b.String(), nil
}

// Decode reads what Encode wrote.
func Decode(text string) (Spec, error) {
	var s Spec
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if line == "" {
			continue
		}
		tag, p, ok := strings.Cut(line, " ")
		switch {
		case !ok || !filepath.IsAbs(p) || strings.IndexByte(p, 0) >= 0:
			return Spec{}, errors.New("seal: malformed spec line")
		case tag == "m":
			s.Mask = append(s.Mask, p)
		case tag == "r":
			s.ReadOnly = append(s.ReadOnly, p)
		default:
			return Spec{}, errors.New("seal: malformed spec line")
		}
	}
	return s, nil
}
