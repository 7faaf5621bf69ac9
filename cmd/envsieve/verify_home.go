package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/detect"
	"github.com/envsieve/envsieve/internal/envknob"
	"github.com/envsieve/envsieve/seal"
)

// The bounds of verify --home's walk of HOME: how deep below HOME it
// looks, how many entries it examines, and the largest file it reads.
const (
	homeMaxDepth   = 5 // ~/.config/app/sub/dir/file
	homeMaxEntries = 20000
	homeMaxBytes   = 256 << 10
)

// homeSkipDirs are directories of HOME verify --home does not enter:
// toolchains, package and build caches, and history it did not make.
// They hold code and downloads, and scanning them would spend the budget.
var homeSkipDirs = []string{
	".cache/go-build", ".cache/pip", ".cache/ms-playwright", ".cache/mozilla", ".cache/chromium",
	".cache/google-chrome", ".cache/yarn", ".cache/pnpm", ".cache/bazel", ".cache/JetBrains",
	".npm/_cacache", ".cargo/registry", ".cargo/git", ".rustup", ".m2/repository",
	".gradle/caches", ".gradle/wrapper", ".local/share/Trash", ".local/lib", ".vscode/extensions",
	".vscode-server", ".nvm", ".pyenv", ".rbenv", ".sdkman", ".volta", ".bun/install",
}

// homeSkipNames are directory names not entered anywhere in HOME.
var homeSkipNames = []string{"node_modules", ".git", "__pycache__", "site-packages"}

// publicFile reports whether the file at rel (relative to HOME) holds
// public data that looks random by nature: SSH's host keys (hashed names
// among them), authorized keys and public keys.
func publicFile(rel string) bool {
	switch rel {
	case ".ssh/known_hosts", ".ssh/known_hosts.old", ".ssh/known_hosts2", ".ssh/authorized_keys", ".ssh/authorized_keys2":
		return true
	}
	return strings.HasSuffix(rel, ".pub")
}

// homeFinding is a file of HOME the seal leaves readable whose content
// looks like a credential: its path and the kinds found, never a value.
type homeFinding struct {
	Path  string   `json:"path"`
	Kinds []string `json:"kinds"`
}

// homeReport is what verify --home found.
type homeReport struct {
	Home      string        `json:"home"`
	Left      []homeFinding `json:"left"`
	Examined  int           `json:"examined"`
	Truncated bool          `json:"truncated"`
}

