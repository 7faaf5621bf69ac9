package shellcmd

import (
	"reflect"
	"testing"
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
		{"assignment prefix", "GH_HOST=x gh pr list", [][]string{{"gh", "pr", "list"}}, true},
		{"assignment only", "X=1", nil, true},
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

// FuzzCommands: never panics; every reported argv is non-empty.
func FuzzCommands(f *testing.F) {
	for _, s := range []string{"gh pr list", "a && b | c", "$(x) y", "if a; then b; fi", "f() { g; }"} {
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
	})
}
