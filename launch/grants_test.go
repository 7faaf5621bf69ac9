package launch

import (
	"slices"
	"testing"

	"github.com/envsieve/envsieve/internal/nest"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/shim"
	"github.com/envsieve/envsieve/sieve"
)

// TestGrantEnvCached: a granted program's environment is built once per
// distinct start (same rule, request and caller environment) and rebuilt
// whenever any of them differs, so a cached build never hands one caller's
// environment to another start.
func TestGrantEnvCached(t *testing.T) {
	src := "version: 1\nbase: none\nallow: [PATH, FOO]\nrules:\n  - {name: gh, match: {command: gh}, allow: [GITHUB_TOKEN]}\n"
	pol, err := policy.Parse("p.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	s := &ShimRun{l: &Plan{host: &Host{}, opt: Options{Parent: []string{"PATH=/usr/bin", "GITHUB_TOKEN=tok"}, Policy: pol}},
		base: map[string]string{"PATH": "/usr/bin"}, hidden: map[string]bool{}, decision: map[string]*sieve.Decision{"GITHUB_TOKEN": {Key: "GITHUB_TOKEN"}}}
	rule := pol.Rules[0]
	build := func(argv []string, env ...string) []string {
		t.Helper()
		r := &shim.StartRequest{Start: &shim.Start{Path: "/usr/bin/gh", Argv: argv, Env: env}}
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
		{"entries not split the same way", []string{"gh"}, []string{"FOO=1", ""}, "FOO=1", 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := build(tc.argv, tc.env...)
			if !slices.Contains(env, tc.want) || !slices.Contains(env, "GITHUB_TOKEN=tok") {
				t.Errorf("built %q, want %s and the grant", env, tc.want)
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
	s := &ShimRun{l: &Plan{host: &Host{}, opt: Options{Parent: []string{"PATH=/usr/bin", "GITHUB_TOKEN=tok"}, Policy: pol}},
		base: map[string]string{"PATH": "/usr/bin"}, hidden: map[string]bool{}, decision: map[string]*sieve.Decision{"GITHUB_TOKEN": {Key: "GITHUB_TOKEN"}}}
	for _, callerEnv := range [][]string{{nest.Var + "=1"}, nil} {
		r := &shim.StartRequest{Start: &shim.Start{Path: "/usr/bin/gh", Argv: []string{"gh"}, Env: callerEnv}}
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
