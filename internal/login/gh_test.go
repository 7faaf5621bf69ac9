package login

import "testing"

var ghCom = []string{"github.com", "*.github.com"}

var ghCases = []fakerCase{
	{name: "gh 2.40 layout",
		in: "github.com:\n    users:\n        alice:\n            oauth_token: gho_16C7e42F292c6912E7710c838347Ae178B4a\n    git_protocol: https\n    user: alice\n    oauth_token: gho_16C7e42F292c6912E7710c838347Ae178B4a\n",
		creds: []wantCred{
			{"gh:github.com:users:alice", "gho_16C7e42F292c6912E7710c838347Ae178B4a", ghCom},
			{"gh:github.com", "gho_16C7e42F292c6912E7710c838347Ae178B4a", ghCom},
		}},
	{name: "enterprise and tenancy, comments, quoting, CRLF",
		in: "# mine\r\nGHE.Example.COM:\r\n  oauth_token: 'ghp_abc''def123' # a comment\r\n  user: bob\r\n  custom: {a: 1}\r\nacme.ghe.com:\r\n  oauth_token: \"ghu_x\\\"yz789\"\r\n",
		creds: []wantCred{
			{"gh:ghe.example.com", "ghp_abc'def123", []string{"ghe.example.com"}},
			{"gh:acme.ghe.com", `ghu_x"yz789`, []string{"acme.ghe.com", "*.acme.ghe.com"}},
		},
		out: "# mine\r\nGHE.Example.COM:\r\n  oauth_token: '" + "ghp_abc''def123" + "' # a comment\r\n"},
	{name: "flow style", in: "{github.com: {oauth_token: gho_abcdef123456, user: a}}\n",
		creds: []wantCred{{"gh:github.com", "gho_abcdef123456", ghCom}}},
	{name: "empty and null tokens pass", in: "h.example:\n  oauth_token: ''\ng.example:\n  oauth_token:\nk.example:\n",
		creds: nil},
	{name: "empty", in: ""},
	{name: "comments only", in: "# nothing yet\n"},
	{name: "not a mapping", in: "- a\n", wantErr: true},
	{name: "not YAML", in: "a: [\n", wantErr: true},
	{name: "token is a number", in: "h.example:\n  oauth_token: 12345678\n", wantErr: true},
	{name: "block scalar", in: "h.example:\n  oauth_token: |\n    gho_abcdef123\n", wantErr: true},
	{name: "multi-line plain", in: "h.example:\n  oauth_token: gho_abc\n    def123\n", wantErr: true},
	{name: "alias", in: "a.example:\n  oauth_token: &t gho_abcdef123\nb.example:\n  oauth_token: *t\n", wantErr: true},
	{name: "merge key", in: "a.example: &m\n  oauth_token: gho_abcdef123\nb.example:\n  <<: *m\n", wantErr: true},
	{name: "two documents", in: "a.example:\n  oauth_token: gho_abcdef123\n---\nb.example: {}\n", wantErr: true},
	{name: "duplicate key", in: "a.example:\n  oauth_token: gho_abcdef123\n  oauth_token: gho_zzzzzz999\n", wantErr: true},
	{name: "not a host", in: "a/b:\n  oauth_token: gho_abcdef123\n", wantErr: true},
	{name: "token key elsewhere", in: "a.example:\n  nested:\n    oauth_token: gho_abcdef123\n", wantErr: true},
	{name: "token key in a comment", in: "# oauth_token: gho_old99999\na.example:\n  oauth_token: gho_abcdef123\n", wantErr: true},
	{name: "token key inside another value", in: "a.example:\n  note: |\n    oauth_token: gho_old99999\n", wantErr: true},
	{name: "token elsewhere in the file", in: "a.example:\n  oauth_token: gho_abcdef123\n  note: gho_abcdef123\n", wantErr: true},
}

func init() { fuzzSeeds["gh-hosts"] = seedsOf(ghCases) }

func TestGhHosts(t *testing.T) {
	// The quoted case's fake file, quoted as the real one was.
	for i := range ghCases {
		if ghCases[i].name == "enterprise and tenancy, comments, quoting, CRLF" {
			c := &ghCases[i]
			c.out = "# mine\r\nGHE.Example.COM:\r\n  oauth_token: '" + yamlSingle(fakeOf(c.creds[0].name, c.creds[0].real)) +
				"' # a comment\r\n  user: bob\r\n  custom: {a: 1}\r\nacme.ghe.com:\r\n  oauth_token: \"" + yamlDouble(fakeOf(c.creds[1].name, c.creds[1].real)) + "\"\r\n"
		}
	}
	runFakerCases(t, "gh-hosts", ghCases)
}

func yamlSingle(s string) string { q, _ := yamlQuote(s, 0); return q[1 : len(q)-1] }
func yamlDouble(s string) string {
	r := []byte{}
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			r = append(r, '\\')
		}
		r = append(r, s[i])
	}
	return string(r)
}
