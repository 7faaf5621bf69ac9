package policy

import (
	"slices"
	"strings"
	"testing"
)

// TestSealPolicy: seal takes off, on or required, a profile's word wins
// over the global level's, and whatever may only narrow (a local policy,
// a sub-agent's profile) may only raise it.
func TestSealPolicy(t *testing.T) {
	p, err := Parse("p.yaml", []byte("version: 1\nseal: on\nprofiles:\n  agent: {seal: required}\n  lax: {seal: off}\n  child: {parent: agent}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		profile string
		want    SealMode
	}{{"", SealOn}, {"agent", SealRequired}, {"lax", SealOff}, {"child", SealRequired}} {
		plan, err := p.Effective(tt.profile)
		if err != nil {
			t.Fatal(err)
		}
		if plan.Seal != tt.want {
			t.Errorf("profile %q: seal %q, want %q", tt.profile, plan.Seal, tt.want)
		}
	}
	if plan, _ := mustDefault(t).Effective(""); plan.Seal != SealOff {
		t.Errorf("the embedded default's global seal is %q, want off", plan.Seal)
	}

	for _, tt := range []struct{ name, src, err string }{
		{"unknown value", "version: 1\nseal: maybe\n", `seal: want off, on or required, got "maybe"`},
		{"a boolean", "version: 1\nseal: true\n", "seal"},
		{"a sub-agent lowers it", "version: 1\nprofiles:\n  a: {seal: required}\n  b: {parent: a, seal: on}\n", "seal on widens the parent's required"},
	} {
		_, err := Parse("p.yaml", []byte(tt.src))
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: %v, want an error containing %q", tt.name, err, tt.err)
		}
	}

	// A local policy may raise it, never lower it.
	if _, err := p.Narrow(".envsieve.yaml", []byte("version: 1\nseal: off\n")); err == nil || !strings.Contains(err.Error(), "seal off widens the policy's on") {
		t.Errorf("a local policy lowering seal: %v", err)
	}
	n, err := p.Narrow(".envsieve.yaml", []byte("version: 1\nseal: required\n"))
	if err != nil {
		t.Fatal(err)
	}
	if plan, _ := n.Effective(""); plan.Seal != SealRequired {
		t.Errorf("a local policy raising seal: %q", plan.Seal)
	}
}