// runVerifyHome lists the credential-bearing files of the real HOME that
// the seal of a launch with o's policy and profile would leave readable:
// exit 1 when there is one.
func runVerifyHome(u *cli.UI, o *verifyOptions) error {
	home := envknob.Home()
	if home == "" {
		return errors.New("verify --home: HOME is not set to an absolute path")
	}
	spec, err := homeSeal(u, o, home)
	if err != nil {
		return fmt.Errorf("verify --home: %w", err)
	}
	r := scanHome(home, newMaskSet(spec.Mask))
	if o.json {
		enc := json.NewEncoder(u.Out)
		enc.SetIndent("", "  ")
		if r.Left == nil {
			r.Left = []homeFinding{}
		}
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(u.Out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PATH\tKIND")
		for _, f := range r.Left {
			fmt.Fprintf(tw, "%s\t%s\n", f.Path, strings.Join(f.Kinds, ","))
		}
		tw.Flush()
		if len(r.Left) == 0 {
			fmt.Fprintf(u.Out, "nothing the seal leaves readable looks like a credential (%d files examined)\n", r.Examined)
		} else {
			fmt.Fprintf(u.Out, "%d files the seal leaves readable hold credentials: add them to the policy's seal: {mask: [...]}\n", len(r.Left))
		}
	}
	if r.Truncated {
		fmt.Fprintf(u.Err, "envsieve: verify --home: stopped after %d entries; the rest of HOME was not examined\n", homeMaxEntries)
	}
	if len(r.Left) > 0 {
		return cli.ExitStatus(1)
	}
	return nil
}

// homeSeal is the seal a launch would get: seal.Default for HOME and
// envsieve's directories, with the masks of the profile's effective
// policy.
func homeSeal(u *cli.UI, o *verifyOptions, home string) (seal.Spec, error) {
	p, err := cli.LoadPolicy(u, o.policy)
	if err != nil {
		return seal.Spec{}, err
	}
	profile := o.profile
	if profile == "" {
		profile = envknob.Profile()
	}
	eff, err := p.Effective(profile)
	if err != nil {
		return seal.Spec{}, err
	}
	var extra []string
	for _, m := range eff.SealMask {
		if rest, ok := strings.CutPrefix(m, "~/"); ok {
			m = filepath.Join(home, rest)
		}
		extra = append(extra, m)
	}
	return seal.Default(home, envknob.ConfigDir(), envknob.DataDir(), extra), nil
}

// maskSet answers whether a path is masked: the path or where it leads
// is a masked path or lies beneath one (a mask follows links).
type maskSet []string

func newMaskSet(masks []string) maskSet {
	var s maskSet
	for _, m := range masks {
		m = filepath.Clean(m)
		s = append(s, m)
		if real, err := filepath.EvalSymlinks(m); err == nil && real != m {
			s = append(s, real)
		}
	}
	return s
}

func (s maskSet) covers(path string) bool {
	within := func(p string) bool {
		for _, m := range s {
			if p == m || strings.HasPrefix(p, m+"/") {
				return true
			}
		}
		return false
	}
	if within(path) {
		return true
	}
	real, err := filepath.EvalSymlinks(path)
	return err == nil && within(real)
}

// scanHome walks the dot-directories and dotfiles of home, bounded, and
// runs the detector over each readable text file the masks leave open. A
// masked directory is not entered; a directory reached by a link is not
// entered; a link to a file is read where it leads.
func scanHome(home string, masked maskSet) homeReport {
	r := homeReport{Home: home}
	budget := homeMaxEntries
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		f, err := os.Open(dir)
		if err != nil {
			return
		}
		names, _ := f.Readdirnames(budget + 1) // bounded: more than the budget is never examined
		f.Close()
		sort.Strings(names)
		for _, name := range names {
			if depth == 1 && !strings.HasPrefix(name, ".") {
				continue
			}
			if budget == 0 {
				r.Truncated = true
				return
			}
			budget--
			path := filepath.Join(dir, name)
			rel, _ := filepath.Rel(home, path)
			fi, err := os.Lstat(path)
			if err != nil || masked.covers(path) {
				continue
			}
			if fi.IsDir() {
				if depth < homeMaxDepth && !slices.Contains(homeSkipNames, name) && !slices.Contains(homeSkipDirs, rel) {
					walk(path, depth+1)
				}
				continue
			}
			if !fi.Mode().IsRegular() && fi.Mode()&os.ModeSymlink == 0 || publicFile(rel) {
				continue
			}
			text, ok := readText(path)
			if !ok {
				continue
			}
			r.Examined++
			if kinds := credentialKinds(text); len(kinds) > 0 {
				r.Left = append(r.Left, homeFinding{Path: "~/" + rel, Kinds: kinds})
			}
		}
	}
	walk(home, 1)
	return r
}

// readText reads path when it is (or leads to) a regular file of at most
// homeMaxBytes holding no NUL byte (text, not a binary). The open does not
// block on a FIFO, and the descriptor itself is checked.
func readText(path string) ([]byte, bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > homeMaxBytes {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(f, homeMaxBytes+1))
	if err != nil || len(b) > homeMaxBytes || bytes.IndexByte(b, 0) >= 0 {
		return nil, false
	}
	return b, true
}

// credentialKinds are the kinds of the credentials the detector finds in
// text, each once, in the order found.
func credentialKinds(text []byte) []string {
	var kinds []string
	detect.Scan(text, detect.ScanOptions{}, func(f detect.Finding) bool {
		if k := string(f.Kind); !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
		return true
	})
	return kinds
}
