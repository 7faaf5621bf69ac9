package secret

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"filippo.io/age"
)

// Store is an encrypted file of named secrets: a JSON object encrypted with
// age to an X25519 key of its own. The store file lives in the user's config
// directory and its key in the user's data directory, both 0600 in 0700
// directories; a file or directory that others can read or write is refused.
type Store struct {
	Path    string // the encrypted store, e.g. ~/.config/envsieve/secrets.age
	KeyPath string // its age identity, e.g. ~/.local/share/envsieve/store.key
}

// PermissionError reports a store, key or directory that is open to others,
// or not owned by the user.
type PermissionError struct {
	Path string
	Mode fs.FileMode
	Why  string
}

func (e *PermissionError) Error() string {
	return fmt.Sprintf("%s: %s (mode %04o); envsieve refuses to use it", e.Path, e.Why, e.Mode.Perm())
}

type storeFile struct {
	Version int               `json:"version"`
	Secrets map[string]string `json:"secrets"`
}

// Fetch returns the value stored under name.
func (s *Store) Fetch(_ context.Context, name string) (string, error) {
	data, err := s.read()
	if errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("secret %s: %w: there is no store yet at %s (envsieve secrets set %s)", name, ErrNotFound, s.Path, name)
	}
	if err != nil {
		return "", err
	}
	v, ok := data.Secrets[name]
	if !ok {
		return "", fmt.Errorf("secret %s: %w in the store %s", name, ErrNotFound, s.Path)
	}
	return v, nil
}

// Names returns the stored names, sorted.
func (s *Store) Names() ([]string, error) {
	data, err := s.read()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(data.Secrets))
	for n := range data.Secrets {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// Set stores value under name, creating the store and its key on first use.
func (s *Store) Set(name, value string) error {
	if strings.IndexByte(value, 0) >= 0 {
		return fmt.Errorf("secret %s: a NUL byte cannot be part of an environment value", name)
	}
	return s.update(func(m map[string]string) error {
		m[name] = value
		return nil
	})
}

// Remove deletes name from the store.
func (s *Store) Remove(name string) error {
	return s.update(func(m map[string]string) error {
		if _, ok := m[name]; !ok {
			return fmt.Errorf("secret %s: %w in the store %s", name, ErrNotFound, s.Path)
		}
		delete(m, name)
		return nil
	})
}

func (s *Store) update(change func(map[string]string) error) error {
	if err := privateDir(filepath.Dir(s.Path)); err != nil {
		return err
	}
	unlock, err := lockFile(s.Path + ".lock")
	if err != nil {
		return err
	}
	defer unlock()
	id, err := s.identity(true)
	if err != nil {
		return err
	}
	data, err := s.read()
	switch {
	case errors.Is(err, fs.ErrNotExist):
		data = &storeFile{Version: 1, Secrets: map[string]string{}}
	case err != nil:
		return err
	}
	if err := change(data.Secrets); err != nil {
		return err
	}
	plain, err := json.Marshal(data)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	w, err := age.Encrypt(&buf, id.Recipient())
	if err != nil {
		return fmt.Errorf("encrypt store: %w", err)
	}
	if _, err := w.Write(plain); err != nil {
		return fmt.Errorf("encrypt store: %w", err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("encrypt store: %w", err)
	}
	return writePrivate(s.Path, buf.Bytes())
}

func (s *Store) read() (*storeFile, error) {
	f, err := openPrivate(s.Path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	id, err := s.identity(false)
	if err != nil {
		return nil, err
	}
	r, err := age.Decrypt(f, id)
	if err != nil {
		return nil, fmt.Errorf("decrypt store %s: %w", s.Path, err)
	}
	plain, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("decrypt store %s: %w", s.Path, err)
	}
	var data storeFile
	if err := json.Unmarshal(plain, &data); err != nil || data.Version != 1 {
		return nil, fmt.Errorf("store %s: not a version 1 store", s.Path)
	}
	if data.Secrets == nil {
		data.Secrets = map[string]string{}
	}
	return &data, nil
}

// identity reads the store's key, creating it when create is set and it does
// not exist yet.
func (s *Store) identity(create bool) (*age.X25519Identity, error) {
	f, err := openPrivate(s.KeyPath)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err := privateDir(filepath.Dir(s.KeyPath)); err != nil {
			return nil, err
		}
		id, err := age.GenerateX25519Identity()
		if err != nil {
			return nil, err
		}
		if err := writeNew(s.KeyPath, []byte(id.String()+"\n")); err != nil {
			return nil, err
		}
		return id, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	ids, err := age.ParseIdentities(io.LimitReader(f, 4096))
	if err != nil || len(ids) != 1 {
		return nil, fmt.Errorf("store key %s: not one age identity", s.KeyPath)
	}
	id, ok := ids[0].(*age.X25519Identity)
	if !ok {
		return nil, fmt.Errorf("store key %s: not an X25519 identity", s.KeyPath)
	}
	return id, nil
}

// openPrivate opens a file that must be a regular file owned by the user and
// closed to everyone else, in a directory closed to everyone else.
func openPrivate(path string) (*os.File, error) {
	if err := checkDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDONLY|oNoFollow, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if err := checkPrivate(path, fi, 0o077); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func checkPrivate(path string, fi fs.FileInfo, forbidden fs.FileMode) error {
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return &PermissionError{Path: path, Mode: fi.Mode(), Why: "not a regular file"}
	}
	if uid, ok := fileOwner(fi); ok && uid != os.Getuid() {
		return &PermissionError{Path: path, Mode: fi.Mode(), Why: fmt.Sprintf("owned by uid %d, not by you", uid)}
	}
	if fi.Mode().Perm()&forbidden != 0 {
		return &PermissionError{Path: path, Mode: fi.Mode(), Why: "others can access it; it must be 0600 (0700 for a directory)"}
	}
	return nil
}

// checkDir refuses a directory others can reach: write access would let
// them swap the file, and read or search access shows what is stored
// where (the docs promise a directory closed to everyone else).
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	return checkPrivate(dir, fi, 0o077)
}

// privateDir creates dir 0700 when it is missing and checks it.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return checkDir(dir)
}

// writePrivate replaces path atomically with a 0600 file holding data.
func writePrivate(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// writeNew creates path 0600, failing if it exists.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|oNoFollow, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// lockFile takes an exclusive lock so two `envsieve secrets set` do not lose
// each other's update.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|oNoFollow, 0o600)
	if err != nil {
		return nil, err
	}
	if err := lockExclusive(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { unlock(f); f.Close() }, nil
}
