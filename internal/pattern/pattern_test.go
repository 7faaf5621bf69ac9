package pattern

import (
	"strings"
	"testing"
	"time"
)

func TestCompileErrors(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		want    string // substring of the error message
	}{
		{name: "empty", pattern: "", want: "empty pattern"},
		{name: "open bracket", pattern: "AWS_[A-Z]", want: `reserved byte '[' at offset 4`},
		{name: "close bracket", pattern: "A]", want: `reserved byte ']' at offset 1`},
		{name: "backslash", pattern: `A\*`, want: `reserved byte '\\' at offset 1`},
		{name: "nul", pattern: "A\x00B", want: `reserved byte '\x00' at offset 1`},
		{name: "first reserved byte wins", pattern: "*]x[", want: "at offset 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := Compile(tt.pattern)
			if err == nil {
				t.Fatalf("Compile(%q) = %v, want an error", tt.pattern, g)
			}
			msg := err.Error()
			if !strings.Contains(msg, tt.want) {
				t.Errorf("Compile(%q) error = %q, want it to contain %q", tt.pattern, msg, tt.want)
			}
			if strings.HasSuffix(msg, ".") || strings.ToLower(msg[:1]) != msg[:1] {
				t.Errorf("Compile(%q) error = %q, want lower case and no final period", tt.pattern, msg)
			}
		})
	}
}

func TestMustCompilePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustCompile(\"[\") did not panic")
		}
	}()
	MustCompile("[")
}

func TestMatch(t *testing.T) {
	tests := []struct {
		name    string
		pattern string
		yes     []string
		no      []string
	}{
		{
			name:    "literal",
			pattern: "HOME",
			yes:     []string{"HOME"},
			no:      []string{"", "HOM", "HOMES", "home", "XHOME"},
		},
		{
			name:    "star alone",
			pattern: "*",
			yes:     []string{"", "A", "ANYTHING AT ALL", "\xff"},
		},
		{
			name:    "stars only",
			pattern: "***",
			yes:     []string{"", "A", "ABC"},
		},
		{
			name:    "prefix",
			pattern: "MYAPP_*",
			yes:     []string{"MYAPP_", "MYAPP_X", "MYAPP_DEBUG_LEVEL"},
			no:      []string{"", "MYAPP", "XMYAPP_X", "myapp_x"},
		},
		{
			name:    "suffix",
			pattern: "*_PROXY",
			yes:     []string{"_PROXY", "HTTP_PROXY", "NO_PROXY"},
			no:      []string{"PROXY", "HTTP_PROXY_X", "http_proxy"},
		},
		{
			name:    "infix",
			pattern: "*_TOKEN_*",
			yes:     []string{"_TOKEN_", "A_TOKEN_B", "A_TOKEN_TOKEN_B"},
			no:      []string{"_TOKEN", "TOKEN_", "A_TOKENB"},
		},
		{
			name:    "anchors do not overlap",
			pattern: "AB*BA",
			yes:     []string{"ABBA", "ABXBA", "ABBBA"},
			no:      []string{"ABA", "AB", "BA"},
		},
		{
			name:    "several stars",
			pattern: "A*B*C",
			yes:     []string{"ABC", "AXBXC", "ABBC", "ABCBC", "ACBC"},
			no:      []string{"AC", "ACB", "BAC", "ABCX"},
		},
		{
			name:    "middle segment leftmost",
			pattern: "*AB*ABC",
			yes:     []string{"ABABC", "ABXABC", "XABABABC"},
			no:      []string{"ABC", "ABAB"},
		},
		{
			name:    "question mark",
			pattern: "LC_????",
			yes:     []string{"LC_TIME", "LC_NAME", "LC_????"},
			no:      []string{"LC_ALL", "LC_CTYPE", "LC_"},
		},
		{
			name:    "question mark is one byte not one rune",
			pattern: "?",
			yes:     []string{"A", "\xff"},
			no:      []string{"", "é", "AB"},
		},
		{
			name:    "question marks in segments",
			pattern: "?*_?EY*?",
			yes:     []string{"A_KEYZ", "AB_KEYZ", "A_XEY_KEY", "A_KEY_KEY_Z"},
			no:      []string{"_KEYZ", "A_KEY", "A_K"},
		},
		{
			name:    "question mark in middle segment",
			pattern: "*A?C*",
			yes:     []string{"ABC", "XAXCX", "AAAC"},
			no:      []string{"AC", "AB", "CBA"},
		},
		{
			name:    "path glob",
			pattern: "/usr/*/bin/*",
			yes:     []string{"/usr/local/bin/git", "/usr//bin/", "/usr/a/b/bin/x"},
			no:      []string{"/usr/bin/git", "usr/local/bin/git"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := MustCompile(tt.pattern)
			for _, s := range tt.yes {
				if !g.Match(s) {
					t.Errorf("Glob(%q).Match(%q) = false, want true", tt.pattern, s)
				}
			}
			for _, s := range tt.no {
				if g.Match(s) {
					t.Errorf("Glob(%q).Match(%q) = true, want false", tt.pattern, s)
				}
			}
		})
	}
}

