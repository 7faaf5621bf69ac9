package launch

import (
	"testing"

	"github.com/envsieve/envsieve/policy"
)

// TestProxyMode: proxy mode (and with it the proxy and CA variables) is
// active only for a binding no base-URL variable serves, a base-URL
// variable some client of the key ignores, or egress: bound-only.
func TestProxyMode(t *testing.T) {
	anthropic := &policy.Binding{Name: "ANTHROPIC_API_KEY", Hosts: []string{"api.anthropic.com"}, BaseURL: "ANTHROPIC_BASE_URL"}
	gemini := &policy.Binding{Name: "GEMINI_API_KEY", Hosts: []string{"generativelanguage.googleapis.com"}, BaseURL: "GOOGLE_GEMINI_BASE_URL"}
	baseOnly := &policy.Binding{Name: "LOCAL_KEY", BaseURL: "LOCAL_BASE_URL"}
	github := &policy.Binding{Name: "GITHUB_TOKEN", Hosts: []string{"api.github.com"}}
	openai := &policy.Binding{Name: "OPENAI_API_KEY", Hosts: []string{"api.openai.com"}, BaseURL: "OPENAI_BASE_URL"}
	for _, tc := range []struct {
		name      string
		bindings  []*policy.Binding
		boundOnly bool
		want      bool
	}{
		{"claude: base-URL bindings", []*policy.Binding{anthropic}, false, false},
		{"base-URL bindings of two providers", []*policy.Binding{anthropic, gemini, baseOnly}, false, false},
		{"a binding with hosts alone", []*policy.Binding{anthropic, github}, false, true},
		{"a base URL Codex ignores", []*policy.Binding{openai}, false, true},
		{"bound-only egress", []*policy.Binding{anthropic}, true, true},
		{"nothing", nil, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := proxyMode(tc.bindings, tc.boundOnly); got != tc.want {
				t.Errorf("proxyMode = %v, want %v", got, tc.want)
			}
		})
	}
	out := baseURLOnly([]*policy.Binding{anthropic, baseOnly})
	if len(out[0].Hosts) != 0 || out[1] != baseOnly || out[0].BaseURL != "ANTHROPIC_BASE_URL" {
		t.Errorf("baseURLOnly = %+v", out)
	}
	if len(anthropic.Hosts) != 1 {
		t.Error("baseURLOnly changed the policy's own binding")
	}
}

// TestLoopbackNoProxy: with base-URL mode alone and a proxy of the user's
// in the child's environment, the broker's loopback address joins
// NO_PROXY, so that a client honouring the proxy still reaches it.
func TestLoopbackNoProxy(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  []string
		want string // "" for no change
	}{
		{"no proxy", []string{"PATH=/bin", "NO_PROXY=example.test"}, ""},
		{"an empty proxy variable", []string{"HTTPS_PROXY="}, ""},
		{"a proxy", []string{"HTTPS_PROXY=http://proxy.example.test:3128"}, "127.0.0.1"},
		{"a proxy and the user's exceptions", []string{"http_proxy=http://p:3128", "no_proxy=.corp.test, localhost"}, ".corp.test,localhost,127.0.0.1"},
		{"loopback there already", []string{"ALL_PROXY=socks5://p:1080", "NO_PROXY=127.0.0.1,x.test"}, "127.0.0.1,x.test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := loopbackNoProxy(tc.env)
			if tc.want == "" {
				if got != nil {
					t.Errorf("got %v, want no change", got)
				}
				return
			}
			if got["NO_PROXY"] != tc.want || got["no_proxy"] != tc.want {
				t.Errorf("got %v, want NO_PROXY and no_proxy %q", got, tc.want)
			}
		})
	}
}
