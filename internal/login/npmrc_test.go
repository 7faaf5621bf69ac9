package login

import (
	"encoding/base64"
	"testing"
)

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

var npmrcCases = []fakerCase{
	{name: "scoped token", in: "//registry.example.com/npm/:_authToken=npm_abcDEF1234567890\n",
		creds: []wantCred{{"npmrc://registry.example.com/npm/:_authToken", "npm_abcDEF1234567890", []string{"registry.example.com"}}}},
	{name: "several registries, comments, spaces, quotes, CRLF, unknown keys",
		in: "; npm\r\n# more\r\nregistry=https://npm.corp.example/\r\n@corp:registry=https://npm.corp.example/\r\n//npm.corp.example/:_authToken = \"tokCorp12345\"\r\n//Registry.NPMJS.org:443/:_authToken='npm_pubAAAA1111'\r\nstrict-ssl=false\r\nalways-auth\r\n",
		creds: []wantCred{
			{"npmrc://npm.corp.example/:_authToken", "tokCorp12345", []string{"npm.corp.example"}},
			{"npmrc://Registry.NPMJS.org:443/:_authToken", "npm_pubAAAA1111", []string{"registry.npmjs.org"}},
		}},
	{name: "bare token binds the default registry", in: "_authToken=npm_bareTOKEN999\n",
		creds: []wantCred{{"npmrc:_authToken", "npm_bareTOKEN999", []string{"registry.npmjs.org"}}}},
	{name: "bare token binds the file's registry", in: "_authToken=npm_bareTOKEN999\nregistry = https://r.example:8443/x/\n",
		creds: []wantCred{{"npmrc:_authToken", "npm_bareTOKEN999", []string{"r.example:8443"}}}},
	{name: "env references pass", in: "//r.example/:_authToken=${NPM_TOKEN}\n//s.example/:_auth=${AUTH?}\n"},
	{name: "empty", in: ""},
	{name: "a section without credentials passes", in: "[sec]\nx=1\n"},
	{name: "credential under a section", in: "[sec]\n//r.example/:_authToken=abcdef123\n", wantErr: true},
	{name: "key twice", in: "//r.example/:_authToken=abcdef123\n//r.example/:_authToken=zzzzzz999\n", wantErr: true},
	{name: "partial env reference", in: "//r.example/:_authToken=abc${X}\n", wantErr: true},
	{name: "inline comment", in: "//r.example/:_authToken=abcdef123 ; note\n", wantErr: true},
	{name: "escape", in: "//r.example/:_authToken=abc\\def123\n", wantErr: true},
	{name: "unscoped key prefix", in: "foo:_authToken=abcdef123\n", wantErr: true},
	{name: "bad host", in: "//r example/:_authToken=abcdef123\n", wantErr: true},
	{name: "bad _auth", in: "//r.example/:_auth=notbase64!\n", wantErr: true},
	{name: "_auth without a colon", in: "//r.example/:_auth=" + b64("userpass123") + "\n", wantErr: true},
	{name: "bad section", in: "[sec\n", wantErr: true},
	{name: "lone CR hides a line", in: "foo=bar\r//r.example/:_authToken=abcdef123\n", wantErr: true},
	{name: "key cut at a comment character", in: "//r.example/:_authToken;x=abcdef123\n", wantErr: true},
	{name: "array key", in: "//r.example/:_authToken[]=abcdef123\n", wantErr: true},
	{name: "quoted key", in: "\"//r.example/:_authToken\"=abcdef123\n", wantErr: true},
	{name: "env in a key", in: "//r.example/:_auth${X?}Token=abcdef123\n", wantErr: true},
	{name: "env in a key, env value passes", in: "//${HOST}/:_authToken=${TOKEN}\n"},
}

func init() {
	npmrcCases = append(npmrcCases,
		fakerCase{name: "_auth keeps base64 of user:fake", in: "//r.example/:_auth=" + b64("alice:Secr3tPassw0rd") + "\n",
			creds: []wantCred{{"npmrc://r.example/:_auth", "Secr3tPassw0rd", []string{"r.example"}}},
			out:   "//r.example/:_auth=" + b64("alice:"+fakeOf("npmrc://r.example/:_auth", "Secr3tPassw0rd")) + "\n"},
		fakerCase{name: "_password keeps base64 of the fake", in: "//r.example/:username=alice\n//r.example/:_password=" + b64("Secr3tPassw0rd") + "\n",
			creds: []wantCred{{"npmrc://r.example/:_password", "Secr3tPassw0rd", []string{"r.example"}}},
			out:   "//r.example/:username=alice\n//r.example/:_password=" + b64(fakeOf("npmrc://r.example/:_password", "Secr3tPassw0rd")) + "\n"},
	)
	fuzzSeeds["npmrc"] = seedsOf(npmrcCases)
}

func TestNpmrc(t *testing.T) { runFakerCases(t, "npmrc", npmrcCases) }
