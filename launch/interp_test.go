//go:build unix

package launch

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCheckInterpreter: a granted script runs only under interpreters the
// tree cannot have written, including what #!/usr/bin/env finds in PATH,
// and every PATH directory env looks in before it.
func TestCheckInterpreter(t *testing.T) {
	root := t.TempDir()
	os.Chmod(root, 0o755)
	open := filepath.Join(root, "open") // writable by everyone, not sticky
	if err := os.Mkdir(open, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(open, 0o777)
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(open, "sh")
	if err := os.WriteFile(planted, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	script := func(name, line string) string {
		p := filepath.Join(root, name)
		if err := os.WriteFile(p, []byte(line+"\necho hi\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	shDir := filepath.Dir(sh)
	for _, tc := range []struct {
		name, path, pathEnv string
		ok                  bool
	}{
		{"a system interpreter", script("a", "#!"+sh), "", true},
		{"with an argument", script("b", "#!"+sh+" -e"), "", true},
		{"an interpreter the tree can write", script("c", "#!"+planted), "", false},
		{"env finds a system program", script("d", "#!/usr/bin/env sh"), shDir, true},
		{"env looks in a writable directory first", script("e", "#!/usr/bin/env sh"), open + ":" + shDir, false},
		{"env finds nothing", script("f", "#!/usr/bin/env no-such-program-x"), shDir, false},
		{"env with an option", script("g", "#!/usr/bin/env -S sh -e"), shDir, false},
		{"env in a relative PATH entry", script("h", "#!/usr/bin/env sh"), "bin:" + shDir, false},
		{"not a script", sh, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkInterpreter(tc.path, tc.pathEnv, 65534)
			if tc.ok && err != nil {
				t.Errorf("refused: %v", err)
			}
			if !tc.ok && err == nil {
				t.Error("accepted")
			}
		})
	}
}
