package login

import "testing"

var yarnrcCases = []fakerCase{
	{name: "top level token binds the default registry", in: "npmAuthToken: npm_topTOKEN12345\n",
		creds: []wantCred{{"yarnrc:npmAuthToken", "npm_topTOKEN12345", []string{"registry.yarnpkg.com"}}}},
	{name: "registries, scopes, comments, quoting, CRLF",
		in: "# yarn\r\nnpmRegistryServer: \"https://npm.corp.example\"\r\nnpmRegistries:\r\n  \"//Other.Example:8443\":\r\n    npmAuthToken: 'othTok-98765'\r\n    npmAlwaysAuth: true\r\nnpmScopes:\r\n  acme:\r\n    npmRegistryServer: https://acme.example/npm\r\n    npmAuthIdent: \"alice:AcmePass123\"\r\n  plain:\r\n    npmAuthToken: plainTok555 # a comment\r\nenableTelemetry: false\r\n",
		creds: []wantCred{
			{"yarnrc:npmRegistries://Other.Example:8443:npmAuthToken", "othTok-98765", []string{"other.example:8443"}},
			{"yarnrc:npmScopes:acme:npmAuthIdent", "AcmePass123", []string{"acme.example"}},
			{"yarnrc:npmScopes:plain:npmAuthToken", "plainTok555", []string{"npm.corp.example"}},
		}},
	{name: "env references pass", in: "npmAuthToken: ${NPM_TOKEN}\nnpmScopes:\n  a:\n    npmAuthToken: \"${A_TOKEN}\"\n"},
	{name: "empty", in: ""},
	{name: "partial env", in: "npmAuthToken: abc${X}def\n", wantErr: true},
	{name: "registry unknown", in: "npmRegistryServer: ${REG}\nnpmAuthToken: npm_topTOKEN12345\n", wantErr: true},
	{name: "bad registry", in: "npmRegistries:\n  \"a b\":\n    npmAuthToken: tok12345678\n", wantErr: true},
	{name: "ident without password", in: "npmAuthIdent: \"alice:\"\n", wantErr: true},
	{name: "ident not base64", in: "npmAuthIdent: alice!!\n", wantErr: true},
	{name: "token in a block scalar", in: "npmAuthToken: |\n  npm_topTOKEN12345\n", wantErr: true},
	{name: "alias", in: "a: &t npm_topTOKEN12345\nnpmAuthToken: *t\n", wantErr: true},
	{name: "not a mapping", in: "- x\n", wantErr: true},
	{name: "credential key elsewhere", in: "packageExtensions:\n  x:\n    npmAuthToken: tok12345678\n", wantErr: true},
}

func init() {
	yarnrcCases = append(yarnrcCases, fakerCase{name: "base64 ident keeps its form", in: "npmAuthIdent: " + b64("alice:Secr3tPassw0rd") + "\n",
		creds: []wantCred{{"yarnrc:npmAuthIdent", "Secr3tPassw0rd", []string{"registry.yarnpkg.com"}}},
		out:   "npmAuthIdent: " + b64("alice:"+fakeOf("yarnrc:npmAuthIdent", "Secr3tPassw0rd")) + "\n"})
	fuzzSeeds["yarnrc"] = seedsOf(yarnrcCases)
}

func TestYarnrc(t *testing.T) { runFakerCases(t, "yarnrc", yarnrcCases) }
