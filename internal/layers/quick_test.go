package layers

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// quickSlowLimit is how many tests `make quick` may leave to `make test`:
// the Makefile's QUICK_SLOW and the scripts that say `[short] skip`. The
// figure is their number today, as surfaceLimit is: a test added to them
// must be paid for, or the limit raised in the same commit, in sight of a
// reviewer. (Raised from 64 to 77 when the line moved from a second of
// wall time to half a second of CPU, to bring make quick under 20 s.)
const quickSlowLimit = 77

// shortSkip is a script's line that leaves it to `make test`.
var shortSkip = regexp.MustCompile(`(?m)^\[short\] skip\b`)

// quickSlow returns the names the Makefile's QUICK_SLOW lists, and the
// recipe of its quick target.
func quickSlow(t *testing.T, makefile string) (names []string, recipe string) {
	t.Helper()
	b, err := os.ReadFile(makefile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if rest, ok := strings.CutPrefix(l, "QUICK_SLOW :="); ok {
			for {
				more := strings.HasSuffix(rest, "\\")
				names = append(names, strings.Fields(strings.TrimSuffix(rest, "\\"))...)
				if !more || i+1 >= len(lines) {
					break
				}
				i++
				rest = lines[i]
			}
		}
		if strings.HasPrefix(l, "quick:") {
			recipe = l
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "\t") {
				i++
				recipe += "\n" + lines[i]
			}
		}
	}
	return names, recipe
}

var testFunc = regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)

// TestQuickSkipList keeps `make quick` honest: it runs with -short and
// the skip list, depends on no target that installs (deps, agents) and
// installs nothing itself; every name it skips is a test of the module
// (a stale name hides nothing and misleads); no name twice; and the list
// stays at or under quickSlowLimit.
func TestQuickSkipList(t *testing.T) {
	root := filepath.Join("..", "..")
	names, recipe := quickSlow(t, filepath.Join(root, "Makefile"))
	if len(names) == 0 || recipe == "" {
		t.Fatalf("found %d QUICK_SLOW names and quick recipe %q: the Makefile parse is broken", len(names), recipe)
	}
	if first, _, _ := strings.Cut(recipe, "\n"); strings.TrimSpace(strings.TrimPrefix(first, "quick:")) != "" {
		t.Errorf("quick depends on %q: it must install nothing, and depend on nothing that may", first)
	}
	for _, bad := range []string{"apt-get", "npm ", "pip ", "go install", "$(MAKE)", "deps", "agents"} {
		if strings.Contains(recipe, bad) {
			t.Errorf("quick's recipe holds %q: it installs nothing (make deps and make agents do)", bad)
		}
	}
	if !strings.Contains(recipe, "-short") || !strings.Contains(recipe, "-skip '$(QUICK_SKIP)'") {
		t.Errorf("quick's recipe %q: want go test -short -skip '$(QUICK_SKIP)'", recipe)
	}
	declared := map[string]bool{}
	var scripts []string // those that say [short] skip
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "fuzz" && filepath.Base(filepath.Dir(path)) == "testdata" {
				return fs.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".txtar") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if shortSkip.Match(b) {
				scripts = append(scripts, filepath.Base(path))
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") || strings.Contains(filepath.ToSlash(path), "/testdata/") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
			declared[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("QUICK_SLOW lists %s twice", n)
		}
		seen[n] = true
		if !declared[n] {
			t.Errorf("QUICK_SLOW lists %s, which no test file declares: remove it", n)
		}
	}
	if n := len(names) + len(scripts); n > quickSlowLimit {
		t.Errorf("make quick leaves %d tests to make test (QUICK_SLOW %d, scripts with [short] skip %d: %v), more than %d: make the new one fast under -short, or pay for it",
			n, len(names), len(scripts), scripts, quickSlowLimit)
	}
	t.Logf("QUICK_SLOW: %d tests, [short] skip: %d scripts (limit %d)", len(names), len(scripts), quickSlowLimit)
}

// TestQuickSkipListCatches proves the parse and the checks can fail: a
// made-up Makefile whose quick target installs and skips a test that does
// not exist.
func TestQuickSkipListCatches(t *testing.T) {
	dir := t.TempDir()
	mk := "QUICK_SLOW := TestA TestB \\\n\tTestC\nquick: deps\n\tapt-get install x\n\tgo test ./...\n"
	if err := os.WriteFile(filepath.Join(dir, "Makefile"), []byte(mk), 0o644); err != nil {
		t.Fatal(err)
	}
	names, recipe := quickSlow(t, filepath.Join(dir, "Makefile"))
	if !slices.Equal(names, []string{"TestA", "TestB", "TestC"}) {
		t.Errorf("names %v", names)
	}
	if !strings.Contains(recipe, "apt-get") || !strings.HasPrefix(recipe, "quick: deps") {
		t.Errorf("recipe %q", recipe)
	}
	if testFunc.MatchString("func TestX(b *testing.B)") || !testFunc.MatchString("func TestX(t *testing.T) {") {
		t.Error("testFunc matches the wrong declarations")
	}
	if !shortSkip.MatchString("# a script\n[short] skip 'slow'\nexec x\n") ||
		shortSkip.MatchString("# [short] skip\n[!short] skip\n[short] skipped\n") {
		t.Error("shortSkip matches the wrong lines")
	}
}
