package main

import (
	"io"
	"slices"
	"testing"

	"github.com/envsieve/envsieve/cmd/internal/cli"
)

// TestVerbs checks that the command Main builds alone for a verb is the one
// of that name, and that the whole tree holds every verb.
func TestVerbs(t *testing.T) {
	u := cli.NewUI(io.Discard, io.Discard, false)
	var all []string
	for _, c := range rootCmd(u, "").Commands() {
		all = append(all, c.Name())
	}
	for _, v := range verbs {
		if !slices.Contains(all, v.name) {
			t.Errorf("the whole tree lacks %q", v.name)
		}
		if got := verb([]string{v.name, "--help"}); got != v.name {
			t.Errorf("verb(%q) = %q", v.name, got)
		}
		cmds := rootCmd(u, v.name).Commands()
		if len(cmds) != 1 || cmds[0].Name() != v.name {
			t.Errorf("rootCmd(%q) holds %v, want only %q", v.name, cmds, v.name)
		}
	}
	for _, args := range [][]string{nil, {"help", "run"}, {"--version"}, {"rn"}, {"-h"}} {
		if got := verb(args); got != "" {
			t.Errorf("verb(%q) = %q, want the whole tree", args, got)
		}
	}
}

// TestVerbFlags: each verb lists, and takes, only the flags it uses; a flag
// another verb has is a usage error here, not silently ignored.
func TestVerbFlags(t *testing.T) {
	u := cli.NewUI(io.Discard, io.Discard, false)
	for _, tc := range []struct {
		verb       string
		has, lacks []string
	}{
		{"redact", []string{"policy", "profile", "secret", "tool"}, []string{"audit", "isolate", "seal", "no-shim", "no-broker", "mode"}},
		{"explain", []string{"policy", "profile", "secret", "tool", "mode", "isolate", "seal", "no-shim", "no-broker", "json"}, []string{"audit"}},
		{"run", []string{"policy", "profile", "secret", "tool", "mode", "isolate", "seal", "no-shim", "no-broker", "audit", "env-file"}, nil},
		{"check", []string{"policy"}, []string{"profile", "secret", "audit"}},
		// sh parses its own arguments; its help lists the long ones it takes.
		{"sh", []string{"policy", "profile", "mode", "isolate", "seal", "no-seal", "no-shim", "login"}, []string{"audit", "secret", "tool"}},
		{"profiles", []string{"policy", "json"}, []string{"profile", "secret", "audit"}},
	} {
		c := rootCmd(u, tc.verb).Commands()[0]
		for _, f := range tc.has {
			if c.Flags().Lookup(f) == nil {
				t.Errorf("%s lacks --%s", tc.verb, f)
			}
		}
		for _, f := range tc.lacks {
			if fl := c.Flags().Lookup(f); fl != nil {
				t.Errorf("%s lists --%s, which it does not use", tc.verb, f)
			}
		}
	}
}
