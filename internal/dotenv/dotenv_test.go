package dotenv

import (
	"errors"
	"strings"
	"testing"
)

func TestParseDotenv(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Entry
	}{
		{"plain", "A=1\nB=two words\n", []Entry{{"A", "1", 1, 1}, {"B", "two words", 2, 1}}},
		{"export, blanks, comments", "# top\n\n  export A=x # note\n\texport\tB=y\n", []Entry{{"A", "x", 3, 10}, {"B", "y", 4, 9}}},
		{"a # inside an unquoted value", "A=abc#def\n", []Entry{{"A", "abc#def", 1, 1}}},
		{"trailing blanks", "A=v  \t\n", []Entry{{"A", "v", 1, 1}}},
		{"crlf", "A=v\r\nB='w'\r\n", []Entry{{"A", "v", 1, 1}, {"B", "w", 2, 1}}},
		{"no final newline", "A=v", []Entry{{"A", "v", 1, 1}}},
		{"empty value", "A=\nB= # c\n", []Entry{{"A", "", 1, 1}, {"B", "", 2, 1}}},
		{"single quotes are literal", `A='x\n $Y "z" # w'` + "\n", []Entry{{"A", `x\n $Y "z" # w`, 1, 1}}},
		{"double quotes know escapes", `A="a\nb\tc\\d\"e\'f\$g h # i" # c` + "\n", []Entry{{"A", "a\nb\tc\\d\"e'f$g h # i", 1, 1}}},
		{"multi-line quoted", "A=\"l1\nl2\"\nB='m1\nm2'\nC=3\n", []Entry{{"A", "l1\nl2", 1, 1}, {"B", "m1\nm2", 3, 1}, {"C", "3", 5, 1}}},
		{"quotes inside an unquoted value", `A=it's"x"` + "\n", []Entry{{"A", `it's"x"`, 1, 1}}},
		{"export as a key", "export=1\n", []Entry{{"export", "1", 1, 1}}},
		{"empty file", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("f.env", []byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d entries, want %d: %+v", len(got), len(tt.want), got)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("entry %d: got %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestParseDotenvErrors(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"no =", "A=1\nB\n", "f.env:2:2: B has no = and no value"},
		{"blank before =", "A =1\n", "f.env:1:2: blank after A"},
		{"blank after =", "A= 1\n", "f.env:1:3: blank after the ="},
		{"digit first", "1A=x\n", "f.env:1:1: a variable name does not start with a digit"},
		{"bad name byte", "A-B=x\n", `f.env:1:2: '-' in a variable name`},
		{"not a line", "=x\n", "f.env:1:1: want KEY=VALUE"},
		{"unclosed double", "A=1\nB=\"abc\nC=2\n", `f.env:2:3: the " here is not closed`},
		{"unclosed single", "  B='abc\n", "f.env:1:5: the ' here is not closed"},
		{"after closing quote", "A=\"x\"y\n", `f.env:1:6: unexpected 'y' after the closing "`},
		{"unknown escape", "A=\"x\\qy\"\n", `f.env:1:5: unknown escape "\\q"`},
		{"twice", "A=1\nexport A=2\n", "f.env:2:8: A is given twice (first on line 1)"},
		{"nul", "A=1\nB=x\x00y\n", "f.env:2:4: NUL byte"},
		{"lone cr", "A=x\ry\n", "f.env:1:4: a carriage return"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("f.env", []byte(tt.in))
			var de *dotenvError
			if !errors.As(err, &de) {
				t.Fatalf("got %v, want a dotenvError", err)
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("got %q, want it to start with %q", err, tt.want)
			}
		})
	}
}

// FuzzParseDotenv: the parser never panics, an error has a position, and
// what it returns parses back the same once written out double-quoted.
func FuzzParseDotenv(f *testing.F) {
	for _, s := range []string{"A=1\n", "export A='x'\n# c\n", "A=\"a\\nb\" # c\r\n", "A=\"\n", "A= x", "B=x\x00", "A=1\nA=2"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Parse("f", data)
		if err != nil {
			var de *dotenvError
			if !errors.As(err, &de) || de.Line < 1 || de.Col < 1 {
				t.Fatalf("bad error %v", err)
			}
			return
		}
		var b strings.Builder
		r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\r", `\r`)
		for _, e := range got {
			if strings.IndexByte(e.Value, 0) >= 0 {
				t.Fatalf("a NUL in %s", e.Key)
			}
			b.WriteString(e.Key + `="` + r.Replace(e.Value) + "\"\n")
		}
		again, err := Parse("f", []byte(b.String()))
		if err != nil {
			t.Fatalf("round trip: %v", err)
		}
		if len(again) != len(got) {
			t.Fatalf("round trip: %d entries, want %d", len(again), len(got))
		}
		for i := range got {
			if again[i].Key != got[i].Key || again[i].Value != got[i].Value {
				t.Fatalf("round trip: entry %d differs", i)
			}
		}
	})
}
