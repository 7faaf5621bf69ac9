package policy_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/policy"
)

func TestBindingErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		{"no hosts nor base_url", "secrets:\n  T: {broker: {in: [header:Authorization]}}\n", "secret T: broker: a binding needs hosts, base_url or both"},
		{"bad host", "secrets:\n  T: {broker: {hosts: [\"http://x\"]}}\n", `secret T: broker: hosts: "http://x" is not a host`},
		{"bad in", "secrets:\n  T: {broker: {hosts: [a.com], in: [body]}}\n", `in: want header:NAME, query:NAME, or a token endpoint's body field form:NAME or json:NAME, got "body"`},
		{"body place without paths", "secrets:\n  T: {broker: {hosts: [a.com], in: [form:refresh_token]}}\n", `in: form:refresh_token is a body field: the binding needs paths`},
		{"plain upstream", "secrets:\n  T: {broker: {base_url: T_URL, upstream: \"http://api.example.com\"}}\n", "plain http only to loopback"},
		{"upstream without base_url", "secrets:\n  T: {broker: {hosts: [a.com], upstream: \"https://a.com\"}}\n", "upstream is used only with base_url"},
		{"file delivery", "secrets:\n  T: {deliver: file, broker: {hosts: [a.com]}}\n", "not as a file"},
		{"unbound brokered", "brokered: [MY_TOKEN]\n", "global: brokered: MY_TOKEN has no binding"},
		{"egress", "broker: {egress: everywhere}\n", `broker: egress: want open or bound-only, got "everywhere"`},
		{"relative ca", "broker: {upstream_ca: [ca.pem]}\n", "broker: upstream_ca: want an absolute path"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policy.Parse("p.yaml", []byte("version: 1\n"+tc.src))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestBindings(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte(`version: 1
brokered: [OPENAI_API_KEY]
broker: {egress: bound-only, upstream_ca: [/etc/corp-ca.pem]}
secrets:
  DEPLOY_TOKEN:
    broker: {hosts: ["deploy.example.com", "*.example.org:8443"], in: ["header:X-Deploy-Token"], methods: [POST], paths: [/v2/]}
  SSO_REFRESH:
    broker: {hosts: [sso.example.com], in: [form:refresh_token, json:refresh_token], paths: [/oauth/token]}
profiles:
  agent: {brokered: [GITHUB_TOKEN]}
`))
	if err != nil {
		t.Fatal(err)
	}
	own := p.Binding("DEPLOY_TOKEN")
	if own == nil || own.Builtin || !slices.Equal(own.Hosts, []string{"deploy.example.com", "*.example.org:8443"}) || own.Methods[0] != "POST" {
		t.Errorf("the policy's own binding: %+v", own)
	}
	if r := p.Binding("SSO_REFRESH"); r == nil || !slices.Equal(r.In, []string{"form:refresh_token", "json:refresh_token"}) {
		t.Errorf("a body place's binding: %+v", r)
	}
	cat := p.Binding("OPENAI_API_KEY")
	if cat == nil || !cat.Builtin || cat.BaseURL != "OPENAI_BASE_URL" {
		t.Errorf("the catalog's binding: %+v", cat)
	}
	if p.Binding("HOME") != nil {
		t.Error("HOME has a binding")
	}
	if !p.Broker.BoundOnly || p.Broker.UpstreamCA[0] != "/etc/corp-ca.pem" {
		t.Errorf("broker settings: %+v", p.Broker)
	}
}

// TestCatalog: every entry of the built-in catalog parses and binds
// somewhere; every built-in profile's brokered name has a binding.
func TestCatalog(t *testing.T) {
	bs, err := policy.CatalogBindings()
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) < 10 {
		t.Fatalf("the catalog has %d bindings", len(bs))
	}
	for _, b := range bs {
		if len(b.Hosts) == 0 && b.BaseURL == "" {
			t.Errorf("%s binds nowhere", b.Name)
		}
	}
	p, err := policy.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"claude", "codex", "gemini"} {
		pr, ok := p.Profile(name)
		if !ok {
			t.Fatalf("no built-in %s", name)
		}
		if len(pr.Level.Brokered) == 0 {
			t.Errorf("built-in %s brokers nothing", name)
		}
		for _, s := range pr.Level.Brokered {
			if p.Binding(s.Entry) == nil {
				t.Errorf("built-in %s: %s has no binding", name, s.Entry)
			}
		}
	}
}

// TestLocalMayBrokerMore: a project-local file may broker more names (the
// tree sees less), never change the broker's settings.
func TestLocalMayBrokerMore(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("version: 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Narrow(".envsieve.yaml", []byte("version: 1\nbrokered: [GITHUB_TOKEN]\n")); err != nil {
		t.Errorf("brokering more: %v", err)
	}
	if _, err := p.Narrow(".envsieve.yaml", []byte("version: 1\nbroker: {upstream_ca: [/tmp/evil.pem]}\n")); err == nil || !strings.Contains(err.Error(), "escalation: broker belongs in the user's policy") {
		t.Errorf("a local broker: setting: %v", err)
	}
	if _, err := p.Narrow(".envsieve.yaml", []byte("version: 1\nbrokered: [NOT_BOUND]\n")); err == nil || !strings.Contains(err.Error(), "has no binding") {
		t.Errorf("an unbound local brokered name: %v", err)
	}
}
