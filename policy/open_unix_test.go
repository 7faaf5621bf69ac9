//go:build unix

package policy

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadFile: only a regular file of the user's (or root's), read whole
// and under the size cap, is a policy file; everything else is refused
// before a byte is read, and never by waiting.
func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	if err := os.WriteFile(good, []byte("version: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, maxFileSize+1), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	link := func(name, target string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	foreign := filepath.Join(dir, "foreign.yaml")
	if err := os.WriteFile(foreign, []byte("version: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	foreignOK := os.Geteuid() == 0 && os.Chown(foreign, 65534, 65534) == nil

	tests := []struct {
		name, path, err string
	}{
		{"regular file", good, ""},
		{"link to a regular file", link("link.yaml", good), "symbolic link"},
		{"link to /proc/self/environ", link("environ.yaml", "/proc/self/environ"), "symbolic link"},
		{"link to /dev/zero", link("zero.yaml", "/dev/zero"), "symbolic link"},
		{"/dev/zero", "/dev/zero", "not a regular file but a device"},
		{"a directory", dir, "not a regular file but a directory"},
		{"a FIFO", fifo, "not a regular file but a named pipe"},
		{"over the size cap", big, "over the limit"},
		{"missing", filepath.Join(dir, "missing.yaml"), "no such file"},
	}
	if foreignOK {
		tests = append(tests, struct{ name, path, err string }{"another user's file", foreign, "owned by uid 65534"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done := make(chan struct{})
			var src []byte
			var err error
			go func() { src, err = ReadFile(tt.path); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("ReadFile hung")
			}
			if tt.err == "" {
				if err != nil || string(src) != "version: 1\n" {
					t.Fatalf("ReadFile = %q, %v", src, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("ReadFile error = %v, want one containing %q", err, tt.err)
			}
			if tt.err != "no such file" && !errors.Is(err, errNotPolicyFile) {
				t.Errorf("error %v does not wrap errNotPolicyFile", err)
			}
			if src != nil {
				t.Errorf("ReadFile returned %d bytes with its error", len(src))
			}
		})
	}
	if !foreignOK {
		t.Log("another user's file: not checked, this test needs root to give a file away")
	}
}
