package layers

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// surfaceLimit is the most exported names the public packages may hold
// together (issue 29: at most 250). Struct fields are not counted; methods
// on exported types, interface methods, types, funcs, vars and consts are.
// The figure stays honest: it is what the packages hold today plus nothing,
// so a new exported name must pay for itself by removing another.
const surfaceLimit = 234

// publicDir reports whether a directory of the module holds a public
// package: anything outside internal/, cmd/ and bench/.
func publicDir(rel string) bool {
	first, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	switch first {
	case "internal", "cmd", "bench", "testdata", ".git":
		return false
	}
	return !strings.Contains(filepath.ToSlash(rel), "/testdata")
}

// exportedNames returns, for one package directory, the set of exported
// names it declares outside its tests: top-level funcs, types, vars and
// consts, and "Type.Method" for each exported method of an exported type
// (interface methods included). The set is a union over every build
// constraint, so a _linux.go file and its _other.go twin count once.
func exportedNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	names := map[string]bool{}
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() || !strings.HasSuffix(n, ".go") || strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, n), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("parse %s: %v", filepath.Join(dir, n), err)
		}
		if f.Name.Name == "main" {
			return nil
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					names[d.Name.Name] = true
					continue
				}
				if recv := recvName(d.Recv.List[0].Type); ast.IsExported(recv) {
					names[recv+"."+d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						names[s.Name.Name] = true
						if it, ok := s.Type.(*ast.InterfaceType); ok {
							for _, m := range it.Methods.List {
								for _, mn := range m.Names {
									if mn.IsExported() {
										names[s.Name.Name+"."+mn.Name] = true
									}
								}
							}
						}
					case *ast.ValueSpec:
						for _, vn := range s.Names {
							if vn.IsExported() {
								names[vn.Name] = true
							}
						}
					}
				}
			}
		}
	}
	return names
}

func recvName(x ast.Expr) string {
	for {
		switch y := x.(type) {
		case *ast.StarExpr:
			x = y.X
		case *ast.IndexExpr:
			x = y.X
		case *ast.IndexListExpr:
			x = y.X
		case *ast.Ident:
			return y.Name
		default:
			return ""
		}
	}
}

// surface counts the exported names of every public package under root.
func surface(t *testing.T, root string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if rel != "." && !publicDir(rel) {
			return fs.SkipDir
		}
		if names := exportedNames(t, path); len(names) > 0 {
			counts[filepath.ToSlash(rel)] = len(names)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return counts
}

// TestSurface keeps the public surface small: the exported names of the
// public packages (struct fields aside) stay at or under surfaceLimit.
func TestSurface(t *testing.T) {
	counts := surface(t, filepath.Join("..", ".."))
	total := 0
	pkgs := make([]string, 0, len(counts))
	for p, n := range counts {
		pkgs = append(pkgs, p)
		total += n
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		t.Logf("%-12s %3d", p, counts[p])
	}
	t.Logf("%-12s %3d (limit %d)", "total", total, surfaceLimit)
	for _, lib := range []string{"policy", "launch", "sieve"} { // the library users are promised
		if counts[lib] == 0 {
			t.Fatalf("found no exported names in %s; the walk is broken", lib)
		}
	}
	if total > surfaceLimit {
		t.Fatalf("the public packages export %d names, more than the limit of %d: "+
			"move what only the module uses under internal/, or unexport it", total, surfaceLimit)
	}
}

// TestSurfaceCatches proves the count sees each kind of exported name and
// that TestSurface's check can fail.
func TestSurfaceCatches(t *testing.T) {
	dir := t.TempDir()
	src := `package p
type T struct{ Field int; hidden int }
func (T) M() {}
func (*T) N() {}
func (T) m() {}
type u struct{}
func (u) X() {}
type I interface{ A(); b() }
type Alias = T
func F() {}
func f() {}
var V, w = 1, 2
const C = 3
`
	if err := os.WriteFile(filepath.Join(dir, "p.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p_test.go"), []byte("package p\nfunc TestX() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := exportedNames(t, dir)
	want := []string{"T", "T.M", "T.N", "I", "I.A", "Alias", "F", "V", "C"}
	for _, w := range want {
		if !got[w] {
			t.Errorf("count missed %s", w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("counted %d names %v, want %d", len(got), got, len(want))
	}
	for _, rel := range []string{"internal/x", "cmd/envsieve", "bench/y", "policy/testdata"} {
		if publicDir(rel) {
			t.Errorf("%s counted as public", rel)
		}
	}
}
