package sieve_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
)

// Fake credentials, assembled at run time so that no real-looking token sits
// in the source in one piece.
var (
	ghToken  = "ghp" + "_" + strings.Repeat("Zq9X", 9)
	antKey   = "sk-ant-" + strings.Repeat("k3y", 12)
	awsValue = strings.Repeat("wJalrXUtnFEMI/K7MDENG", 2)
)

func mustParse(t testing.TB, src string) *policy.Policy {
	t.Helper()
	p, err := policy.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("parse policy: %v", err)
	}
	return p
}

func decision(res *sieve.Result, key string) (sieve.Decision, bool) {
	for _, d := range res.Decisions {
		if d.Key == key {
			return d, true
		}
	}
	return sieve.Decision{}, false
}

func TestBuild(t *testing.T) {
	type want struct {
		key    string
		kept   bool
		reason sieve.Reason
		detail string
		value  string // checked when kept and non-empty
	}
	tests := []struct {
		name   string
		policy string
		parent []string
		req    sieve.Request
		want   []want
		env    []string // when non-nil, the whole child env
	}{
		{
			name:   "empty policy keeps the safe base only",
			policy: "version: 1\n",
			parent: []string{"PATH=/bin", "HOME=/h", "DATABASE_URL=postgres://u:p@h/db", "PROOF_ENV=x"},
			want: []want{
				{key: "PATH", kept: true, reason: sieve.Base},
				{key: "DATABASE_URL", reason: sieve.NotAllowed},
				{key: "PROOF_ENV", reason: sieve.NotAllowed},
			},
			env: []string{"HOME=/h", "PATH=/bin"},
		},
		{
			name:   "invalid names and entries without = are dropped",
			policy: "version: 1\nallow: [\"*\"]\n",
			parent: []string{"BAD-NAME=1", "BASH_FUNC_x%%=() { :; }", "noequals", "=x", "1ABC=1", "OK=1"},
			want: []want{
				{key: "BAD-NAME", reason: sieve.InvalidName},
				{key: "BASH_FUNC_x%%", reason: sieve.InvalidName},
				{key: "", reason: sieve.InvalidName},
				{key: "=", reason: sieve.InvalidName},
				{key: "1ABC", reason: sieve.InvalidName},
				{key: "OK", kept: true, reason: sieve.Allow},
			},
			env: []string{"OK=1"},
		},
		{
			name:   "a duplicated key keeps its first value",
			policy: "version: 1\n",
			parent: []string{"PATH=/first", "HOME=/h", "PATH=/second"},
			env:    []string{"HOME=/h", "PATH=/first"},
		},
		{
			name:   "a glob admits innocent keys only",
			policy: "version: 1\nbase: none\nallow: [\"MYAPP_*\"]\n",
			parent: []string{"MYAPP_MODE=dev", "MYAPP_TOKEN=abc", "MYAPP_CONFIG=" + ghToken, "MYAPP_APIKEY=x", "MYAPP_KEYBOARD=us"},
			want: []want{
				{key: "MYAPP_MODE", kept: true, reason: sieve.Allow},
				{key: "MYAPP_TOKEN", reason: sieve.SensitiveName, detail: "TOKEN"},
				{key: "MYAPP_CONFIG", reason: sieve.SensitiveValue, detail: "github-token"},
				{key: "MYAPP_APIKEY", reason: sieve.SensitiveName},
				{key: "MYAPP_KEYBOARD", kept: true, reason: sieve.Allow},
			},
		},
		{
			name:   "a glob admits no hex key, structured credential or new credential word",
			policy: "version: 1\nbase: none\nallow: [\"MYAPP_*\", \"COMMIT_SHA\", \"OTP_*\"]\n",
			parent: []string{"MYAPP_DD=3f9c2a7e1b5d4c8e9a0f6b2d1c4e7a9b", "COMMIT_SHA=9f86d081884c7d659a2feaa0c55ad015a3bf4f1b",
				"MYAPP_PG=host=db user=app password=s3cr3t", "MYAPP_BEARER=x", "OTP_SEED=JBSWY3DPEHPK3PXP", "MYAPP_BUILD_ID=3f9c2a7e1b5d4c8e9a0f6b2d1c4e7a9b"},
			want: []want{
				{key: "MYAPP_DD", reason: sieve.SensitiveValue, detail: "hex-secret"},
				{key: "COMMIT_SHA", kept: true, reason: sieve.Allow},
				{key: "MYAPP_PG", reason: sieve.SensitiveValue, detail: "field-secret"},
				{key: "MYAPP_BEARER", reason: sieve.SensitiveName, detail: "BEARER"},
				{key: "OTP_SEED", reason: sieve.SensitiveName, detail: "SEED"},
				{key: "MYAPP_BUILD_ID", kept: true, reason: sieve.Allow},
			},
		},
		{
			name:   "an exact allow passes the guard",
			policy: "version: 1\nbase: none\nallow: [GITHUB_TOKEN, MYAPP_CONFIG, LD_PRELOAD]\n",
			parent: []string{"GITHUB_TOKEN=" + ghToken, "MYAPP_CONFIG=" + ghToken, "LD_PRELOAD=/x.so"},
			env:    []string{"GITHUB_TOKEN=" + ghToken, "LD_PRELOAD=/x.so", "MYAPP_CONFIG=" + ghToken},
		},
		{
			name:   "star never admits code injection or credentials",
			policy: "version: 1\nbase: none\nallow: [\"*\"]\n",
			parent: []string{"LD_PRELOAD=/x.so", "BASH_ENV=/x", "NODE_OPTIONS=--require x", "FN=() { evil; }",
				"AWS_SECRET_ACCESS_KEY=" + awsValue, "DATABASE_URL=postgres://u:pw@h/db", "PROOF_ENV=x"},
			want: []want{
				{key: "LD_PRELOAD", reason: sieve.CodeInjection},
				{key: "BASH_ENV", reason: sieve.CodeInjection},
				{key: "NODE_OPTIONS", reason: sieve.CodeInjection},
				{key: "FN", reason: sieve.CodeInjection},
				{key: "AWS_SECRET_ACCESS_KEY", reason: sieve.SensitiveName},
				{key: "DATABASE_URL", reason: sieve.SensitiveName},
			},
			env: []string{"PROOF_ENV=x"},
		},
		{
			name:   "curated names skip the name test but not the value test",
			policy: "version: 1\ngroups: [proxy]\n",
			parent: []string{"SSH_AUTH_SOCK=/tmp/ssh-a/agent.1", "HTTPS_PROXY=http://user:pa55word@proxy:3128", "HTTP_PROXY=http://proxy:3128"},
			want: []want{
				{key: "SSH_AUTH_SOCK", kept: true, reason: sieve.Base},
				{key: "HTTPS_PROXY", reason: sieve.SensitiveValue, detail: "url-password"},
				{key: "HTTP_PROXY", kept: true, reason: sieve.Group},
			},
		},
		{
			name:   "deny wins over every admit",
			policy: "version: 1\nallow: [GITHUB_TOKEN, \"MYAPP_*\"]\ndeny: [GITHUB_TOKEN, \"MYAPP_X*\", HOME]\n",
			parent: []string{"GITHUB_TOKEN=" + ghToken, "MYAPP_XY=1", "MYAPP_A=1", "HOME=/h"},
			want: []want{
				{key: "GITHUB_TOKEN", reason: sieve.Denied},
				{key: "MYAPP_XY", reason: sieve.Denied},
				{key: "HOME", reason: sieve.Denied},
				{key: "MYAPP_A", kept: true, reason: sieve.Allow},
			},
		},
		{
			name:   "set adds and overrides; a deny at another level removes it",
			policy: "version: 1\nbase: none\nset: {PAGER: cat, EDITOR: vi, LESS: R}\nprofiles:\n  p: {deny: [LESS]}\n",
			parent: []string{"PAGER=less"},
			req:    sieve.Request{Profile: "p"},
			want: []want{
				{key: "PAGER", kept: true, reason: sieve.Set, value: "cat"},
				{key: "EDITOR", kept: true, reason: sieve.Set, value: "vi"},
				{key: "LESS", reason: sieve.Denied},
			},
			env: []string{"EDITOR=vi", "PAGER=cat"},
		},
		{
			name:   "a profile's extends are unions",
			policy: "version: 1\nbase: none\nprofiles:\n  a: {allow: [A1]}\n  b: {extends: [a], allow: [B1]}\n",
			parent: []string{"A1=1", "B1=1", "C1=1"},
			req:    sieve.Request{Profile: "b"},
			env:    []string{"A1=1", "B1=1"},
		},
		{
			name:   "built-in profile by name",
			policy: "version: 1\nbase: minimal\n",
			parent: []string{"PATH=/bin", "USER=u", "ANTHROPIC_API_KEY=" + antKey, "OPENAI_API_KEY=" + antKey},
			req:    sieve.Request{Profile: "claude"},
			env:    []string{"ANTHROPIC_API_KEY=" + antKey, "PATH=/bin"},
		},
		{
			name: "the first matching rule wins, on program and leading args",
			policy: `version: 1
base: none
rules:
  - {name: push, match: {command: git, args: [push]}, allow: [PUSH_KEY]}
  - {name: git, match: {command: git}, allow: [GIT_KEY]}
`,
			parent: []string{"PUSH_KEY=p", "GIT_KEY=g"},
			req:    sieve.Request{Commands: [][]string{{"/usr/bin/git", "push", "origin"}}},
			env:    []string{"PUSH_KEY=p"},
		},
		{
			name: "args_exact pins the whole argv",
			policy: `version: 1
base: none
rules:
  - {name: push, match: {command: git, args: [push, origin, main], args_exact: true}, allow: [PUSH_KEY]}
`,
			parent: []string{"PUSH_KEY=p"},
			req:    sieve.Request{Commands: [][]string{{"/usr/bin/git", "push", "origin", "main", "--receive-pack=printenv"}}},
			env:    []string{},
		},
		{
			name: "args_exact matches the argv it names",
			policy: `version: 1
base: none
rules:
  - {name: push, match: {command: git, args: [push, origin, "ma*"], args_exact: true}, allow: [PUSH_KEY]}
`,
			parent: []string{"PUSH_KEY=p"},
			req:    sieve.Request{Commands: [][]string{{"/usr/bin/git", "push", "origin", "main"}}},
			env:    []string{"PUSH_KEY=p"},
		},
		{
			name:   "a rule applies only when every command matches it",
			policy: "version: 1\nbase: none\nrules:\n  - {match: {command: gh}, allow: [GITHUB_TOKEN]}\n",
			parent: []string{"GITHUB_TOKEN=" + ghToken},
			req:    sieve.Request{Commands: [][]string{{"gh", "pr"}, {"curl", "x"}}},
			env:    []string{},
		},
		{
			name:   "a rule applies to all commands when all match",
			policy: "version: 1\nbase: none\nrules:\n  - {match: {command: gh}, allow: [GITHUB_TOKEN]}\n",
			parent: []string{"GITHUB_TOKEN=" + ghToken},
			req:    sieve.Request{Commands: [][]string{{"gh", "pr"}, {"gh", "issue"}}},
			env:    []string{"GITHUB_TOKEN=" + ghToken},
		},
		{
			name:   "a pinned rule grants to its bytes in a writable place",
			policy: "version: 1\nbase: none\nrules:\n  - {match: {path: /home/u/bin/tool, sha256: a3f1c0d2e4b5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff}, allow: [GITHUB_TOKEN]}\n",
			parent: []string{"GITHUB_TOKEN=" + ghToken},
			req:    sieve.Request{Commands: [][]string{{"tool"}}, Path: "/home/u/bin/tool", Untrusted: true, Digest: "a3f1c0d2e4b5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff"},
			env:    []string{"GITHUB_TOKEN=" + ghToken},
		},
		{
			name:   "a pinned rule grants nothing to other bytes",
			policy: "version: 1\nbase: none\nrules:\n  - {match: {path: /home/u/bin/tool, sha256: a3f1c0d2e4b5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff}, allow: [GITHUB_TOKEN]}\n",
			parent: []string{"GITHUB_TOKEN=" + ghToken},
			req:    sieve.Request{Commands: [][]string{{"tool"}}, Path: "/home/u/bin/tool", Untrusted: true, Digest: "0000000000000000000000000000000000000000000000000000000000000000"},
			env:    []string{},
		},
		{
			name:   "a pinned rule grants nothing unhashed, even in a system directory",
			policy: "version: 1\nbase: none\nrules:\n  - {match: {path: /usr/bin/tool, sha256: a3f1c0d2e4b5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff}, allow: [GITHUB_TOKEN]}\n",
			parent: []string{"GITHUB_TOKEN=" + ghToken},
			req:    sieve.Request{Commands: [][]string{{"tool"}}, Path: "/usr/bin/tool"},
			env:    []string{},
		},
		{
			name:   "a pinned rule grants nothing at another path",
			policy: "version: 1\nbase: none\nrules:\n  - {match: {path: /home/u/bin/tool, sha256: a3f1c0d2e4b5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff}, allow: [GITHUB_TOKEN]}\n",
			parent: []string{"GITHUB_TOKEN=" + ghToken},
			req:    sieve.Request{Commands: [][]string{{"tool"}}, Path: "/home/u/x/tool", Untrusted: true, Digest: "a3f1c0d2e4b5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff"},
			env:    []string{},
		},
		{
			name:   "a pinned rule applies to the first command only",
			policy: "version: 1\nbase: none\nrules:\n  - {match: {path: /home/u/bin/tool, sha256: a3f1c0d2e4b5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff}, allow: [GITHUB_TOKEN]}\n",
			parent: []string{"GITHUB_TOKEN=" + ghToken},
			req:    sieve.Request{Commands: [][]string{{"tool"}, {"/home/u/bin/tool"}}, Path: "/home/u/bin/tool", Untrusted: true, Digest: "a3f1c0d2e4b5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff"},
			env:    []string{},
		},
		{
			name:   "an unpinned path rule grants nothing in a writable place",
			policy: "version: 1\nbase: none\nrules:\n  - {match: {path: /home/u/bin/tool}, allow: [GITHUB_TOKEN]}\n",
			parent: []string{"GITHUB_TOKEN=" + ghToken},
			req:    sieve.Request{Commands: [][]string{{"tool"}}, Path: "/home/u/bin/tool", Untrusted: true, Digest: "a3f1c0d2e4b5968778695a4b3c2d1e0f00112233445566778899aabbccddeeff"},
			env:    []string{},
		},
		{
			name:   "a path rule names one file, not a glob",
			policy: "version: 1\nbase: none\nrules:\n  - {match: {path: /usr/bin/g*}, allow: [GITHUB_TOKEN]}\n",
			parent: []string{"GITHUB_TOKEN=" + ghToken},
			req:    sieve.Request{Commands: [][]string{{"gh"}}, Path: "/usr/bin/gh"},
			env:    []string{},
		},
		{
			name:   "a path rule needs a path",
			policy: "version: 1\nbase: none\nrules:\n  - {match: {command: /usr/bin/gh}, allow: [GITHUB_TOKEN]}\n",
			parent: []string{"GITHUB_TOKEN=" + ghToken},
			req:    sieve.Request{Commands: [][]string{{"gh"}}},
			env:    []string{},
		},
		{
			name:   "a path rule matches the resolved path",
			policy: "version: 1\nbase: none\nrules:\n  - {match: {command: /usr/bin/gh}, allow: [GITHUB_TOKEN]}\n",
			parent: []string{"GITHUB_TOKEN=" + ghToken},
			req:    sieve.Request{Commands: [][]string{{"gh"}}, Path: "/usr/bin/gh"},
			env:    []string{"GITHUB_TOKEN=" + ghToken},
		},
		{
			name:   "secrets are injected by name",
			policy: "version: 1\nbase: none\ntools:\n  web: {injects_env: [FIRECRAWL_API_KEY]}\n",
			parent: []string{"GITHUB_TOKEN=old"},
			req:    sieve.Request{Tool: "web", Secrets: []string{"GITHUB_TOKEN"}},
			want: []want{
				{key: "GITHUB_TOKEN", kept: true, reason: sieve.Secret, value: ghToken},
				{key: "FIRECRAWL_API_KEY", kept: true, reason: sieve.Secret, value: "fc-1"},
			},
		},
		{
			name:   "audit mode keeps all but the code-injection floor",
			policy: "version: 1\nmode: audit\nbase: none\nallow: [LD_LIBRARY_PATH]\n",
			parent: []string{"PROOF_ENV=x", "GITHUB_TOKEN=" + ghToken, "LD_PRELOAD=/x.so", "LD_LIBRARY_PATH=/l", "BAD-NAME=1"},
			want: []want{
				{key: "PROOF_ENV", kept: true, reason: sieve.NotAllowed},
				{key: "GITHUB_TOKEN", kept: true, reason: sieve.NotAllowed},
				{key: "LD_PRELOAD", reason: sieve.NotAllowed},
				{key: "LD_LIBRARY_PATH", kept: true, reason: sieve.Allow},
				{key: "BAD-NAME", reason: sieve.InvalidName},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, tt.policy)
			res, err := sieve.Build(sieve.Input{Parent: tt.parent, Policy: p, Request: tt.req,
				SecretValues: map[string]string{"GITHUB_TOKEN": ghToken, "FIRECRAWL_API_KEY": "fc-1"}})
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			for _, w := range tt.want {
				d, ok := decision(res, w.key)
				if !ok {
					t.Errorf("no decision for %q", w.key)
					continue
				}
				if d.Kept != w.kept || d.Reason != w.reason {
					t.Errorf("%q: kept=%v reason=%s, want kept=%v reason=%s", w.key, d.Kept, d.Reason, w.kept, w.reason)
				}
				if w.detail != "" && d.Detail() != w.detail {
					t.Errorf("%q: detail %q, want %q", w.key, d.Detail(), w.detail)
				}
				if w.value != "" && !slices.Contains(res.Env, w.key+"="+w.value) {
					t.Errorf("%q: child lacks the expected value", w.key)
				}
			}
			if tt.env != nil && !slices.Equal(res.Env, tt.env) {
				t.Errorf("env keys = %v, want %v", keys(res.Env), keys(tt.env))
			}
			if !slices.IsSortedFunc(res.Env, func(a, b string) int { return strings.Compare(key(a), key(b)) }) {
				t.Errorf("env is not sorted by key: %v", keys(res.Env))
			}
		})
	}
}

