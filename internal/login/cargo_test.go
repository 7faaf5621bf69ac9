package login

import "testing"

var cargoCases = []fakerCase{
	{name: "crates.io token", in: "[registry]\ntoken = \"cioAbCdEf0123456789\"\n",
		creds: []wantCred{{"cargo:crates.io", "cioAbCdEf0123456789", []string{"crates.io"}}}},
	{name: "literal string, comments, CRLF, other keys", in: "# cargo\r\n[registry] # crates\r\n  token = 'cio-lit/9876' # mine\r\n  other = [1, \"a]\", {x = 1}]\r\n[net]\r\nretry = 3\r\n",
		creds: []wantCred{{"cargo:crates.io", "cio-lit/9876", []string{"crates.io"}}}},
	{name: "dotted key", in: "registry.token = \"cioDotted12345\"\n",
		creds: []wantCred{{"cargo:crates.io", "cioDotted12345", []string{"crates.io"}}}},
	{name: "quoted key parts", in: "[\"registry\"]\n'token' = \"cioQuoted12345\"\n",
		creds: []wantCred{{"cargo:crates.io", "cioQuoted12345", []string{"crates.io"}}}},
	{name: "empty token passes", in: "[registry]\ntoken = \"\"\n"},
	{name: "empty", in: ""},
	{name: "named registry", in: "[registries.corp]\ntoken = \"corpTok12345\"\n", wantErr: true},
	{name: "named registry, dotted", in: "registries.corp.token = \"corpTok12345\"\n", wantErr: true},
	{name: "secret key", in: "[registry]\nsecret-key = \"k3.secret.abcdef\"\n", wantErr: true},
	{name: "inline table", in: "registry = { token = \"cioInline12345\" }\n", wantErr: true},
	{name: "multi-line string", in: "[registry]\ntoken = \"\"\"\ncioMulti12345\"\"\"\n", wantErr: true},
	{name: "open array", in: "x = [\n\"cioTok12345\"]\n", wantErr: true},
	{name: "escape in token", in: "[registry]\ntoken = \"cio\\u0041bc12345\"\n", wantErr: true},
	{name: "token not a string", in: "[registry]\ntoken = 12345678\n", wantErr: true},
	{name: "token twice", in: "[registry]\ntoken = \"cioA12345\"\ntoken = \"cioB12345\"\n", wantErr: true},
	{name: "array of tables", in: "[[registry]]\ntoken = \"cioA12345\"\n", wantErr: true},
	{name: "not TOML", in: "token: cioA12345\n", wantErr: true},
	{name: "trailing junk", in: "[registry]\ntoken = \"cioA12345\" x\n", wantErr: true},
}

func init() { fuzzSeeds["cargo-credentials"] = seedsOf(cargoCases) }

func TestCargoCredentials(t *testing.T) { runFakerCases(t, "cargo-credentials", cargoCases) }
