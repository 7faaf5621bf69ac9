package shellcmd

import (
	"reflect"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"
)

func TestCommands(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want [][]string
		ok   bool
	}{
		{"one command", "gh pr list", [][]string{{"gh", "pr", "list"}}, true},
		{"quoted words are literals", `gh 'pr' "list"`, [][]string{{"gh", "pr", "list"}}, true},
		{"and-list", "gh pr view && gh pr checks", [][]string{{"gh", "pr", "view"}, {"gh", "pr", "checks"}}, true},
		{"pipeline", "gh pr list | head -n1", [][]string{{"gh", "pr", "list"}, {"head", "-n1"}}, true},
		{"semicolons and newlines", "a; b\nc", [][]string{{"a"}, {"b"}, {"c"}}, true},
		{"command substitution is a command", "gh pr view $(gh pr list)", nil, false},
		{"literal substitution inside", "echo \"$(gh pr list)\"", nil, false},
		{"if and loops are walked", "if gh auth status; then gh pr list; fi", [][]string{{"gh", "auth", "status"}, {"gh", "pr", "list"}}, true},
		{"redirection", "gh pr list > out.txt 2>&1", [][]string{{"gh", "pr", "list"}}, true},
		{"assignment prefix", "GH_HOST=x gh pr list", nil, false},
		{"assignment only", "X=1", nil, false},
		{"PATH assignment prefix", "PATH=./evil git push", nil, false},
		{"PATH assignment before", "PATH=./evil; git push", nil, false},
		{"expansion in a redirection", `gh > "/tmp/x/$GITHUB_TOKEN"`, nil, false},
		{"parameter error in a redirection", `gh 2>${NOPE?$GITHUB_TOKEN}`, nil, false},
		{"glob in a redirection", `gh > *`, nil, false},
		{"process substitution as input", `gh < <(cat x)`, nil, false},
		{"here-document", "gh <<EOF\n$GITHUB_TOKEN\nEOF", nil, false},
		{"quoted here-document", "gh <<'EOF'\nx\nEOF", nil, false},
		{"here-string", `gh <<< "$GITHUB_TOKEN"`, nil, false},
		{"case word", `case $GITHUB_TOKEN in x) gh;; esac`, nil, false},
		{"literal case", `case a in a) gh;; esac`, nil, false},
		{"for words", `for x in $GITHUB_TOKEN; do gh; done`, nil, false},
		{"literal for", `for x in a; do gh; done`, nil, false},
		{"select", `select x in a; do gh; done`, nil, false},
		{"time", "time gh pr list", nil, false},
		{"expansion in a condition", `if [ "$GITHUB_TOKEN" ]; then gh; fi`, nil, false},
		{"literal redirections", "gh pr list > out.txt 2>&1 < /dev/null", [][]string{{"gh", "pr", "list"}}, true},
		{"variable as program", "$cmd pr list", nil, false},
		{"variable as argument", "gh pr view $N", nil, false},
		{"glob argument", "gh pr view *", nil, false},
		{"tilde", "ls ~/x", nil, false},
		{"backslash", `g\h pr`, nil, false},
		{"brace expansion", "gh {a,b}", nil, false},
		{"export", "export X=1; gh", nil, false},
		{"function definition", "f() { gh; }; f", nil, false},
		{"arithmetic", "(( x = 1 )); gh", nil, false},
		{"test clause", "[[ -f x ]] && gh", nil, false},
		{"ansi-c quoting", "gh $'pr'", nil, false},
		{"does not parse", "gh 'unterminated", nil, false},
		{"empty", "", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := Commands(tt.src)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Commands = %q, want %q", got, tt.want)
			}
		})
	}
}

// FuzzCommands: never panics; every reported argv is non-empty; and a
// string Commands accepts is the same whatever the environment holds: each
// word of it (arguments and redirection targets) expands to the same text
// under two environments that give every variable a different value.
func FuzzCommands(f *testing.F) {
	for _, s := range []string{"gh pr list", "a && b | c", "$(x) y", "if a; then b; fi", "f() { g; }",
		`gh > "/tmp/$T"`, "X=1 gh", "gh <<EOF\n$T\nEOF", "for x in a; do gh; done", "gh > out 2>&1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		cmds, ok := Commands(src)
		if !ok && cmds != nil {
			t.Fatal("commands returned with ok=false")
		}
		for _, argv := range cmds {
			if len(argv) == 0 {
				t.Fatal("empty argv")
			}
		}
		if !ok {
			return
		}
		file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
		if err != nil {
			t.Fatalf("accepted a string that does not parse: %v", err)
		}
		envA := expand.FuncEnviron(func(string) string { return "A" })
		envB := expand.FuncEnviron(func(string) string { return "B" })
		syntax.Walk(file, func(n syntax.Node) bool {
			var words []*syntax.Word
			switch n := n.(type) {
			case *syntax.CallExpr:
				words = n.Args
			case *syntax.Redirect:
				if n.Word != nil {
					words = append(words, n.Word)
				}
			}
			for _, w := range words {
				a, errA := expand.Literal(&expand.Config{Env: envA}, w)
				b, errB := expand.Literal(&expand.Config{Env: envB}, w)
				if errA != nil || errB != nil || a != b {
					t.Fatalf("accepted %q, whose word %q depends on the environment", src, a)
				}
			}
			return true
		})
	})
}
