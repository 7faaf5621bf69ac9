package layers

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// oldMask is the marker masked output used before "hidden" came to mean
// what the shim hides from environ; it is now [MASKED:xxxxxxxx].
var oldMask = "[" + "HIDDEN:"

// oldMaskAllowed are the files that still name the old marker, each to
// recognise or explain what earlier versions wrote.
var oldMaskAllowed = map[string]bool{
	"internal/detect/value.go":     true, // a URL password already masked is a placeholder
	"internal/detect/scan_test.go": true, // ... in either spelling
	"docs/reference.md":            true, // says what the marker was
}

// oldVerdict is the audit verdict for a key the policy dropped, as logs
// of earlier versions write it; envsieve writes "dropped", the word
// explain uses, and only init --from-audit still reads the old one.
var oldVerdict = `"` + "withheld" + `"`

// TestWords keeps one word per idea: masked output says MASKED, wherever
// the code, the docs or the CLI's scripts show it, and the program says
// "dropped", never "withheld", for a key the policy does not give.
func TestWords(t *testing.T) {
	root := filepath.Join("..", "..")
	seen := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" {
				return fs.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".txtar", ".sh", ".c", ".h", ".json":
		default:
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		seen++
		if strings.Contains(string(data), oldMask) && !oldMaskAllowed[rel] {
			t.Errorf("%s shows masked output as %s...]: it is [MASKED:...] now", rel, oldMask)
		}
		if strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") &&
			rel != "cmd/envsieve/cmd_init.go" && strings.Contains(string(data), oldVerdict) {
			t.Errorf("%s says %s: the word is \"dropped\"", rel, oldVerdict)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 100 {
		t.Fatalf("read %d files: the check would be vacuous", seen)
	}
}

// planWord is launch's word for a built launch (launch.Plan). A profile's
// merged view of its levels is its effective policy (policy.Effective,
// (*policy.Policy).Effective, compiled.Merge): the packages that define
// and read that idea name nothing "Plan", so one word keeps one meaning.
var planWord = "Pl" + "an"

// effectivePackages are the packages of the effective policy.
var effectivePackages = []string{"policy", "internal/compiled", "sieve"}

// planNames returns the names declared in the Go files of dir (tests
// aside) that hold planWord: types, funcs, methods, vars, consts, struct
// fields, interface methods and parameters.
func planNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var found []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", filepath.Join(dir, n), err)
		}
		check := func(id *ast.Ident) {
			if id != nil && strings.Contains(id.Name, planWord) {
				found = append(found, fmt.Sprintf("%s: %s", fset.Position(id.Pos()), id.Name))
			}
		}
		ast.Inspect(f, func(x ast.Node) bool {
			switch x := x.(type) {
			case *ast.TypeSpec:
				check(x.Name)
			case *ast.FuncDecl:
				check(x.Name)
			case *ast.ValueSpec:
				for _, id := range x.Names {
					check(id)
				}
			case *ast.Field:
				for _, id := range x.Names {
					check(id)
				}
			case *ast.SelectorExpr:
				check(x.Sel) // a use: a selector such as p.X(...)
			}
			return true
		})
	}
	return found
}

// TestPlanWord keeps "Plan" for the built launch: the effective policy's
// packages declare and use no name that holds it, and no file of the
// module names the old policy-side spellings.
func TestPlanWord(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, pkg := range effectivePackages {
		for _, name := range planNames(t, filepath.Join(root, pkg)) {
			t.Errorf("%s: a profile's merged view is its effective policy (Effective), never a %s: %s is launch's built launch", name, planWord, planWord)
		}
	}
	old := []string{"policy." + planWord, "compiled." + planWord, "New" + planWord + "("}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" {
				return fs.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".txtar":
		default:
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, o := range old {
			if strings.Contains(string(data), o) {
				rel, _ := filepath.Rel(root, path)
				t.Errorf("%s names %s: the policy side's word is Effective", filepath.ToSlash(rel), o)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPlanWordCatches proves planNames sees a declaration and a use.
func TestPlanWordCatches(t *testing.T) {
	dir := t.TempDir()
	src := "package p\n\ntype X struct{ " + planWord + " int }\n\nfunc (x X) F() int { return x." + planWord + " }\n"
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := planNames(t, dir); len(got) != 2 {
		t.Fatalf("planNames found %v, want the field and its use", got)
	}
}
