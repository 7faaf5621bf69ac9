//go:build linux

// The programs are Linux's (Landlock, pidfds, SCM_RIGHTS).

package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"testing"
)

// cPrograms are the C programs under bench/, each with the flags its
// script compiles it with (beyond -o).
var cPrograms = map[string][]string{
	"floor/landlock.c":    {"-O2", "-Wall", "-Werror"},
	"grantfloor/server.c": {"-std=c11", "-O2", "-Wall", "-Wextra", "-Werror"},
	"grantfloor/loop.c":   {"-std=c11", "-O2", "-Wall", "-Wextra", "-Werror", "-Wno-unused-function", "-I", "../shim/libenvsieve"},
	"shim/execloop.c":     {"-O2", "-Wall", "-Werror"},
	"shim/forkexec.c":     {"-O2", "-Wall", "-Werror"},
	"shim/getenv.c":       {"-O2", "-Wall", "-Werror"},
}

// TestCPrograms: every C program under bench/ is listed above, and each
// builds. The build is what rots: grantfloor's loop stopped compiling when
// the shim's st_answer took a descriptor, and nothing said so.
func TestCPrograms(t *testing.T) {
	if _, err := exec.LookPath("cc"); err != nil {
		t.Fatalf("no C compiler (make deps installs gcc): %v", err)
	}
	var found []string
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && filepath.Ext(path) == ".c" {
			found = append(found, filepath.ToSlash(path))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(found)
	for _, path := range found {
		if _, ok := cPrograms[path]; !ok {
			t.Errorf("%s: a C program the test does not build: add it to cPrograms with its script's flags", path)
		}
	}
	for path, flags := range cPrograms {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			args := append(append([]string{}, flags...), "-o", filepath.Join(t.TempDir(), "prog"), path)
			if out, err := exec.Command("cc", args...).CombinedOutput(); err != nil {
				t.Errorf("cc %s: %v\n%s", path, err, out)
			}
		})
	}
}
