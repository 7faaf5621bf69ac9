package sieve_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/detect"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
)

// fuzzNames and fuzzValues are the alphabets the fuzzer combines: a mix of
// innocent and sensitive names, code-injection names, and values that look
// like credentials or not.
var (
	fuzzNames = []string{"PATH", "HOME", "MYAPP_MODE", "MYAPP_TOKEN", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY",
		"LD_PRELOAD", "BASH_ENV", "PROOF_ENV", "DATABASE_URL", "HTTPS_PROXY", "SSH_AUTH_SOCK", "X", "bad-name", "PAGER",
		"NODE_OPTIONS", "GIT_CONFIG_COUNT", "MY_APIKEY", "KEYBOARD_LAYOUT", "GIT_AUTHOR_NAME"}
	fuzzValues = []string{"", "x", "/usr/bin:/bin", "dev", ghToken, antKey, awsValue, "() { evil; }",
		"http://u:pw@proxy:3128", "http://proxy:3128", "/tmp/ssh-x/agent.1"}
	fuzzPatterns = []string{"*", "MYAPP_*", "*_TOKEN", "GITHUB_TOKEN", "LD_*", "PROOF_ENV", "?", "*PATH*", "HOME", "X", "PAGER", "DATABASE_URL"}
)

// FuzzBuild checks the engine's invariants for random parent environments and
// policies:
//   - no key that a deny entry matches reaches the child;
//   - no sensitive key (by name, value or code injection) is admitted except by
//     an allow entry that names it exactly;
//   - no key absent from the parent, the set values and the secrets reaches
//     the child, and a parent key keeps its first value;
//   - the child's environment has one entry per key.
func FuzzBuild(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5}, []byte{0, 1, 2}, []byte{3}, uint8(0))
	f.Add([]byte{6, 7, 8, 9, 10, 11, 12, 13}, []byte{0}, []byte{}, uint8(1))
	f.Add([]byte("interesting bytes for names"), []byte("allow"), []byte("deny"), uint8(2))
	f.Fuzz(func(t *testing.T, envSeed, allowSeed, denySeed []byte, flags uint8) {
		if len(envSeed) > 200 || len(allowSeed) > 20 || len(denySeed) > 20 {
			return
		}
		parent := []string{} // never nil: the engine refuses a nil parent
		for i := 0; i+1 < len(envSeed); i += 2 {
			parent = append(parent, fuzzNames[int(envSeed[i])%len(fuzzNames)]+"="+fuzzValues[int(envSeed[i+1])%len(fuzzValues)])
		}
		pick := func(seed []byte) []string {
			var out []string
			for _, b := range seed {
				out = append(out, fuzzPatterns[int(b)%len(fuzzPatterns)])
			}
			return out
		}
		allow, deny := pick(allowSeed), pick(denySeed)
		bases := []string{"safe", "minimal", "none"}
		src := fmt.Sprintf("version: 1\nbase: %s\nallow: %s\ndeny: %s\n", bases[int(flags)%3], yamlList(allow), yamlList(deny))
		if flags&4 != 0 {
			src += "groups: [proxy, tls]\n"
		}
		setKey := ""
		if flags&8 != 0 {
			setKey = "PAGER"
			src += "set: {PAGER: cat}\n"
		}
		p, err := policy.Parse("fuzz.yaml", []byte(src))
		if err != nil {
			// A set key that a same-level deny matches is a load error.
			if setKey != "" && strings.Contains(err.Error(), "both set and denied") {
				return
			}
			t.Fatalf("policy does not parse: %v\n%s", err, src)
		}
		var secrets []string
		if flags&16 != 0 {
			secrets = []string{"GITHUB_TOKEN"}
		}
		res, err := sieve.Build(sieve.Input{Parent: parent, Policy: p, Request: sieve.Request{Secrets: secrets},
			SecretValues: map[string]string{"GITHUB_TOKEN": "injected"}})
		if err != nil {
			if _, ok := err.(*sieve.SecretError); ok && len(secrets) > 0 {
				return // the secret was denied
			}
			t.Fatalf("Build: %v", err)
		}
		first := map[string]string{}
		for _, kv := range parent {
			k, v, _ := strings.Cut(kv, "=")
			if _, ok := first[k]; !ok {
				first[k] = v
			}
		}
		exact := map[string]bool{}
		for _, a := range allow {
			if !strings.ContainsAny(a, "*?") {
				exact[a] = true
			}
		}
		seen := map[string]bool{}
		for _, kv := range res.Env {
			k, v, _ := strings.Cut(kv, "=")
			if seen[k] {
				t.Fatalf("key %s twice in the child", k)
			}
			seen[k] = true
			for _, d := range deny {
				if globMatch(d, k) {
					t.Fatalf("denied key %s (deny %q) reached the child", k, d)
				}
			}
			if k == setKey {
				if v != "cat" {
					t.Fatalf("set key %s has another value", k)
				}
				continue
			}
			if len(secrets) > 0 && k == "GITHUB_TOKEN" {
				if v != "injected" {
					t.Fatalf("secret %s has another value", k)
				}
				continue
			}
			pv, ok := first[k]
			if !ok {
				t.Fatalf("key %s reached the child from nowhere", k)
			}
			if pv != v {
				t.Fatalf("key %s does not hold its first parent value", k)
			}
			if exact[k] {
				continue
			}
			if detect.Injection(k, v) {
				t.Fatalf("code-injection key %s admitted without an exact allow", k)
			}
			if _, bad := detect.Value(v); bad {
				t.Fatalf("key %s with a credential-like value admitted without an exact allow", k)
			}
			if _, bad := detect.SensitiveName(k); bad && !curated(p, k) {
				t.Fatalf("sensitive key %s admitted by a wildcard", k)
			}
		}
	})
}

func curated(p *policy.Policy, key string) bool {
	c := p.Catalog()
	for _, g := range c.Groups {
		for _, k := range g.Keys {
			if k == key {
				return true
			}
		}
	}
	for _, b := range c.Bases {
		for _, k := range b.Keys {
			if k == key {
				return true
			}
		}
	}
	return false
}

func yamlList(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = `"` + s + `"`
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// globMatch is an obviously correct reference matcher for '*' and '?'.
func globMatch(pat, s string) bool {
	if pat == "" {
		return s == ""
	}
	switch pat[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if globMatch(pat[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && globMatch(pat[1:], s[1:])
	}
	return s != "" && s[0] == pat[0] && globMatch(pat[1:], s[1:])
}
