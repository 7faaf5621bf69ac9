package envknob

import (
	"io/fs"
	"os"
	"testing"
)

// TestRuntimeDir: $XDG_RUNTIME_DIR when absolute; else /dev/shm when it is
// a sticky directory (a memory filesystem), else /tmp; never $TMPDIR, which
// envsieve does not read.
func TestRuntimeDir(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_RUNTIME_DIR", dir)
	if got := RuntimeDir(); got != dir {
		t.Errorf("XDG_RUNTIME_DIR=%s: RuntimeDir() = %s", dir, got)
	}
	want := "/tmp"
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && fi.Mode()&fs.ModeSticky != 0 && fi.Mode().Perm()&0o002 != 0 {
		want = "/dev/shm"
	}
	for _, x := range []string{"", "relative/dir"} {
		t.Setenv("XDG_RUNTIME_DIR", x)
		t.Setenv("TMPDIR", dir)
		if got := RuntimeDir(); got != want {
			t.Errorf("XDG_RUNTIME_DIR=%q: RuntimeDir() = %s, want %s", x, got, want)
		}
	}
}