func TestLiteralAndPrefix(t *testing.T) {
	tests := []struct {
		pattern string
		literal string // "" when the pattern is not a literal
		prefix  string
		isPre   bool
	}{
		{pattern: "HOME", literal: "HOME"},
		{pattern: "LC_?", literal: ""},
		{pattern: "MYAPP_*", prefix: "MYAPP_", isPre: true},
		{pattern: "*", prefix: "", isPre: true},
		{pattern: "MYAPP_**"},
		{pattern: "MY?PP_*"},
		{pattern: "*_KEY"},
		{pattern: "A*B*"},
	}
	for _, tt := range tests {
		t.Run(tt.pattern, func(t *testing.T) {
			g := MustCompile(tt.pattern)
			if got := g.String(); got != tt.pattern {
				t.Errorf("String() = %q, want %q", got, tt.pattern)
			}
			lit, ok := g.Literal()
			if lit != tt.literal || ok != (tt.literal != "") {
				t.Errorf("Literal() = %q, %v, want %q, %v", lit, ok, tt.literal, tt.literal != "")
			}
			pre, ok := g.Prefix()
			if pre != tt.prefix || ok != tt.isPre {
				t.Errorf("Prefix() = %q, %v, want %q, %v", pre, ok, tt.prefix, tt.isPre)
			}
		})
	}
}

// pathological holds patterns and subjects that make a backtracking matcher
// take exponential time.
var pathological = []struct {
	name    string
	pattern string
	s       string
}{
	{name: "anchored", pattern: "a*a*a*a*a*a*b", s: strings.Repeat("a", 10000)},
	{name: "unanchored", pattern: "*a*a*a*a*a*a*a*a*b*", s: strings.Repeat("a", 10000)},
	{name: "question marks", pattern: "*?a*a?*a*?a*a?*b", s: strings.Repeat("a", 10000)},
	{name: "long segment", pattern: "*aaaaaaaaab*", s: strings.Repeat("a", 10000)},
}

func TestMatchLinearTime(t *testing.T) {
	// A backtracking matcher needs years for these; ours needs microseconds.
	// The bound is generous so that a loaded CI machine passes, and the
	// fastest of five runs is taken so that one descheduling does not fail
	// the test.
	const bound = 5 * time.Millisecond
	for _, tt := range pathological {
		t.Run(tt.name, func(t *testing.T) {
			g := MustCompile(tt.pattern)
			best := time.Hour
			for range 5 {
				start := time.Now()
				if g.Match(tt.s) {
					t.Fatalf("Glob(%q).Match(%d bytes) = true, want false", tt.pattern, len(tt.s))
				}
				best = min(best, time.Since(start))
			}
			if best > bound {
				t.Errorf("Glob(%q).Match(%d bytes) took %v, want < %v", tt.pattern, len(tt.s), best, bound)
			}
		})
	}
}

