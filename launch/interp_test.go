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
	// A link to a directory that does not exist, in a directory the tree
	// cannot write: the tree could create its target.
	dangling := filepath.Join(root, "dangling")
	if err := os.Symlink(filepath.Join(open, "later"), dangling); err != nil {
		t.Fatal(err)
	}
	viaEnv := "sh:" + sh
	if err := os.Mkdir(filepath.Join(root, "sys"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "sys", "wrapped"), []byte("#!"+sh+"\nexec sh \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, pathEnv string
		ok                  bool
		interp              string // the marker for the shim, when ok
	}{
		{"a system interpreter", script("a", "#!"+sh), "", true, ""},
		{"with an argument", script("b", "#!"+sh+" -e"), "", true, ""},
		{"an interpreter the tree can write", script("c", "#!"+planted), "", false, ""},
		{"env finds a system program", script("d", "#!/usr/bin/env sh"), shDir, true, viaEnv},
		{"env looks in a writable directory first", script("e", "#!/usr/bin/env sh"), open + ":" + shDir, false, ""},
		{"env finds nothing", script("f", "#!/usr/bin/env no-such-program-x"), shDir, false, ""},
		{"env with an option", script("g", "#!/usr/bin/env -S sh -e"), shDir, false, ""},
		{"env in a relative PATH entry", script("h", "#!/usr/bin/env sh"), "bin:" + shDir, false, ""},
		{"not a script", sh, "", true, ""},
		// env X=1 SCRIPT would run the script again, not sh.
		{"env with an assignment", script("i", "#!/usr/bin/env X=1 sh"), shDir, false, ""},
		{"env with a path", script("j", "#!/usr/bin/env ./sh"), shDir, false, ""},
		// One missing directory (~/go/bin) must not turn off every grant,
		// unless the tree could create it before env looks there.
		{"a missing PATH directory the tree cannot create", script("k", "#!/usr/bin/env sh"),
			filepath.Join(root, "missing", "bin") + ":" + shDir, true, viaEnv},
		{"a missing PATH directory in one the tree can write", script("l", "#!/usr/bin/env sh"),
			filepath.Join(open, "missing", "bin") + ":" + shDir, false, ""},
		{"a missing PATH directory in a sticky one everyone can write", script("m", "#!/usr/bin/env sh"),
			filepath.Join(os.TempDir(), "envsieve-no-such-dir-x", "bin") + ":" + shDir, false, ""},
		{"a missing PATH directory behind a dangling link", script("n", "#!/usr/bin/env sh"),
			filepath.Join(dangling, "bin") + ":" + shDir, false, ""},
		{"a missing PATH directory after the one env finds it in", script("o", "#!/usr/bin/env sh"),
			shDir + ":" + filepath.Join(open, "missing"), true, viaEnv},
		// The chain: a script whose interpreter is an env script; the
		// marker names the env hop's program.
		{"an interpreter that is an env script", script("p", "#!"+script("q", "#!/usr/bin/env sh")), shDir, true, viaEnv},
		// What env finds is a script (pyenv's shims, a wrapper): the grant
		// would stop at it.
		{"env finds a script", script("r", "#!/usr/bin/env wrapped"), filepath.Join(root, "sys") + ":" + shDir, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			interp, err := checkInterpreter(tc.path, tc.pathEnv, 65534)
			if tc.ok && err != nil {
				t.Errorf("refused: %v", err)
			}
			if !tc.ok && err == nil {
				t.Error("accepted")
			}
			if tc.ok && interp != tc.interp {
				t.Errorf("interp = %q, want %q", interp, tc.interp)
			}
		})
	}
}
