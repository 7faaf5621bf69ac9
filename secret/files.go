package secret

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Files delivers secrets as files: each value in a 0600 file, named for its
// secret, in a private 0700 directory made for one launch. The caller hands
// the child NAME_FILE=path and calls Remove when the child has exited (the
// systemd-credentials idea: the value is never in the environment).
type Files struct {
	Dir string
}

const filesPrefix = "envsieve-secrets-"

// NewFiles makes the private directory under root (the user's runtime
// directory, a tmpfs, when there is one). Directories left by launchers that
// died without cleaning up (SIGKILL) are removed first.
func NewFiles(root string) (*Files, error) {
	removeStale(root)
	dir, err := os.MkdirTemp(root, filesPrefix+strconv.Itoa(os.Getpid())+"-*")
	if err != nil {
		return nil, fmt.Errorf("secret files: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("secret files: %w", err)
	}
	return &Files{Dir: dir}, nil
}

// Write stores value in a 0600 file named name and returns its path.
func (f *Files) Write(name, value string) (string, error) {
	if name == "" || strings.ContainsAny(name, "/\x00") || name == "." || name == ".." {
		return "", fmt.Errorf("secret %q: not a file name", name)
	}
	path := filepath.Join(f.Dir, name)
	if err := writeNew(path, []byte(value)); err != nil {
		return "", fmt.Errorf("secret %s: write file: %w", name, err)
	}
	return path, nil
}

// Remove deletes the directory and every file in it.
func (f *Files) Remove() error {
	return os.RemoveAll(f.Dir)
}

// removeStale removes secret directories of launchers that no longer run.
func removeStale(root string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), filesPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 {
			continue
		}
		if processGone(pid) {
			fi, err := os.Lstat(filepath.Join(root, e.Name()))
			if err == nil && checkPrivate(e.Name(), fi, 0o077) == nil {
				os.RemoveAll(filepath.Join(root, e.Name()))
			}
		}
	}
}

// FDPath is the path by which a process opens its own descriptor fd.
func FDPath(fd int) string { return "/dev/fd/" + strconv.Itoa(fd) }
