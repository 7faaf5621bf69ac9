package layers

import (
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
