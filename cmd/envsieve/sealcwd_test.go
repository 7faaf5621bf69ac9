//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSealWorkingDirInHome: a launch from HOME itself, or from a directory
// of HOME that is not one of the tree's write places, starts the tree with
// that working directory. Under the namespace seal the masks and HOME's
// read-only view are mounts made after the launcher's start; a working
// directory taken before them still names the real directory beneath, and
// a relative path from it (`cat .aws/credentials`, `echo >> .bashrc`, or
// `cat credentials` from ~/.aws) would reach the real files. The tree's working directory is the same
// path in the sealed view: the credential file is masked and the start-up
// file is read-only by a relative path as by an absolute one. By each
// mechanism and init: the Go init, the C init in the launcher's place
// (--no-shim) and as the resident launcher's child (the shim), Landlock.
// The control (unsealed, once: it does not depend on the mechanism) reads
// and writes both.
func TestSealWorkingDirInHome(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		landlock, cInit bool
		shim, control   bool
	}{
		{"namespaces, the Go init", false, false, false, false},
		{"namespaces, the C init in place", false, true, false, true},
		{"namespaces, the C init resident", false, true, true, false},
		{"landlock", true, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newSealedLauncher(t, tc.landlock, tc.cInit)
			canary := "cwd-canary-" + strings.Repeat("7d", 6)
			s.write(map[string]string{
				".aws/credentials": "[default]\naws_access_key_id=" + canary + "\n",
				".bashrc":          "# the user's\n",
				"docs/notes.txt":   "ordinary\n",
			})
			for _, from := range []struct{ dir, up string }{{"", "."}, {"docs", ".."}, {".aws", ".."}} {
				dir := filepath.Join(s.home, from.dir)
				probe := `cat ` + from.up + `/.aws/credentials 2>/dev/null; cat credentials 2>/dev/null; echo; ` +
					`if echo planted >> ` + from.up + `/.bashrc 2>/dev/null; then echo wrote-bashrc; fi; ` +
					`cat ` + from.up + `/docs/notes.txt`
				for _, sealed := range []bool{true, false} {
					if !sealed && !tc.control {
						continue
					}
					args := []string{"run"}
					if !tc.shim {
						args = append(args, "--no-shim")
					}
					if sealed {
						args = append(args, "--seal")
					}
					out, err := s.command(dir, append(args, "--", "/bin/sh", "-c", probe)...).CombinedOutput()
					got := strings.ReplaceAll(string(out), canary, "<canary>")
					if err != nil {
						t.Fatalf("from %s, sealed %v: %v\n%s", dir, sealed, err, got)
					}
					if !strings.Contains(got, "ordinary") {
						t.Errorf("from %s, sealed %v: the tree does not read an ordinary file:\n%s", dir, sealed, got)
					}
					if sealed {
						if strings.Contains(got, "<canary>") {
							t.Errorf("from %s, sealed: the tree read the credential file by a relative path:\n%s", dir, got)
						}
						if strings.Contains(got, "wrote-bashrc") {
							t.Errorf("from %s, sealed: the tree wrote ~/.bashrc by a relative path:\n%s", dir, got)
						}
					} else if !strings.Contains(got, "<canary>") || !strings.Contains(got, "wrote-bashrc") {
						t.Errorf("control: from %s, unsealed, the tree should read and write both:\n%s", dir, got)
					}
				}
			}
			b, err := os.ReadFile(filepath.Join(s.home, ".bashrc"))
			if err != nil {
				t.Fatal(err)
			}
			want := 0
			if tc.control {
				want = 3 // the controls', one from each directory
			}
			if n := strings.Count(string(b), "planted"); n != want {
				t.Errorf("~/.bashrc holds %d planted lines, want %d:\n%s", n, want, b)
			}
		})
	}
}
