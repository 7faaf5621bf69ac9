package launch

import (
	"slices"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/nest"
	"github.com/envsieve/envsieve/internal/shimwire"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
)

// TestGrantEnvCached: a granted program's environment is built once per
// distinct start (same rule, request and what the rule takes from the
// caller: its passed keys) and rebuilt whenever any of them differs, so a
// cached build never hands one caller's keys to another start; a caller
// key the rule does not pass changes nothing.
func TestGrantEnvCached(t *testing.T) {
	src := "version: 1\nbase: none\nallow: [PATH, FOO]\nrules:\n  - {name: gh, match: {command: gh}, allow: [GITHUB_TOKEN], pass: [FOO]}\n"
	pol, err := policy.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	s := &shimRun{l: &Plan{host: &Host{}, opt: Options{Parent: []string{"PATH=/usr/bin", "GITHUB_TOKEN=tok"}, Policy: pol}},
		base: map[string]string{"PATH": "/usr/bin"}, hidden: map[string]bool{}, decision: map[string]*sieve.Decision{"GITHUB_TOKEN": {Key: "GITHUB_TOKEN"}}}
	rule := pol.Rules[0]
	build := func(argv []string, env ...string) []string {
		t.Helper()
		r := &shimwire.StartRequest{Start: &shimwire.Start{Path: "/usr/bin/gh", Argv: argv, Env: env}}
		req := sieve.Request{Commands: [][]string{argv}, Path: "/usr/bin/gh"}
		got, _, err := s.grantEnvCached(r, req, rule)
		if err != nil {
			t.Fatal(err)
		}
		want, _, err := s.grantEnv(r, req, rule)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("cached build %q differs from a fresh one %q", got, want)
		}
		return got
	}
	for _, tc := range []struct {
		name  string
		argv  []string
		env   []string
		want  string
		cache int // entries after this start
	}{
		{"first", []string{"gh"}, []string{"FOO=1"}, "FOO=1", 1},
		{"the same again", []string{"gh"}, []string{"FOO=1"}, "FOO=1", 1},
		{"another caller value", []string{"gh"}, []string{"FOO=2"}, "FOO=2", 2},
		{"another argv", []string{"gh", "pr"}, []string{"FOO=1"}, "FOO=1", 3},
		{"a key the rule does not pass", []string{"gh"}, []string{"FOO=1", "BAR=2"}, "FOO=1", 3},
		{"the passed key unset", []string{"gh"}, []string{"BAR=2"}, "GITHUB_TOKEN=tok", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := build(tc.argv, tc.env...)
			if !slices.Contains(env, tc.want) || !slices.Contains(env, "GITHUB_TOKEN=tok") {
				t.Errorf("built %q, want %s and the grant", env, tc.want)
			}
			if slices.Contains(env, "BAR=2") || (len(tc.env) == 1 && tc.env[0] == "BAR=2" && slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "FOO=") })) {
				t.Errorf("built %q: a key the rule does not pass, or a passed key the caller removed", env)
			}
			if len(s.built) != tc.cache {
				t.Errorf("%d cached builds, want %d", len(s.built), tc.cache)
			}
		})
	}
}

// TestGrantEnvMarker: a granted program's environment carries the marker
// of an envsieve tree, and the marker is never counted as a granted key,
// even when the caller removed it: the program's children keep it.
func TestGrantEnvMarker(t *testing.T) {
	src := "version: 1\nbase: none\nallow: [PATH]\nrules:\n  - {name: gh, match: {command: gh}, allow: [GITHUB_TOKEN]}\n"
	pol, err := policy.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	s := &shimRun{l: &Plan{host: &Host{}, opt: Options{Parent: []string{"PATH=/usr/bin", "GITHUB_TOKEN=tok"}, Policy: pol}},
		base: map[string]string{"PATH": "/usr/bin"}, hidden: map[string]bool{}, decision: map[string]*sieve.Decision{"GITHUB_TOKEN": {Key: "GITHUB_TOKEN"}}}
	for _, callerEnv := range [][]string{{nest.Var + "=1"}, nil} {
		r := &shimwire.StartRequest{Start: &shimwire.Start{Path: "/usr/bin/gh", Argv: []string{"gh"}, Env: callerEnv}}
		env, keys, err := s.grantEnv(r, sieve.Request{Commands: [][]string{{"gh"}}, Path: "/usr/bin/gh"}, pol.Rules[0])
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(env, nest.Var+"=1") {
			t.Errorf("caller %q: the granted program's environment has no marker: %q", callerEnv, env)
		}
		if slices.Contains(keys, nest.Var) || !slices.Contains(keys, "GITHUB_TOKEN") {
			t.Errorf("caller %q: granted keys %q, want GITHUB_TOKEN and not the marker", callerEnv, keys)
		}
	}
}

