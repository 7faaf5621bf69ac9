package cli

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/envsieve/envsieve/internal/envknob"
	"github.com/envsieve/envsieve/internal/nest"
	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/secret"
)

// LoadPolicy finds and loads the policy: flagPath (--policy), else
// ENVSIEVE_POLICY, else $XDG_CONFIG_HOME/envsieve/policy.yaml, else the
// embedded default; then narrows it with ./.envsieve.yaml when that file
// exists. Inside an envsieve tree ([Nested]) the user's policy file is
// skipped: the tree could have written it.
func LoadPolicy(u *UI, flagPath string) (*policy.Policy, error) {
	path, from, err := PolicyPath(u, flagPath)
	if err != nil {
		return nil, err
	}
	var p *policy.Policy
	named := ""
	if path != "" && from != "the user's config directory" {
		if where := treeWritable(path); where != "" {
			// A sealed tree could have written it: it only narrows the
			// policy found without it.
			u.Warnf("policy: %s lies in %s, where a sealed tree can write: loaded as a project-local file, which may only narrow", path, where)
			named = path
			if path, from, err = userPolicyPath(u); err != nil {
				return nil, err
			}
		}
	}
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
	if named != "" {
		src, err := policy.ReadFile(named)
		if err != nil {
			return nil, fmt.Errorf("load policy %s: %w", named, err)
		}
		if p, err = p.Narrow(named, src); err != nil {
			return nil, err
		}
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

// treeWritable returns the place a sealed tree can write that the policy
// file at path lies in, or "" for none: the project (the git work tree of
// the working directory, else the working directory itself, when it lies
// in HOME and is not HOME), or a cache under HOME (launch.CachePlaces).
// Outside HOME the seal changes nothing: a file there, the temp directory
// included, is as safe as its directory (docs/policy.md).
func treeWritable(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return ""
	}
	abs = realPath(abs)
	home := envknob.Home()
	if home == "" {
		return ""
	}
	realHome := realPath(home)
	if wd, err := os.Getwd(); err == nil {
		if proj := project(realPath(wd), realHome); proj != "" && within(abs, proj) {
			return "the project " + proj
		}
	}
	for _, c := range launch.CachePlaces(realHome) {
		if within(abs, c) {
			return "~/" + strings.TrimPrefix(c, realHome+"/")
		}
	}
	return ""
}

// project returns the project a launch in wd works in, where a sealed
// tree writes: the git work tree wd lies in, else wd; "" when wd is not
// in home or is home (a sealed tree cannot write HOME itself).
func project(wd, home string) string {
	if !strings.HasPrefix(wd, home+"/") {
		return ""
	}
	for d := wd; strings.HasPrefix(d, home+"/"); d = filepath.Dir(d) {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
	}
	return wd
}

// within reports whether the clean path p is dir or lies in it.
func within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// realPath returns p with its symbolic links resolved, or p when they
// cannot be.
func realPath(p string) string {
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return filepath.Clean(p)
}

// PolicyPath finds the policy file [LoadPolicy] loads, and says where the
// name came from; "" means the embedded default.
func PolicyPath(u *UI, flagPath string) (path, from string, err error) {
	path, from = flagPath, "--policy"
	if path == "" {
		path, from = envknob.Policy(), "ENVSIEVE_POLICY"
	}
	if path != "" {
		return path, from, nil
	}
	return userPolicyPath(u)
}

// userPolicyPath is [PolicyPath] when no policy is named: the user's
// policy file, or "" (the embedded default) where there is none or the
// process is nested.
func userPolicyPath(u *UI) (path, from string, err error) {
	if Nested() != "" {
		// The tree could have written the user's policy file, and a
		// later launch in the tree (envsieve sh as an agent's SHELL, whose
		// environment may hold what the tree's commands lack) would obey
		// it. Only a policy named outright is loaded there.
		u.Debugf("policy: the user's policy file is not loaded: nested (%s)", Nested())
		skippedUserPolicy = true
		return "", "", nil
	}
	if dir := envknob.ConfigDir(); dir != "" {
		cand := filepath.Join(dir, "policy.yaml")
		if _, err := os.Stat(cand); err == nil {
			return cand, "the user's config directory", nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", "", fmt.Errorf("load policy %s: %w", cand, err)
		}
	}
	return "", "", nil
}

// ErrInTree is returned (wrapped) for what envsieve refuses to do inside
// an envsieve tree: open the user's secret store. Use errors.Is.
var ErrInTree = errors.New("inside an envsieve tree")

// nested caches [Nested]: whether this process runs inside a tree
// envsieve started does not change while it runs.
var nested = sync.OnceValue(func() string { return nest.Detect(envknob.Tree()) })

// skippedUserPolicy records that [LoadPolicy] did not look for the user's
// policy file because the process is nested (for the error hints).
var skippedUserPolicy bool

// Nested returns why this process runs inside a tree envsieve started
// (package internal/nest), or "" when it does not. There envsieve only
// narrows what it was given: no secret store, no install key, no helper,
// no user policy file.
func Nested() string { return nested() }

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
		if Nested() != "" {
			// The key fingerprints and derives fakes from real values: a
			// tree that used it could test guesses against them.
			keyWhy = "inside an envsieve tree, envsieve reads no key from disk"
		} else if dir == "" {
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

// UserStore returns the user's encrypted secret store. Inside an envsieve
// tree ([Nested]) it refuses, with [ErrInTree].
func UserStore() (*secret.Store, error) {
	if why := Nested(); why != "" {
		return nil, fmt.Errorf("secret store: %w (%s), envsieve opens no secret store", ErrInTree, why)
	}
	cfg, data := envknob.ConfigDir(), envknob.DataDir()
	if cfg == "" || data == "" {
		return nil, errors.New("secret store: set HOME (or XDG_CONFIG_HOME and XDG_DATA_HOME) to an absolute path")
	}
	return &secret.Store{Path: filepath.Join(cfg, "secrets.age"), KeyPath: filepath.Join(data, "store.key")}, nil
}