func key(kv string) string { k, _, _ := strings.Cut(kv, "="); return k }

func keys(env []string) []string {
	out := make([]string, len(env))
	for i, kv := range env {
		out[i] = key(kv)
	}
	return out
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name   string
		policy string
		parent []string
		req    sieve.Request
		check  func(error) bool
		want   string
	}{
		{"nil parent", "version: 1\n", nil, sieve.Request{},
			func(err error) bool { return errors.Is(err, sieve.ErrNilParent) }, "nil parent"},
		{"unknown profile", "version: 1\n", []string{}, sieve.Request{Profile: "nope"},
			func(err error) bool { return errors.Is(err, policy.ErrUnknownProfile) }, `profile "nope": unknown profile`},
		{"unknown tool", "version: 1\n", []string{}, sieve.Request{Tool: "nope"},
			func(err error) bool { return errors.Is(err, sieve.ErrUnknownTool) }, `tool "nope": unknown tool`},
		{"missing secret", "version: 1\n", []string{}, sieve.Request{Secrets: []string{"NOPE"}},
			func(err error) bool { var se *sieve.SecretError; return errors.As(err, &se) && se.Name == "NOPE" },
			"secret NOPE: not found in any secret source"},
		{"denied secret", "version: 1\ndeny: [\"GITHUB_*\"]\n", []string{}, sieve.Request{Secrets: []string{"GITHUB_TOKEN"}},
			func(err error) bool { var se *sieve.SecretError; return errors.As(err, &se) && se.Reason == "denied" },
			`secret GITHUB_TOKEN: denied by deny "GITHUB_*" of global (test.yaml:2:8)`},
		{"max_keys", "version: 1\nlimits: {max_keys: 1}\n", []string{"PATH=/b", "HOME=/h"}, sieve.Request{},
			func(err error) bool { var le *sieve.LimitError; return errors.As(err, &le) && le.Limit == "max_keys" },
			"limit max_keys exceeded: 2 > 1; largest: "},
		{"max_bytes", "version: 1\nlimits: {max_bytes: 10}\n", []string{"PATH=/bin/usr/local"}, sieve.Request{},
			func(err error) bool { var le *sieve.LimitError; return errors.As(err, &le) && le.Actual == 20 },
			"limit max_bytes exceeded: 20 > 10; largest: PATH (20 bytes)"},
		{"max_value_bytes from a rule", "version: 1\nrules:\n  - {match: {command: x}, limits: {max_value_bytes: 3}}\n",
			[]string{"PATH=/bin/usr"}, sieve.Request{Commands: [][]string{{"x"}}},
			func(err error) bool {
				var le *sieve.LimitError
				return errors.As(err, &le) && le.Limit == "max_value_bytes"
			},
			"limit max_value_bytes exceeded: 8 > 3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, tt.policy)
			res, err := sieve.Build(sieve.Input{Parent: tt.parent, Policy: p, Request: tt.req, SecretValues: map[string]string{"GITHUB_TOKEN": ghToken}})
			if err == nil {
				t.Fatalf("Build succeeded with %d variables, want an error", len(res.Env))
			}
			if !tt.check(err) {
				t.Errorf("error %v does not have the wanted type", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want it to contain %q", err, tt.want)
			}
			if strings.Contains(err.Error(), ghToken) {
				t.Errorf("error holds a secret value")
			}
		})
	}
}

