package login

import "testing"

var dockerCases = []fakerCase{
	{name: "hub and a private registry, helpers pass",
		in: "{\n\t\"auths\": {\n\t\t\"https://index.docker.io/v1/\": {\n\t\t\t\"auth\": \"" + b64("alice:dckr_pat_AbCdEf123456") + "\"\n\t\t},\n\t\t\"Registry.Example.com:5000\": {\"identitytoken\": \"idTok-98765zyx\", \"email\": \"a@b.c\"}\n\t},\n\t\"credsStore\": \"desktop\",\n\t\"credHelpers\": {\"gcr.io\": \"gcloud\"},\n\t\"currentContext\": \"default\"\n}\n",
		creds: []wantCred{
			{"docker:https://index.docker.io/v1/:auth", "dckr_pat_AbCdEf123456", dockerHub},
			{"docker:Registry.Example.com:5000:identitytoken", "idTok-98765zyx", []string{"registry.example.com:5000"}},
		}},
	{name: "registrytoken and password, CRLF, escapes", in: "{\"auths\":{\"r.example\":{\"registrytoken\":\"reg\\u0054ok1234\",\"username\":\"u\",\"password\":\"pa\\/ss9876\"}}}\r\n",
		creds: []wantCred{
			{"docker:r.example:registrytoken", "regTok1234", []string{"r.example"}},
			{"docker:r.example:password", "pa/ss9876", []string{"r.example"}},
		}},
	{name: "no auths", in: "{\"credsStore\": \"pass\"}"},
	{name: "empty auth passes", in: "{\"auths\": {\"r.example\": {\"auth\": \"\"}, \"s.example\": {}}}"},
	{name: "empty file", in: ""},
	{name: "not JSON", in: "{\"auths\": ", wantErr: true},
	{name: "two values", in: "{} {}", wantErr: true},
	{name: "auth not base64", in: "{\"auths\": {\"r.example\": {\"auth\": \"!!!\"}}}", wantErr: true},
	{name: "auth without colon", in: "{\"auths\": {\"r.example\": {\"auth\": \"" + b64("alicepass1234") + "\"}}}", wantErr: true},
	{name: "key twice, any case", in: "{\"auths\": {\"r.example\": {\"auth\": \"" + b64("a:pass1234") + "\", \"AUTH\": \"" + b64("a:pass5678") + "\"}}}", wantErr: true},
	{name: "secret not a string", in: "{\"auths\": {\"r.example\": {\"password\": 12345678}}}", wantErr: true},
	{name: "auths not an object", in: "{\"auths\": [\"x\"]}", wantErr: true},
	{name: "key no registry", in: "{\"auths\": {\"a b\": {\"registrytoken\": \"tok12345678\"}}}", wantErr: true},
}

func init() {
	dockerCases = append(dockerCases, fakerCase{name: "case-insensitive keys, as docker reads them",
		in:    "{\"Auths\": {\"r.example\": {\"Auth\": \"" + b64("alice:Secr3tPassw0rd") + "\"}}}",
		creds: []wantCred{{"docker:r.example:auth", "Secr3tPassw0rd", []string{"r.example"}}},
		out:   "{\"Auths\": {\"r.example\": {\"Auth\": \"" + b64("alice:"+fakeOf("docker:r.example:auth", "Secr3tPassw0rd")) + "\"}}}"})
	for i := range dockerCases {
		if dockerCases[i].name == "hub and a private registry, helpers pass" {
			c := &dockerCases[i]
			c.out = "{\n\t\"auths\": {\n\t\t\"https://index.docker.io/v1/\": {\n\t\t\t\"auth\": \"" + b64("alice:"+fakeOf(c.creds[0].name, c.creds[0].real)) + "\"\n\t\t},\n\t\t\"Registry.Example.com:5000\": {\"identitytoken\": \"" + fakeOf(c.creds[1].name, c.creds[1].real) + "\", \"email\": \"a@b.c\"}\n\t},\n\t\"credsStore\": \"desktop\",\n\t\"credHelpers\": {\"gcr.io\": \"gcloud\"},\n\t\"currentContext\": \"default\"\n}\n"
		}
		if dockerCases[i].name == "registrytoken and password, CRLF, escapes" {
			c := &dockerCases[i]
			c.out = "{\"auths\":{\"r.example\":{\"registrytoken\":\"" + fakeOf(c.creds[0].name, c.creds[0].real) + "\",\"username\":\"u\",\"password\":\"" + fakeOf(c.creds[1].name, c.creds[1].real) + "\"}}}\r\n"
		}
	}
	fuzzSeeds["docker-config"] = seedsOf(dockerCases)
}

func TestDockerConfig(t *testing.T) { runFakerCases(t, "docker-config", dockerCases) }
