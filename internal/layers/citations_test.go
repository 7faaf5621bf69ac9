package layers

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The repository's documents that code and docs may point to by section.
var (
	// A newline and the comment marker that opens the next line, so that a
	// citation wrapped over two lines reads as one.
	wrapped = regexp.MustCompile(`\s*\n\s*(?://|#|\*)?\s*`)
	// "docs/design.md section 9.4", "design.md sections 2", "design.md)
	// section 2"; the name after it, when quoted, is checked too.
	designSection = regexp.MustCompile(`design\.md\]?\)?,? sections? (\d+(?:\.\d+)?)(?:, step \d+)?(?:, "([^"]+)")?`)
	// "docs/design.md, "The seal"".
	designName = regexp.MustCompile(`design\.md,? "([^"]+)"`)
	// Within docs/design.md, "section 9" and "(9.2)" point into itself.
	selfSection = regexp.MustCompile(`\bsections? (\d+(?:\.\d+)?)|\((\d+\.\d+)(?:, "[^"]+")?\)`)
	// Files outside the repository that a pointer must not name: the
	// developers' own notes are not shipped.
	outside = regexp.MustCompile(`\b(?:` + "DESIGN" + `|` + "STYLE" + `|` + "CLIENTS" + `)\.md\b|/work/` + `shared`)
)

// outsideWord reports whether text holds a word outside matches.
func outsideWord(text string) bool {
	for _, w := range []string{"DESIGN" + ".md", "STYLE" + ".md", "CLIENTS" + ".md", "/work/" + "shared"} {
		if strings.Contains(text, w) {
			return true
		}
	}
	return false
}

// designHeadings returns docs/design.md's section numbers ("9", "9.4")
// and titles ("the credential broker"), lower case.
func designHeadings(t *testing.T, root string) (nums, titles map[string]bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "docs", "design.md"))
	if err != nil {
		t.Fatal(err)
	}
	nums, titles = map[string]bool{}, map[string]bool{}
	head := regexp.MustCompile(`(?m)^#{2,3} (\d+(?:\.\d+)?)\.? (.+)$`)
	for _, m := range head.FindAllStringSubmatch(string(data), -1) {
		nums[m[1]] = true
		titles[strings.ToLower(m[2])] = true
	}
	// Paragraph titles in italics or bold name places within a section.
	para := regexp.MustCompile(`(?m)^(?:- )?[*]{1,2}([^*]+)[*]{1,2}|^- ([A-Z][a-z]+):`)
	for _, m := range para.FindAllStringSubmatch(string(data), -1) {
		titles[strings.ToLower(m[1]+m[2])] = true
	}
	return nums, titles
}

// knownTitle reports whether a quoted name is a title of design.md, or
// the start of one ("Exec-time grants" for "Exec-time grants, version 2").
func knownTitle(titles map[string]bool, name string) bool {
	name = strings.ToLower(strings.Join(strings.Fields(name), " "))
	for t := range titles {
		if strings.HasPrefix(t, name) {
			return true
		}
	}
	return false
}

// citations returns the bad pointers in one file's text.
func citations(text string, nums, titles map[string]bool) []string {
	// Every pattern below holds one of these words unbroken (wrapped
	// joins lines only where they break on white space): a text with none
	// has no pointer, and skips the regular expressions, which cost the
	// walk over the repository most of its time.
	if !strings.Contains(text, "design.md") && !outsideWord(text) {
		return nil
	}
	flat := wrapped.ReplaceAllString(text, " ")
	var bad []string
	for _, m := range designSection.FindAllStringSubmatch(flat, -1) {
		if !nums[m[1]] {
			bad = append(bad, m[0]+": docs/design.md has no section "+m[1])
		} else if m[2] != "" && !knownTitle(titles, m[2]) {
			bad = append(bad, m[0]+": docs/design.md has no section of that name")
		}
	}
	for _, m := range designName.FindAllStringSubmatch(flat, -1) {
		if !knownTitle(titles, m[1]) {
			bad = append(bad, m[0]+": docs/design.md has no section of that name")
		}
	}
	for _, m := range outside.FindAllString(flat, -1) {
		bad = append(bad, m+": a file outside the repository")
	}
	return bad
}

// staleElsewhere are citations in files that other branches are changing
// at the time of writing (issue 29); each must still be there, so that
// fixing one shortens this list.
var staleElsewhere = map[string]int{}

// TestCitations keeps pointers working: code and docs cite
// docs/design.md by sections it has (number, and name where quoted), and
// never a file outside the repository.
func TestCitations(t *testing.T) {
	root := filepath.Join("..", "..")
	nums, titles := designHeadings(t, root)
	if !nums["2"] || !nums["9.4"] || !knownTitle(titles, "The credential broker") {
		t.Fatalf("docs/design.md's headings not found (%d numbers): the check would be vacuous", len(nums))
	}
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
		case ".go", ".md", ".txtar", ".sh", ".c", ".h", ".yaml":
		default:
			if d.Name() != "Makefile" {
				return nil
			}
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if rel == "internal/layers/citations_test.go" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		seen++
		bad := citations(string(data), nums, titles)
		if rel == "docs/design.md" {
			for _, m := range selfSection.FindAllStringSubmatch(wrapped.ReplaceAllString(string(data), " "), -1) {
				if n := m[1] + m[2]; !nums[n] {
					bad = append(bad, m[0]+": it has no section "+n)
				}
			}
		}
		if n, ok := staleElsewhere[rel]; ok {
			if len(bad) != n {
				t.Errorf("%s: %d stale citations, expected %d while its owners fix them: update staleElsewhere\n%s", rel, len(bad), n, strings.Join(bad, "\n"))
			}
			return nil
		}
		for _, b := range bad {
			t.Errorf("%s: %s", rel, b)
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

// TestCitationsCatch proves the check can fail.
func TestCitationsCatch(t *testing.T) {
	nums := map[string]bool{"2": true, "9": true, "9.4": true}
	titles := map[string]bool{"the credential broker": true, "exec-time grants, version 2": true}
	for _, tc := range []struct {
		text string
		bad  bool
	}{
		{"// see docs/design.md section 9.4, \"The credential broker\".", false},
		{"// (docs/design.md\n// section 2, step 8)", false},
		{"// docs/design.md, \"Exec-time\n// grants\"", false},
		{"// docs/design.md section 13", true},
		{"// docs/design.md section 9.4, \"The seal\"", true},
		{"// docs/design.md, \"No such\"", true},
		{"see " + "STYLE" + ".md", true},
		{"(" + "DESIGN" + ".md section 9)", true},
	} {
		if got := len(citations(tc.text, nums, titles)) > 0; got != tc.bad {
			t.Errorf("%q: bad = %v, want %v", tc.text, got, tc.bad)
		}
	}
}