// TestEmptyEnvIsNotNil guards os/exec's trap: a nil Env would inherit.
func TestEmptyEnvIsNotNil(t *testing.T) {
	res, err := sieve.Build(sieve.Input{Parent: []string{"SECRET=1"}, Policy: mustParse(t, "version: 1\nbase: none\n")})
	if err != nil {
		t.Fatal(err)
	}
	if res.Env == nil || len(res.Env) != 0 {
		t.Fatalf("Env = %v (nil=%v), want an empty non-nil slice", res.Env, res.Env == nil)
	}
}

func TestOneDecisionPerParentEntry(t *testing.T) {
	parent := []string{"A=1", "A=2", "bad-name=1", "x", "PATH=/bin"}
	res, err := sieve.Build(sieve.Input{Parent: parent, Policy: mustParse(t, "version: 1\nset: {Z: z}\n")})
	if err != nil {
		t.Fatal(err)
	}
	added := 0
	for _, d := range res.Decisions {
		if d.Added {
			added++
		}
	}
	if got := len(res.Decisions) - added; got != len(parent) {
		t.Errorf("%d decisions for %d parent entries", got, len(parent))
	}
	if added != 1 {
		t.Errorf("%d added decisions, want 1 (Z)", added)
	}
}

func TestSecretFiles(t *testing.T) {
	// The policy even allows the parent's DB_PASSWORD by exact name: a file
	// delivery still keeps the value out of the environment.
	p := mustParse(t, "version: 1\nbase: none\nallow: [DB_PASSWORD]\n")
	res, err := sieve.Build(sieve.Input{Parent: []string{"DB_PASSWORD=in-parent"}, Policy: p,
		Request:     sieve.Request{Secrets: []string{"DB_PASSWORD"}},
		SecretFiles: map[string]string{"DB_PASSWORD": "/run/user/1/envsieve-secrets-1-x/DB_PASSWORD"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"DB_PASSWORD_FILE=/run/user/1/envsieve-secrets-1-x/DB_PASSWORD"}
	if !slices.Equal(res.Env, want) {
		t.Fatalf("env keys %v, want only DB_PASSWORD_FILE", keys(res.Env))
	}
	if d, _ := decision(res, "DB_PASSWORD"); d.Kept || d.Reason != sieve.Secret || d.Detail() != "delivered as a file" {
		t.Errorf("the parent's DB_PASSWORD: kept %v, %s (%s); want dropped, secret (delivered as a file)", d.Kept, d.Reason, d.Detail())
	}
	if !slices.Equal(res.Injected, []string{"DB_PASSWORD"}) {
		t.Errorf("injected %v", res.Injected)
	}
	_, err = sieve.Build(sieve.Input{Parent: []string{}, Policy: mustParse(t, "version: 1\ndeny: [\"*_FILE\"]\n"),
		Request: sieve.Request{Secrets: []string{"X"}}, SecretFiles: map[string]string{"X": "/p"}})
	var se *sieve.SecretError
	if !errors.As(err, &se) {
		t.Fatalf("a denied NAME_FILE: %v, want a SecretError", err)
	}
}

// TestReasonNames pins the stable names of the reasons.
func TestReasonNames(t *testing.T) {
	want := map[sieve.Reason]string{sieve.Base: "base", sieve.Group: "group", sieve.Allow: "allow", sieve.Set: "set",
		sieve.Secret: "secret", sieve.InvalidName: "invalid-name", sieve.InvalidValue: "invalid-value",
		sieve.Duplicate: "duplicate", sieve.NotAllowed: "not-allowed", sieve.SensitiveName: "sensitive-name",
		sieve.SensitiveValue: "sensitive-value", sieve.CodeInjection: "code-injection", sieve.Denied: "deny"}
	for r, name := range want {
		if r.String() != name {
			t.Errorf("reason %d is %q, want %q", r, r.String(), name)
		}
		if b, _ := r.MarshalText(); string(b) != name {
			t.Errorf("reason %d marshals as %q", r, b)
		}
	}
}

func TestHide(t *testing.T) {
	p := mustParse(t, `version: 1
block_iteration: true
allow: [ANTHROPIC_API_KEY, "MYAPP_*", GITHUB_TOKEN]
hide: [MYAPP_DEBUG, ABSENT]
rules:
  - {match: {command: plain}, block_iteration: false}
  - {match: {command: extra}, hide: [MYAPP_X]}
`)
	parent := []string{"PATH=/bin", "HOME=/h", "ANTHROPIC_API_KEY=" + antKey, "MYAPP_DEBUG=1", "MYAPP_X=2",
		"MYAPP_TOKEN_ISH=" + ghToken, "SSH_AUTH_SOCK=/tmp/agent", "GITHUB_TOKEN=" + ghToken}
	tests := []struct {
		name    string
		argv    []string
		secrets []string
		want    []string
	}{
		{"exact sensitive keys and hide entries", []string{"agent"}, nil, []string{"ANTHROPIC_API_KEY", "GITHUB_TOKEN", "MYAPP_DEBUG"}},
		{"a rule turns it off", []string{"plain"}, nil, nil},
		{"a rule adds names", []string{"extra"}, nil, []string{"ANTHROPIC_API_KEY", "GITHUB_TOKEN", "MYAPP_DEBUG", "MYAPP_X"}},
		{"secrets are hidden", []string{"agent"}, []string{"OTHER_SECRET"}, []string{"ANTHROPIC_API_KEY", "GITHUB_TOKEN", "MYAPP_DEBUG", "OTHER_SECRET"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := sieve.Build(sieve.Input{Parent: parent, Policy: p,
				Request:      sieve.Request{Commands: [][]string{tt.argv}, Secrets: tt.secrets},
				SecretValues: map[string]string{"OTHER_SECRET": "s3cr3t-value"}})
			if err != nil {
				t.Fatal(err)
			}
			if res.BlockIteration != (tt.want != nil) {
				t.Errorf("BlockIteration = %v", res.BlockIteration)
			}
			if !slices.Equal(res.Hide, tt.want) {
				t.Errorf("Hide = %v, want %v", res.Hide, tt.want)
			}
		})
	}
}