// TestSealMask: seal: {mode, mask} adds the policy's own paths to the
// seal; a plan holds the union of its levels' and the local policy's
// (which can only add); a path that is not ~/ and clean, nor a clean
// absolute path, is an error at its position.
func TestSealMask(t *testing.T) {
	p, err := Parse("p.yaml", []byte("version: 1\nseal: {mask: [/etc/app/token]}\nprofiles:\n"+
		"  a: {seal: {mode: required, mask: [~/.config/app/token, /etc/app/token]}}\n  b: {seal: on}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		profile string
		mode    SealMode
		mask    []string
	}{
		{"", SealOff, []string{"/etc/app/token"}},
		{"a", SealRequired, []string{"/etc/app/token", "~/.config/app/token"}},
		{"b", SealOn, []string{"/etc/app/token"}},
	} {
		plan, err := p.Effective(tt.profile)
		if err != nil {
			t.Fatal(err)
		}
		if plan.Seal != tt.mode || !slices.Equal(sorted(plan.SealMask), sorted(tt.mask)) {
			t.Errorf("profile %q: seal %q mask %q, want %q %q", tt.profile, plan.Seal, plan.SealMask, tt.mode, tt.mask)
		}
	}
	n, err := p.Narrow(".envsieve.yaml", []byte("version: 1\nseal: {mask: [~/.netrc-extra]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if plan, _ := n.Effective("a"); !slices.Contains(plan.SealMask, "~/.netrc-extra") || !slices.Contains(plan.SealMask, "/etc/app/token") {
		t.Errorf("a local policy's mask: %q", plan.SealMask)
	}
	for _, tt := range []struct{ name, seal, err string }{
		{"relative", "{mask: [x]}", `p.yaml:2:15: global: seal: mask: "x" is not`},
		{"the root", "{mask: [/]}", "seal: mask"},
		{"unclean", "{mask: [/etc/../x]}", "seal: mask"},
		{"above HOME", "{mask: [~/../x]}", "seal: mask"},
		{"HOME itself", "{mask: [\"~/\"]}", "seal: mask"},
		{"another user's home", "{mask: [~root/x]}", "seal: mask"},
		{"not a list", "{mask: /x}", "seal: mask: want a list"},
		{"a bad mode", "{mode: maybe}", `seal: want off, on or required, got "maybe"`},
		{"an unknown key", "{paths: [/x]}", `seal: unknown key "paths" (known: mask, mode, write)`},
	} {
		_, err := Parse("p.yaml", []byte("version: 1\nseal: "+tt.seal+"\n"))
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: %v, want an error containing %q", tt.name, err, tt.err)
		}
	}
}

// TestSealWrite: seal: {write} adds places the sealed tree may write; a
// plan holds the union of its levels' and a rule's; a local policy that
// names one is an escalation (it would widen what the tree writes); a path
// that is not ~/ and clean, nor a clean absolute path, is an error at its
// position.
func TestSealWrite(t *testing.T) {
	p, err := Parse("p.yaml", []byte("version: 1\nseal: {write: [/srv/out]}\nprofiles:\n"+
		"  a: {seal: {mode: on, write: [~/.config/app, /srv/out]}}\n  b: {seal: on}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		profile string
		write   []string
	}{
		{"", []string{"/srv/out"}},
		{"a", []string{"/srv/out", "~/.config/app"}},
		{"b", []string{"/srv/out"}},
	} {
		plan, err := p.Effective(tt.profile)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(sorted(plan.SealWrite), sorted(tt.write)) {
			t.Errorf("profile %q: seal write %q, want %q", tt.profile, plan.SealWrite, tt.write)
		}
	}
	_, err = p.Narrow(".envsieve.yaml", []byte("version: 1\nseal: {write: [~/.bashrc]}\n"))
	if err == nil || !strings.Contains(err.Error(), ".envsieve.yaml:2:16: escalation") || !strings.Contains(err.Error(), "seal: write") {
		t.Errorf("a local policy's seal.write: %v, want an escalation at 2:16", err)
	}
	for _, tt := range []struct{ name, seal, err string }{
		{"relative", "{write: [x]}", `p.yaml:2:16: global: seal: write: "x" is not`},
		{"the root", "{write: [/]}", "seal: write"},
		{"unclean", "{write: [/srv/../x]}", "seal: write"},
		{"above HOME", "{write: [~/../x]}", "seal: write"},
		{"HOME itself", "{write: [\"~/\"]}", "seal: write"},
		{"another user's home", "{write: [~root/x]}", "seal: write"},
		{"not a list", "{write: /x}", "seal: write: want a list"},
	} {
		_, err := Parse("p.yaml", []byte("version: 1\nseal: "+tt.seal+"\n"))
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: %v, want an error containing %q", tt.name, err, tt.err)
		}
	}
}

// TestStateDirs: a profile's state_dirs are ~/ and a clean path below
// HOME, the plan holds the union of its levels' (a built-in agent
// profile's too), and anything else is an error at its position.
func TestStateDirs(t *testing.T) {
	p, err := Parse("p.yaml", []byte("version: 1\nprofiles:\n  a: {state_dirs: [~/.a, ~/.config/a]}\n  b: {extends: [a, builtin:codex], state_dirs: [~/.a]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Effective("b")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"~/.a", "~/.config/a", "~/.codex"}; !slices.Equal(sorted(plan.StateDirs), sorted(want)) {
		t.Errorf("state dirs %q, want %q", plan.StateDirs, want)
	}
	if plan, _ := mustDefault(t).Effective("claude"); !slices.Equal(plan.StateDirs, []string{"~/.claude"}) {
		t.Errorf("builtin claude's state dirs: %q", plan.StateDirs)
	}
	for _, bad := range []string{"/etc/x", "~/", "~/../x", "~/a/../b", "~/a/", "~user/x", "x"} {
		_, err := Parse("p.yaml", []byte("version: 1\nprofiles:\n  a: {state_dirs: [\""+bad+"\"]}\n"))
		if err == nil || !strings.Contains(err.Error(), "p.yaml:3:") || !strings.Contains(err.Error(), "state_dirs") {
			t.Errorf("state_dirs %q: %v", bad, err)
		}
	}
	if _, err := Parse("p.yaml", []byte("version: 1\nstate_dirs: [~/.a]\n")); err == nil {
		t.Error("state_dirs at the global level was accepted")
	}
}

func sorted(s []string) []string { s = slices.Clone(s); slices.Sort(s); return s }

func mustDefault(t *testing.T) *Policy {
	t.Helper()
	p, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
