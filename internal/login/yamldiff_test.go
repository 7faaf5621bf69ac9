package login

import (
	"strings"
	"testing"

	yamlv3 "go.yaml.in/yaml/v3"
)

// gh reads hosts.yml with yaml.v3 (go.yaml.in/yaml/v3 is its maintained
// home): the faker's parse (goccy/go-yaml) must not miss a token yaml.v3
// finds. yamlv3Leak decodes the real file and the fake one with yaml.v3
// and reports whether a value under one of keys, at any depth, in the real
// file is still a value (or within one) of the fake file. A file yaml.v3
// cannot read is no leak to its readers.
func yamlv3Leak(real, fake []byte, keys ...string) (leak bool) {
	defer func() {
		if recover() != nil {
			leak = false
		}
	}()
	var r, f any
	if yamlv3.Unmarshal(real, &r) != nil || yamlv3.Unmarshal(fake, &f) != nil {
		return false
	}
	var secrets []string
	var walk func(v any, under bool)
	walk = func(v any, under bool) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				hit := false
				for _, key := range keys {
					hit = hit || k == key
				}
				walk(e, hit)
			}
		case map[any]any:
			for k, e := range x {
				ks, _ := k.(string)
				hit := false
				for _, key := range keys {
					hit = hit || ks == key
				}
				walk(e, hit)
			}
		case []any:
			for _, e := range x {
				walk(e, under)
			}
		case string:
			if under && x != "" && !npmEnvRef.MatchString(x) {
				secrets = append(secrets, x)
			}
		}
	}
	walk(r, false)
	var values []string
	var all func(v any)
	all = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				values = append(values, k)
				all(e)
			}
		case map[any]any:
			for _, e := range x {
				all(e)
			}
		case []any:
			for _, e := range x {
				all(e)
			}
		case string:
			values = append(values, x)
		}
	}
	all(f)
	joined := strings.Join(values, "\x00")
	for _, s := range secrets {
		if strings.Contains(joined, s) {
			return true
		}
	}
	return false
}

// yamlKeys are the credential keys of the YAML formats.
var yamlKeys = map[string][]string{
	"gh-hosts": {"oauth_token"},
	"yarnrc":   {"npmAuthToken", "npmAuthIdent"},
}

func TestYAMLv3Differential(t *testing.T) {
	for format, keys := range yamlKeys {
		n := 0
		for _, in := range mutations(fuzzSeeds[format], 800, ":#'\"\\\r\n -{}[],&*!|>?%@`\t") {
			out, _, err := formats[format].Fake([]byte(in), fakeOf)
			if err != nil {
				continue
			}
			n++
			if yamlv3Leak([]byte(in), out, keys...) {
				t.Errorf("%s: yaml.v3 reads a real credential from the fake of %q", format, in)
			}
		}
		t.Logf("%s: %d inputs faked and compared", format, n)
	}
}
