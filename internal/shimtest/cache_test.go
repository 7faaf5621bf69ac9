//go:build unix

package shimtest

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestOwnDir(t *testing.T) {
	dir := t.TempDir()
	own := filepath.Join(dir, "own")
	open := filepath.Join(dir, "open")
	link := filepath.Join(dir, "link")
	file := filepath.Join(dir, "file")
	for _, d := range []string{own, open} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(open, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(own, link); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{own: true, open: false, link: false, file: false, filepath.Join(dir, "none"): false} {
		if got := ownDir(p); got != want {
			t.Errorf("ownDir(%s) = %v, want %v", filepath.Base(p), got, want)
		}
	}
}

// TestCachedBuild: the second build of the same sources is the first's
// directory, built once; a failed build is reported and not cached; a
// cache directory others may write is not used.
func TestCachedBuild(t *testing.T) {
	root := cacheRoot
	cacheRoot = t.TempDir()
	t.Cleanup(func() { cacheRoot = root })
	builds := 0
	fail := false
	builder = func(dir string) ([]byte, error) {
		builds++
		if fail {
			return []byte("cc: error"), errors.New("exit status 1")
		}
		return nil, os.WriteFile(filepath.Join(dir, "libenvsieve.so"), []byte("lib"), 0o755)
	}
	t.Cleanup(func() { builder = build; libOut, libErr = nil, nil })
	first, ok := cachedBuild()
	if !ok || libErr != nil || builds != 1 {
		t.Fatalf("first: %q %v %v, %d builds", first, ok, libErr, builds)
	}
	second, ok := cachedBuild()
	if !ok || second != first || builds != 1 {
		t.Fatalf("second: %q %v, %d builds; want %q from the cache", second, ok, builds, first)
	}
	if fi, err := os.Stat(first); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("the cached build is not readable by the tests' unprivileged user: %v %v", fi.Mode(), err)
	}
	// A build that fails: reported, and nothing cached under its key.
	base := filepath.Dir(first)
	if err := os.RemoveAll(first); err != nil {
		t.Fatal(err)
	}
	fail = true
	if _, ok := cachedBuild(); !ok || libErr == nil {
		t.Fatalf("a failed build: ok %v, err %v; want it reported", ok, libErr)
	}
	if ents, _ := os.ReadDir(base); len(ents) != 0 {
		t.Fatalf("a failed build left %d entries in the cache", len(ents))
	}
	fail, libErr = false, nil
	// Someone else may write the cache: not used.
	if err := os.Chmod(base, 0o777); err != nil {
		t.Fatal(err)
	}
	if dir, ok := cachedBuild(); ok {
		t.Fatalf("a cache others may write was used: %s", dir)
	}
}

// TestProgramCached: the same program is compiled once, into the cache;
// other flags make another one.
func TestProgramCached(t *testing.T) {
	root := cacheRoot
	cacheRoot = t.TempDir()
	t.Cleanup(func() { cacheRoot = root })
	src := "int main(void) { return 3; }\n"
	first := Program(t, "three", src)
	fi, err := os.Stat(first)
	if err != nil {
		t.Fatal(err)
	}
	if again := Program(t, "three", src); again != first {
		t.Fatalf("compiled again: %s, then %s", first, again)
	}
	if fi2, _ := os.Stat(first); !fi2.ModTime().Equal(fi.ModTime()) {
		t.Fatal("the cached program was rewritten")
	}
	if other := Program(t, "three", src, "-O0"); other == first {
		t.Fatal("other flags gave the same program")
	}
	if !strings.HasPrefix(first, cacheRoot) {
		t.Fatalf("%s: not in the cache", first)
	}
	err = exec.Command(first).Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("the program: %v, want exit status 3", err)
	}
}
