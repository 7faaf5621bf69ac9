package trust

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestProgram: a link an administrator made is matched by its own name
// (npm for npm-cli.js); a link or a copy in the tree's own directory is
// matched by the real file's name, or is refused.
func TestProgram(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to lay out files of two owners")
	}
	const tree = 65534
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	sys := filepath.Join(dir, "sys")
	own := filepath.Join(dir, "own")
	for _, d := range []string{sys, own} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chown(own, tree, tree)
	realFile := filepath.Join(sys, "npm-cli.js")
	if err := os.WriteFile(realFile, []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Symlink("npm-cli.js", filepath.Join(sys, "npm"))
	os.Symlink(realFile, filepath.Join(own, "gh"))
	copied := filepath.Join(own, "copy")
	os.WriteFile(copied, []byte("x"), 0o755)
	os.Chown(copied, tree, tree)

	tests := []struct {
		path, name string
		writable   bool
	}{
		{filepath.Join(sys, "npm"), filepath.Join(sys, "npm"), false},
		{filepath.Join(own, "gh"), realFile, false},
		{copied, copied, true},
	}
	for _, tt := range tests {
		name, writable, err := Program(tt.path, tree)
		if err != nil {
			t.Fatalf("Program(%s): %v", tt.path, err)
		}
		if name != tt.name || (writable != nil) != tt.writable {
			t.Errorf("Program(%s) = %s, %v; want %s, writable %v", tt.path, name, writable, tt.name, tt.writable)
		}
		if writable != nil && !errors.Is(writable, ErrWritable) {
			t.Errorf("%v does not wrap ErrWritable", writable)
		}
	}
}
