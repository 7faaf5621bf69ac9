package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The regexps isVarName and copiesEnv replace: compiling them cost every
// start of envsieve.
var (
	varNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	copiersRE = regexp.MustCompile(`^(python[0-9.]*|perl[0-9.]*|bash|sh|dash|zsh|ksh)$`)
)

// lintNames are inputs for both: the regexps' edge cases and near misses.
var lintNames = []string{
	"", "_", "__", "A", "z", "1A", "A1", "_1", "9", "MY_TOOL", "MY-TOOL", "my_tool_",
	"MY TOOL", " A", "A ", "A\n", "\nA", "A\x00", "É", "AÉ", "A.B", "$A", "A=",
	"python", "python3", "python3.12", "python3x", "python.", "python..", "pythonista",
	"Python3", "xpython", "python3 ", " python3", "python-3", "python3\n", "pyth",
	"perl", "perl5", "perl5.36", "perl5.36.0", "perlx", "perl6x", "per",
	"bash", "sh", "dash", "zsh", "ksh", "csh", "fish", "bash5", "shx", "ash", "bas",
	"node", "ruby", "env", "python3.12/",
}

func TestIsVarName(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"MY_TOOL", true},
		{"_", true},
		{"a1", true},
		{"", false},
		{"1A", false},
		{"MY-TOOL", false},
		{"A\n", false},
		{"É", false},
	} {
		if got := isVarName(tc.in); got != tc.want {
			t.Errorf("isVarName(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	for _, s := range lintNames {
		if got, want := isVarName(s), varNameRE.MatchString(s); got != want {
			t.Errorf("isVarName(%q) = %v, the regexp says %v", s, got, want)
		}
	}
	for c := range 256 {
		for _, s := range []string{string(rune(c)), "A" + string(byte(c)), string(byte(c)) + "A"} {
			if got, want := isVarName(s), varNameRE.MatchString(s); got != want {
				t.Errorf("isVarName(%q) = %v, the regexp says %v", s, got, want)
			}
		}
	}
}

func TestCopiesEnv(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want bool
	}{
		{"python", true},
		{"python3.12", true},
		{"perl5.36", true},
		{"sh", true},
		{"python3x", false},
		{"pythonista", false},
		{"node", false},
		{"", false},
	} {
		if got := copiesEnv(tc.in); got != tc.want {
			t.Errorf("copiesEnv(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
	for _, s := range lintNames {
		if got, want := copiesEnv(s), copiersRE.MatchString(s); got != want {
			t.Errorf("copiesEnv(%q) = %v, the regexp says %v", s, got, want)
		}
	}
	for c := range 256 {
		for _, lang := range []string{"python", "perl", "python3", "sh"} {
			s := lang + string(byte(c))
			if got, want := copiesEnv(s), copiersRE.MatchString(s); got != want {
				t.Errorf("copiesEnv(%q) = %v, the regexp says %v", s, got, want)
			}
		}
	}
}

// TestUnseen runs the checks lint-env makes before it starts a program.
func TestUnseen(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
		return path
	}
	write("go.mod", "module hello\n\ngo 1.22\n")
	write("main.go", "package main\n\n// #include <stdlib.h>\nimport \"C\"\n\nfunc main() { C.getenv(C.CString(\"HOME\")) }\n")
	build := func(name string, cgo string) string {
		cmd := exec.Command("go", "build", "-o", name, ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "CGO_ENABLED="+cgo, "GOWORK=off", "GOFLAGS=", "GOTOOLCHAIN=local")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build: %v\n%s", err, out)
		}
		return filepath.Join(dir, name)
	}
	for _, tc := range []struct {
		name string
		path string
		want string // a substring; "" for none
	}{
		{"dynamic C program", "/bin/true", ""},
		{"dynamic Go program", build("cgo", "1"), "is a Go program"},
		{"python script", write("tool.py", "#!/usr/bin/env python3\n"), "runs under python3,"},
		{"node script", write("tool.js", "#!/usr/bin/env node\n"), ""},
		{"ELF header alone", write("header", "\x7fELF\x02\x01\x01"), "cannot be inspected (static check "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := unseen(tc.path)
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("unseen(%s) = %q, want %q", tc.path, got, tc.want)
			}
		})
	}
}
