package sieve_test

import (
	"slices"
	"testing"

	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
)

// TestBrokered: the result names the kept keys whose value must reach the
// child as a fake: the levels' brokered names and the secrets with a
// binding of their own; never a key the child does not get.
func TestBrokered(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte(`version: 1
allow: [ANTHROPIC_API_KEY, OPENAI_API_KEY]
brokered: [ANTHROPIC_API_KEY, GITHUB_TOKEN]
secrets:
  DEPLOY_TOKEN: {broker: {hosts: [deploy.example.com]}}
profiles:
  wide: {allow: [GITHUB_TOKEN], brokered: [OPENAI_API_KEY]}
`))
	if err != nil {
		t.Fatal(err)
	}
	parent := []string{"PATH=/bin", "ANTHROPIC_API_KEY=sk-ant-api03-xxxxxxxxxxxxxxxxxxxx", "OPENAI_API_KEY=sk-proj-yyyyyyyyyyyyyyyyyyyy",
		"GITHUB_TOKEN=ghp_zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "DEPLOY_TOKEN=dddddddddddddddddddddd"}
	for _, tc := range []struct {
		name string
		req  sieve.Request
		want []string
	}{
		{"global", sieve.Request{}, []string{"ANTHROPIC_API_KEY"}},
		{"profile adds", sieve.Request{Profile: "wide"}, []string{"ANTHROPIC_API_KEY", "GITHUB_TOKEN", "OPENAI_API_KEY"}},
		{"secret's own binding", sieve.Request{Secrets: []string{"DEPLOY_TOKEN"}}, []string{"ANTHROPIC_API_KEY", "DEPLOY_TOKEN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			values := map[string]string{}
			for _, s := range tc.req.Secrets {
				values[s] = "dddddddddddddddddddddd"
			}
			res, err := sieve.Build(sieve.Input{Parent: parent, Policy: p, Request: tc.req, SecretValues: values})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.Brokered, tc.want) {
				t.Errorf("Brokered = %v, want %v", res.Brokered, tc.want)
			}
		})
	}
}
