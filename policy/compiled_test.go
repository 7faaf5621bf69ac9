package policy_test

import (
	"reflect"
	"testing"

	"github.com/envsieve/envsieve/policy"
)

// TestCompiled checks that Compiled, what the engine reads, is the policy's
// own rules, tools, secrets and local level, for a loaded and a narrowed
// policy, and nil for a nil policy.
func TestCompiled(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte(`version: 1
rules:
  - name: gh
    match: {command: gh}
    allow: [GH_TOKEN]
tools:
  web:
    injects_env: [WEB_TOKEN]
secrets:
  DB_PASSWORD: {from: env}
`))
	if err != nil {
		t.Fatal(err)
	}
	np, err := p.Narrow(".envsieve.yaml", []byte("version: 1\ndeny: [X]\n"))
	if err != nil {
		t.Fatal(err)
	}
	same := func(a, b any) bool { return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() }
	for _, tc := range []struct {
		name string
		p    *policy.Policy
	}{{"loaded", p}, {"narrowed", np}} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.p.Compiled()
			if c == nil || len(c.Rules) != 1 || !same(c.Rules, tc.p.Rules) || !same(c.Tools, tc.p.Tools) ||
				!same(c.Secrets, tc.p.Secrets) || c.LocalLvl != tc.p.LocalLvl {
				t.Errorf("Compiled() = %+v, want the policy's own Rules, Tools, Secrets and LocalLvl", c)
			}
		})
	}
	if np.LocalLvl == nil {
		t.Error("the narrowed policy has no local level")
	}
	if c := (*policy.Policy)(nil).Compiled(); c != nil {
		t.Errorf("nil policy: Compiled() = %+v, want nil", c)
	}
}
