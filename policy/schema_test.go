package policy_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/policy"
)

// TestSchemaInSync keeps docs/policy.schema.json in step with the parser: for
// every mapping of the policy, the schema's properties are exactly the keys
// the parser accepts (which the parser lists when it meets an unknown key),
// and the enums are the parser's values.
func TestSchemaInSync(t *testing.T) {
	raw, err := os.ReadFile("../docs/policy.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var schema map[string]any
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	defs := schema["$defs"].(map[string]any)
	props := func(obj any) []string {
		m := obj.(map[string]any)["properties"].(map[string]any)
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return keys
	}
	known := regexp.MustCompile(`\(known: ([^)]*)\)`)
	parserKeys := func(src string) []string {
		_, err := policy.Parse("p.yaml", []byte(src))
		if err == nil {
			t.Fatalf("policy with an unknown key parsed:\n%s", src)
		}
		m := known.FindStringSubmatch(err.Error())
		if m == nil {
			t.Fatalf("error does not list the known keys: %v", err)
		}
		return strings.Split(m[1], ", ")
	}
	rule := defs["rule"].(map[string]any)
	cases := []struct {
		name   string
		schema []string
		src    string
	}{
		{"policy", props(schema), "version: 1\nzz: 1\n"},
		{"profile", props(defs["profile"]), "version: 1\nprofiles:\n  a: {zz: 1}\n"},
		{"rule", props(rule), "version: 1\nrules:\n  - {match: {command: x}, zz: 1}\n"},
		{"rule match", props(rule["properties"].(map[string]any)["match"]), "version: 1\nrules:\n  - {match: {command: x, zz: 1}}\n"},
		{"tool", props(defs["tool"]), "version: 1\ntools:\n  t: {zz: 1}\n"},
		{"limits", props(defs["limits"]), "version: 1\nlimits: {zz: 1}\n"},
		{"secret", props(defs["secret"]), "version: 1\nsecrets:\n  A: {zz: 1}\n"},
		{"redact", props(schema["properties"].(map[string]any)["redact"]), "version: 1\nredact: {zz: 1}\n"},
		{"audit", props(schema["properties"].(map[string]any)["audit"]), "version: 1\naudit: {zz: 1}\n"},
	}
	for _, c := range cases {
		if got := parserKeys(c.src); !slices.Equal(got, c.schema) {
			t.Errorf("%s: parser keys %v, schema properties %v", c.name, got, c.schema)
		}
	}
	enum := func(def string) []string {
		var out []string
		for _, v := range defs[def].(map[string]any)["enum"].([]any) {
			out = append(out, v.(string))
		}
		sort.Strings(out)
		return out
	}
	if got := enum("mode"); !slices.Equal(got, []string{"audit", "enforce"}) {
		t.Errorf("mode enum %v", got)
	}
	if got := enum("base"); !slices.Equal(got, []string{"minimal", "none", "safe"}) {
		t.Errorf("base enum %v", got)
	}
	p, err := policy.Default()
	if err != nil {
		t.Fatal(err)
	}
	var groups []string
	for _, v := range defs["groups"].(map[string]any)["items"].(map[string]any)["enum"].([]any) {
		groups = append(groups, v.(string))
	}
	sort.Strings(groups)
	if want := p.Catalog().GroupNames(); !slices.Equal(groups, want) {
		t.Errorf("groups enum %v, catalog %v", groups, want)
	}
}
