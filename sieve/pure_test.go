package sieve_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestEngineIsPure is the linter rule that keeps the engine pure: sieve,
// internal/detect and internal/pattern import no os, os/exec, net, syscall,
// time, launch or daemon. The parent environment, the clock and the secrets
// come in as values.
func TestEngineIsPure(t *testing.T) {
	forbidden := []string{"os", "os/exec", "net", "syscall", "time", "io/ioutil",
		"github.com/envsieve/envsieve/launch", "github.com/envsieve/envsieve/internal/daemon"}
	for _, dir := range []string{".", "../internal/detect", "../internal/pattern"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no Go files in %s: %v", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			af, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range af.Imports {
				path, _ := strconv.Unquote(imp.Path.Value)
				for _, bad := range forbidden {
					if path == bad || strings.HasPrefix(path, bad+"/") {
						t.Errorf("%s imports %s: the engine must stay pure", f, path)
					}
				}
			}
		}
	}
}
