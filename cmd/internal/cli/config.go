package cli

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/envsieve/envsieve/internal/envknob"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/secret"
)

// LoadPolicy finds and loads the policy: flagPath (--policy), else
// ENVSIEVE_POLICY, else $XDG_CONFIG_HOME/envsieve/policy.yaml, else the
// embedded default; then narrows it with ./.envsieve.yaml when that file
// exists.
func LoadPolicy(u *UI, flagPath string) (*policy.Policy, error) {
	path, from := flagPath, "--policy"
	if path == "" {
		path, from = envknob.Policy(), "ENVSIEVE_POLICY"
	}
	if path == "" {
		if dir := envknob.ConfigDir(); dir != "" {
			cand := filepath.Join(dir, "policy.yaml")
			if _, err := os.Stat(cand); err == nil {
				path, from = cand, "the user's config directory"
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("load policy %s: %w", cand, err)
			}
		}
	}
	var p *policy.Policy
	var err error
	if path == "" {
		p, err = policy.Default()
		u.Debugf("policy: embedded default (no --policy, ENVSIEVE_POLICY or user policy file)")
	} else {
		p, err = policy.Load(path)
		u.Debugf("policy: %s (from %s)", path, from)
	}
	if err != nil {
		return nil, err
	}
	src, err := policy.ReadFile(policy.LocalName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return p, nil
	case err != nil:
		return nil, fmt.Errorf("load project-local policy %s: %w", policy.LocalName, err)
	}
	u.Debugf("project-local policy: %s", policy.LocalName)
	return p.Narrow(policy.LocalName, src)
}

var (
	keyOnce sync.Once
	key     []byte
	keyErr  error
	keyWhy  string // why the key is for this process only; "" when it is the install's
	keyTold sync.Once
)

// InstallKey returns this install's HMAC key, for redaction tokens and
// fingerprints. Where it cannot be kept (no HOME or XDG_DATA_HOME, a data
// directory that cannot be written) it returns a random key for this
// process only, and [InstallKeyFor] says so; a key that exists but is
// unsafe (others can read it) is an error, never replaced.
func InstallKey() ([]byte, error) {
	keyOnce.Do(func() {
		dir := envknob.DataDir()
		if dir == "" {
			keyWhy = "HOME is not set"
		} else {
			k, err := secret.InstallKey(filepath.Join(dir, "redact.key"))
			var pe *secret.PermissionError
			switch {
			case err == nil:
				key = k
				return
			case errors.As(err, &pe):
				keyErr = err
				return
			}
			keyWhy = "it cannot be kept in " + dir
		}
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			key, keyErr = nil, fmt.Errorf("install key: %w", err)
		}
	})
	return key, keyErr
}

// InstallKeyFor is [InstallKey], telling u once when the key is for this
// launch only.
func InstallKeyFor(u *UI) ([]byte, error) {
	k, err := InstallKey()
	if err == nil && keyWhy != "" {
		keyTold.Do(func() {
			u.Warnf("no install key (%s): redaction uses a key for this launch only, so tokens differ between runs", keyWhy)
		})
	}
	return k, err
}

// UserStore returns the user's encrypted secret store.
func UserStore() (*secret.Store, error) {
	cfg, data := envknob.ConfigDir(), envknob.DataDir()
	if cfg == "" || data == "" {
		return nil, errors.New("secret store: set HOME (or XDG_CONFIG_HOME and XDG_DATA_HOME) to an absolute path")
	}
	return &secret.Store{Path: filepath.Join(cfg, "secrets.age"), KeyPath: filepath.Join(data, "store.key")}, nil
}