// TestRuleDrops: the rules that only deny keys, matched by a command name
// alone, go to the shim to be applied in place (ENVSIEVE_SHIM_DROP), and
// only those; every other rule stays in the list the shim asks the
// launcher about.
func TestRuleDrops(t *testing.T) {
	for _, tc := range []struct {
		name, rules string
		drop, globs string
	}{
		{"a catch-all after a grant", "  - {name: gh, match: {command: gh}, allow: [GITHUB_TOKEN]}\n  - {name: all, match: {command: '*'}, deny: [ANTHROPIC_*, OPENAI_API_KEY]}\n",
			"*\tANTHROPIC_*\tOPENAI_API_KEY", "gh"},
		{"a deny with arguments is the launcher's", "  - {name: push, match: {command: git, args: [push]}, deny: [GITHUB_TOKEN]}\n", "", "git"},
		{"a deny that also allows is the launcher's", "  - {name: x, match: {command: x}, deny: [A], allow: [B]}\n", "", "x"},
		{"a deny that sets is the launcher's", "  - {name: x, match: {command: x}, deny: [A], set: {B: c}}\n", "", "x"},
		{"a deny that passes is the launcher's", "  - {name: x, match: {command: x}, deny: [A], pass: [C]}\n", "", "x"},
		{"two deny-only rules", "  - {name: a, match: {command: npm}, deny: [A]}\n  - {name: b, match: {command: 'py*'}, deny: [B, C]}\n",
			"npm\tA\npy*\tB\tC", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := policy.Parse("p.yaml", []byte("version: 1\nrules:\n"+tc.rules))
			if err != nil {
				t.Fatal(err)
			}
			drops, dv := ruleDrops(pol)
			if dv != tc.drop {
				t.Errorf("drop %q, want %q", dv, tc.drop)
			}
			globs, ok := ruleGlobs(pol, drops)
			if !ok || globs != tc.globs {
				t.Errorf("globs %q (%v), want %q", globs, ok, tc.globs)
			}
		})
	}
	// Too long for the shim's buffer: none is applied in place.
	var rules strings.Builder
	for i := 0; i < 200; i++ {
		rules.WriteString("  - {match: {command: prog" + strings.Repeat("x", 20) + "}, deny: [" + strings.Repeat("K", 20) + "]}\n")
	}
	pol, err := policy.Parse("p.yaml", []byte("version: 1\nrules:\n"+rules.String()))
	if err != nil {
		t.Fatal(err)
	}
	if drops, dv := ruleDrops(pol); dv != "" || len(drops) != 0 {
		t.Errorf("a drop list of %d bytes went to the shim", len(dv))
	}
}

// TestGrantEnvKeysWhenFirstProgramGranted: when the launch's first
// program was itself granted by a rule (its environment, and so the
// launch's, holds the rule's keys), a program the launcher starts later
// under that rule still counts them as granted, so its children lose them;
// and a key the rule admits by exact name survives a pass: glob that also
// matches it when the caller lacks it.
func TestGrantEnvKeysWhenFirstProgramGranted(t *testing.T) {
	src := "version: 1\nbase: none\nallow: [PATH]\nrules:\n  - {name: gh, match: {command: gh}, allow: [GITHUB_TOKEN, MY_SECRET], pass: [MY_*]}\n"
	pol, err := policy.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	parent := []string{"PATH=/usr/bin", "GITHUB_TOKEN=tok", "MY_SECRET=s3"}
	l := &Plan{host: &Host{}, opt: Options{Parent: parent, Policy: pol},
		Request: sieve.Request{Commands: [][]string{{"gh"}}, Path: "/usr/bin/gh"}}
	// The first program's environment: the rule's keys in it.
	s := &shimRun{l: l, base: map[string]string{"PATH": "/usr/bin", "GITHUB_TOKEN": "tok", "MY_SECRET": "s3"},
		hidden: map[string]bool{}, decision: map[string]*sieve.Decision{}}
	s.tree, err = l.treeEnv()
	if err != nil {
		t.Fatal(err)
	}
	r := &shimwire.StartRequest{Start: &shimwire.Start{Path: "/usr/bin/gh", Argv: []string{"gh"}, Env: []string{"PATH=/usr/bin"}}}
	env, keys, err := s.grantEnv(r, sieve.Request{Commands: [][]string{{"gh"}}, Path: "/usr/bin/gh"}, pol.Rules[0])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(keys, "GITHUB_TOKEN") || !slices.Contains(keys, "MY_SECRET") {
		t.Errorf("granted keys %q, want GITHUB_TOKEN and MY_SECRET", keys)
	}
	if !slices.Contains(env, "MY_SECRET=s3") {
		t.Errorf("built %q: the rule's own MY_SECRET lost to its pass: glob", env)
	}
}
