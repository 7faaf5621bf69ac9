// Package trust answers one question about a file: could the agent's
// process tree, running as the user, have written it? A program envsieve
// hands a real value to (a rule's program, a `from: command` helper) must
// be a file that neither the tree's uid nor its groups can write, in
// directories they cannot write either: otherwise an agent can plant its
// own program under that name.
package trust

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// ErrWritable is wrapped when a file or a directory above it is one the
// tree can write. Use errors.Is.
var ErrWritable = errors.New("you (and so every program an agent runs) can write")

// Check returns an error wrapping [ErrWritable] when path, or a directory
// above it, is one uid can write: owned by uid, or writable by a group of
// the caller's or by everyone (a sticky directory above it, such as /tmp,
// is not held against it: others may add entries there but not replace
// ours). When uid is root, root's own files pass: nothing is out of a root
// tree's reach anyway. path should be a real path (no symbolic link).
func Check(path string, uid int) error {
	groups, _ := os.Getgroups()
	for p := path; ; p = filepath.Dir(p) {
		fi, err := os.Stat(p)
		if err != nil {
			return err
		}
		if uidOf, gidOf, ok := owner(fi); ok {
			mode := fi.Mode().Perm()
			sticky := fi.IsDir() && fi.Mode()&os.ModeSticky != 0 && p != path
			switch {
			case uidOf == uid && uid != 0:
				return fmt.Errorf("%s: %w it (it is yours)", p, ErrWritable)
			case sticky:
			case mode&0o002 != 0:
				return fmt.Errorf("%s: %w it (everyone can)", p, ErrWritable)
			case mode&0o020 != 0 && (gidOf == os.Getegid() || slices.Contains(groups, gidOf)):
				return fmt.Errorf("%s: %w it (its group can)", p, ErrWritable)
			}
		}
		if p == "/" || p == "." {
			return nil
		}
	}
}

// Program returns the path a rule should match for the program found at
// path, and whether uid could have written the program (see [Check]); err
// is set only when the path cannot be resolved. The program is the file
// path leads to (symbolic links followed). Its name is the one it was found
// under when that link sits in a directory uid cannot write (an
// administrator named it: /usr/bin/npm for npm-cli.js), else the real
// file's own (a link named gh to printenv, made by the agent, is printenv).
func Program(path string, uid int) (name string, writable error, err error) {
	name, _, writable, err = ProgramFile(path, uid)
	return name, writable, err
}

// ProgramFile is [Program] that also returns the real file it judged, to be
// run as it is: resolving path again could lead elsewhere, when a link on
// the way sits in a place uid can write.
func ProgramFile(path string, uid int) (name, real string, writable error, err error) {
	if path, err = filepath.Abs(path); err != nil {
		return "", "", nil, err
	}
	if real, err = filepath.EvalSymlinks(path); err != nil {
		return "", "", nil, err
	}
	name = real
	if Check(filepath.Dir(path), uid) == nil {
		name = path
	}
	return name, real, Check(real, uid), nil
}
