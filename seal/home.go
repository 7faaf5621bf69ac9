package seal

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"sort"
	"syscall"
)

// Bounds of sshPrivateKeys: how deep it looks in ~/.ssh, how many entries
// it examines, and how much of each file it reads.
const (
	sshMaxDepth   = 2 // ~/.ssh/KEY and ~/.ssh/DIR/KEY
	sshMaxEntries = 512
	sshHeadBytes  = 4 << 10
)

// privateKeyArmours are how a private key file begins (after white space):
// OpenSSH's own format, the PEM forms (PKCS#1 RSA, SEC1 EC, DSA, PKCS#8
// plain and encrypted), the SSH.com export, and PuTTY's .ppk.
var privateKeyArmours = []string{
	"-----BEGIN OPENSSH PRIVATE KEY-----",
	"-----BEGIN RSA PRIVATE KEY-----",
	"-----BEGIN EC PRIVATE KEY-----",
	"-----BEGIN DSA PRIVATE KEY-----",
	"-----BEGIN PRIVATE KEY-----",
	"-----BEGIN ENCRYPTED PRIVATE KEY-----",
	"---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----",
	"PuTTY-User-Key-File-",
}

// isPrivateKey reports whether head, the start of a file, is a private
// key's armour.
func isPrivateKey(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n\ufeff") // white space, a byte order mark
	for _, a := range privateKeyArmours {
		if bytes.HasPrefix(head, []byte(a)) {
			return true
		}
	}
	return false
}

// sshPrivateKeys returns the files of home's .ssh directory whose content
// is a private key, whatever their names (~/.ssh/work, ~/.ssh/keys/deploy),
// sorted. It is bounded: two levels deep, at most a few hundred entries,
// the first 4 KiB of each regular file. A subdirectory reached through a
// symbolic link is not entered; a symbolic link to a file is read where
// it leads (only a regular file is read: no FIFO, device or directory),
// and is returned as its own path, which a mask follows. Unreadable
// entries are skipped: this widens the seal and never fails it.
func sshPrivateKeys(home string) []string {
	if home == "" {
		return nil
	}
	var keys []string
	budget := sshMaxEntries
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		f, err := os.Open(dir)
		if err != nil {
			return
		}
		names, _ := f.Readdirnames(budget)
		f.Close()
		sort.Strings(names)
		for _, name := range names {
			if budget == 0 {
				return
			}
			budget--
			path := filepath.Join(dir, name)
			fi, err := os.Lstat(path)
			if err != nil {
				continue
			}
			switch {
			case fi.IsDir():
				if depth < sshMaxDepth {
					walk(path, depth+1)
				}
			case fi.Mode().IsRegular() || fi.Mode()&os.ModeSymlink != 0:
				if head, ok := readHead(path, sshHeadBytes); ok && isPrivateKey(head) {
					keys = append(keys, path)
				}
			}
		}
	}
	walk(filepath.Join(home, ".ssh"), 1)
	return keys
}

// readHead reads up to n bytes of path when it is (or leads to) a regular
// file. The open does not block on a FIFO swapped in after a check, and
// the descriptor itself is checked before any read.
func readHead(path string, n int) ([]byte, bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	buf := make([]byte, n)
	m, err := io.ReadFull(f, buf)
	if err != nil && err != io.ErrUnexpectedEOF && err != io.EOF {
		return nil, false
	}
	return buf[:m], true
}
