//go:build linux

package pin

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func digest(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	script := []byte("#!/bin/sh\necho pinned \"$@\"\n")
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sh := write("tool", script)
	elf, err := os.ReadFile("/bin/true")
	if err != nil {
		t.Fatal(err)
	}
	bin := write("true", elf)
	big := filepath.Join(dir, "big")
	if f, err := os.Create(big); err != nil {
		t.Fatal(err)
	} else {
		f.Truncate(MaxSize + 1) // sparse
		f.Close()
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(sh, link); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		want       string // digest; "" means an error
		script     bool
		err        string
	}{
		{"script", sh, digest(script), true, ""},
		{"elf", bin, digest(elf), false, ""},
		{"symlink", link, "", false, "too many levels of symbolic links"},
		{"directory", dir, "", false, "not a regular file"},
		{"too large", big, "", false, ErrTooLarge.Error()},
		{"missing", filepath.Join(dir, "nope"), "", false, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Open(tc.path)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					p.Close()
					t.Fatalf("Open(%s): %v, want an error with %q", tc.path, err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			if p.SHA256 != tc.want || p.Script != tc.script {
				t.Errorf("digest %s script %v, want %s %v", p.SHA256, p.Script, tc.want, tc.script)
			}
		})
	}
}

// TestSealedCopy: once opened, the program that runs is the one hashed. The
// file on disk is replaced and rewritten; the copy neither changes nor
// accepts a write, and it is what execs.
func TestSealedCopy(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tool")
	orig := []byte("#!/bin/sh\necho pinned \"$@\"\n")
	if err := os.WriteFile(path, orig, 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	// The attacker's turn: rewrite in place, then replace by rename.
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho evil\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tool.new")
	os.WriteFile(tmp, []byte("#!/bin/sh\necho evil2\n"), 0o755)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if _, err := p.File.WriteAt([]byte("#!/bin/sh\necho evil3\n"), 0); !errors.Is(err, syscall.EPERM) {
		t.Errorf("write to the sealed copy: %v, want EPERM", err)
	}
	if w, err := os.OpenFile(p.Path(), os.O_WRONLY|os.O_TRUNC, 0); err == nil {
		w.Close()
		t.Errorf("the sealed copy opened for writing and truncation by its /proc name")
	}
	// Run it as a child that inherits it as descriptor 3, as the launcher
	// does: the script's interpreter opens it by name after the exec.
	cmd := exec.Command(FDPath(3), "a", "b")
	cmd.ExtraFiles = []*os.File{p.File}
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil || string(out) != "pinned a b\n" {
		t.Errorf("run the copy: %q, %v; want the hashed script's output", out, err)
	}
	if p.SHA256 != digest(orig) {
		t.Errorf("digest %s, want the original's", p.SHA256)
	}
}

func BenchmarkOpen(b *testing.B) {
	for _, name := range []string{"/bin/sh", "/usr/bin/git"} {
		name, err := filepath.EvalSymlinks(name)
		if err != nil {
			continue
		}
		fi, err := os.Stat(name)
		if err != nil {
			continue
		}
		b.Run(filepath.Base(name), func(b *testing.B) {
			b.SetBytes(fi.Size())
			for b.Loop() {
				p, err := Open(name)
				if err != nil {
					b.Fatal(err)
				}
				p.Close()
			}
		})
	}
}