func TestMatchDoesNotAllocate(t *testing.T) {
	g := MustCompile("*a?c*x*z")
	s := strings.Repeat("abc", 100) + "xyz"
	if n := testing.AllocsPerRun(100, func() { g.Match(s) }); n != 0 {
		t.Errorf("Match allocates %v times, want 0", n)
	}
}

// refMatch is the obviously correct matcher that FuzzMatch compares Match
// with: dynamic programming over prefixes, quadratic but short.
func refMatch(pattern, s string) bool {
	// prev[j] reports whether the pattern read so far matches s[:j].
	prev := make([]bool, len(s)+1)
	prev[0] = true
	for i := 0; i < len(pattern); i++ {
		cur := make([]bool, len(s)+1)
		c := pattern[i]
		if c == '*' {
			cur[0] = prev[0]
		}
		for j := 1; j <= len(s); j++ {
			switch c {
			case '*':
				cur[j] = prev[j] || cur[j-1]
			case '?':
				cur[j] = prev[j-1]
			default:
				cur[j] = prev[j-1] && s[j-1] == c
			}
		}
		prev = cur
	}
	return prev[len(s)]
}

func FuzzMatch(f *testing.F) {
	for _, seed := range []struct{ pattern, s string }{
		{"HOME", "HOME"},
		{"MYAPP_*", "MYAPP_DEBUG"},
		{"*_TOKEN", "GITHUB_TOKEN"},
		{"a*a*a*a*b", "aaaaaaaaaa"},
		{"?*?", "ab"},
		{"*a?c*", "xxabcxx"},
		{"AB*BA", "ABA"},
		{"[", "["},
		{"", ""},
	} {
		f.Add(seed.pattern, seed.s)
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if len(pattern) > 64 || len(s) > 256 {
			return // keep the reference matcher fast
		}
		g, err := Compile(pattern)
		invalid := pattern == "" || strings.ContainsAny(pattern, "[]\\\x00")
		if (err != nil) != invalid {
			t.Fatalf("Compile(%q) error = %v, want error %v", pattern, err, invalid)
		}
		if err != nil {
			return
		}
		if g.String() != pattern {
			t.Fatalf("Compile(%q).String() = %q", pattern, g.String())
		}
		got, want := g.Match(s), refMatch(pattern, s)
		if got != want {
			t.Fatalf("Glob(%q).Match(%q) = %v, want %v", pattern, s, got, want)
		}
		if lit, ok := g.Literal(); ok && got != (s == lit) {
			t.Fatalf("Glob(%q): Literal() = %q but Match(%q) = %v", pattern, lit, s, got)
		}
		if pre, ok := g.Prefix(); ok && got != strings.HasPrefix(s, pre) {
			t.Fatalf("Glob(%q): Prefix() = %q but Match(%q) = %v", pattern, pre, s, got)
		}
	})
}

func BenchmarkMatch(b *testing.B) {
	benchmarks := []struct {
		name    string
		pattern string
		s       string
	}{
		{name: "literal", pattern: "GITHUB_TOKEN", s: "GITHUB_TOKEN"},
		{name: "prefix", pattern: "MYAPP_*", s: "MYAPP_DEBUG_LEVEL"},
		{name: "suffix miss", pattern: "*_PROXY", s: "XDG_CONFIG_HOME"},
		{name: "infix", pattern: "*_SECRET_*", s: "STRIPE_SECRET_KEY_LIVE"},
	}
	for _, p := range pathological {
		benchmarks = append(benchmarks, struct {
			name    string
			pattern string
			s       string
		}{name: "pathological " + p.name, pattern: p.pattern, s: p.s})
	}
	for _, bm := range benchmarks {
		b.Run(bm.name, func(b *testing.B) {
			g := MustCompile(bm.pattern)
			b.ReportAllocs()
			b.SetBytes(int64(len(bm.s)))
			for b.Loop() {
				g.Match(bm.s)
			}
		})
	}
}
