package launch

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/envsieve/envsieve/internal/login"
)

// WriteBack writes a refresh's new real tokens (by the token response's
// field: access_token, refresh_token, id_token, expires_in) into the
// user's real file through its format's Update: everything else in the
// file stays, and only real values come from the broker. The file is
// replaced atomically (a temporary file in its directory, the same mode,
// then a rename), never written in place; a symlinked file is written
// where the link points. secret is the renewed refresh token's name: a
// file of several logins (Gemini CLI's MCP token store) renews its entry.
func WriteBack(lf LoginFile, secret string, tokens map[string]string, now time.Time) error {
	var f login.Format
	for _, c := range login.Formats() {
		if c.Name == lf.Format {
			f = c
		}
	}
	if f.Update == nil {
		return fmt.Errorf("write-back: %s: format %q does not take renewed tokens", lf.Path, lf.Format)
	}
	path, err := filepath.EvalSymlinks(lf.Path)
	if err != nil {
		return fmt.Errorf("write-back: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("write-back: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("write-back: %s is not a regular file", path)
	}
	real, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("write-back: %w", err)
	}
	t := login.Tokens{Access: tokens["access_token"], Refresh: tokens["refresh_token"], ID: tokens["id_token"], Now: now, Refreshed: secret}
	if n, err := strconv.ParseInt(tokens["expires_in"], 10, 64); err == nil && n > 0 {
		t.ExpiresIn = time.Duration(n) * time.Second
	}
	out, err := f.Update(real, t)
	if err != nil {
		return fmt.Errorf("write-back: %s: %w", path, err)
	}
	return replaceFile(path, out, fi)
}

// replaceFile replaces path by a file of data with fi's mode (and owner,
// when this process may set it), by rename from the same directory.
func replaceFile(path string, data []byte, fi os.FileInfo) error {
	dir, base := filepath.Split(path)
	tmp, err := os.CreateTemp(dir, "."+base+".envsieve-*")
	if err != nil {
		return fmt.Errorf("write-back: %w", err)
	}
	name := tmp.Name()
	done := false
	defer func() {
		if !done {
			os.Remove(name)
		}
	}()
	if err := tmp.Chmod(fi.Mode().Perm()); err != nil {
		tmp.Close()
		return fmt.Errorf("write-back: %w", err)
	}
	chownLike(tmp, fi)
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write-back: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write-back: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write-back: %w", err)
	}
	if err := os.Rename(name, path); err != nil {
		return fmt.Errorf("write-back: %w", err)
	}
	done = true
	return nil
}
