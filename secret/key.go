package secret

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
)

// InstallKey returns the per-install key at path (32 random bytes, stored as
// hex in a 0600 file in a 0700 directory), creating it on first use. The
// redactor uses it for its HMAC tokens, so that the same secret always
// masks to the same token on one machine and to different ones elsewhere.
func InstallKey(path string) ([]byte, error) {
	f, err := openPrivate(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := privateDir(filepath.Dir(path)); err != nil {
			return nil, err
		}
		key := make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, err
		}
		if err := writeNew(path, []byte(hex.EncodeToString(key)+"\n")); err != nil {
			if errors.Is(err, fs.ErrExist) { // another launcher made it first
				return InstallKey(path)
			}
			return nil, err
		}
		return key, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	text, err := io.ReadAll(io.LimitReader(f, 200))
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(text)))
	if err != nil || len(key) != 32 {
		return nil, fmt.Errorf("install key %s: not 32 bytes of hex", path)
	}
	return key, nil
}
