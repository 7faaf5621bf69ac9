package login

import (
	"bytes"
	"encoding/json"
	"os/exec"

	"github.com/envsieve/envsieve/internal/fake"
	"slices"
	"strings"
	"testing"
)

// TestAWSConfigFake: the profiles that fetch keys lose their
// credential_process and sso_ lines (and what is nested under them), and
// only those; the rest of the config passes byte for byte; each fetcher
// carries what the broker needs. An incomplete SSO profile, an sso_session
// without its section and a command that does not split are errors.
func TestAWSConfigFake(t *testing.T) {
	config := "# mine\n[default]\nregion = us-east-1\noutput = json\n" +
		"[profile p]\r\ncredential_process = /opt/get-keys --profile 'my p'\r\nregion = eu-west-1\r\n" +
		"[profile s]\nsso_session = corp\nsso_account_id = 123456789012\nsso_role_name = Dev\nregion = x\nsso =\n  endpoint_url = https://portal.test\n" +
		"[profile legacy]\nsso_start_url = https://d-2.awsapps.com/start\nsso_region = eu-west-1\nsso_account_id = 2\nsso_role_name = R\nendpoint_url = https://all.test\n" +
		"[sso-session corp]\nsso_start_url = https://d-1.awsapps.com/start\nsso_region = us-east-1\n" +
		"[profile static]\nregion = x\nsso_foo_not_here = 1\n[profile role]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = p\nexternal_id = e\nduration_seconds = 1800\nregion = eu-west-1\n" +
		"[profile mfa]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = p\nmfa_serial = arn:aws:iam::1:mfa/me\n" +
		"[profile self]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = self\n" +
		"[profile c]\naws_access_key_id = AKIACONFCONFCONFCONF\naws_secret_access_key = configSecret/configSecret/configSecret\nregion = c\n"
	fake, fetchers, err := AWSConfigFake([]byte(config), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := string(fake)
	for _, gone := range []string{"credential_process", "sso_session", "sso_account_id", "sso_role_name", "d-2.awsapps.com",
		"external_id", "duration_seconds", "source_profile = p\nexternal", "AKIACONF", "configSecret"} {
		if strings.Contains(got, gone) {
			t.Errorf("%s is still in the fake:\n%s", gone, got)
		}
	}
	for _, kept := range []string{"# mine\n", "region = eu-west-1\r\n", "sso =\n  endpoint_url = https://portal.test\n", "endpoint_url = https://all.test\n",
		"[sso-session corp]\nsso_start_url = https://d-1.awsapps.com/start\nsso_region = us-east-1\n", "[profile role]\nregion = eu-west-1\n", "output = json\n",
		"[profile mfa]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = p\nmfa_serial", "[profile self]\nrole_arn = arn:aws:iam::1:role/r\nsource_profile = self\n",
		"[profile static]\nregion = x\nsso_foo_not_here = 1\n"} {
		if !strings.Contains(got, kept) {
			t.Errorf("%q is not kept:\n%s", kept, got)
		}
	}
	var names []string
	for _, f := range fetchers {
		names = append(names, f.Profile)
	}
	if !slices.Equal(names, []string{"c", "legacy", "p", "role", "s"}) {
		t.Fatalf("fetchers %v", names)
	}
	if f := fetchers[2]; f.Process != "/opt/get-keys --profile 'my p'" || f.SSO != nil {
		t.Errorf("p: %+v", f)
	}
	if f := fetchers[3]; f.Role == nil || *f.Role != (AWSRoleProfile{ARN: "arn:aws:iam::1:role/r", Source: "p", ExternalID: "e", Duration: 1800, Region: "eu-west-1"}) {
		t.Errorf("role: %+v", f.Role)
	}
	if _, fs, err := AWSConfigFake([]byte("[profile role]\nrole_arn = r\nsource_profile = p\n[profile p]\nregion = x\n"), map[string]bool{"aws:role": true}); err != nil || len(fs) != 0 {
		t.Errorf("a role profile the credentials file fakes: %v %v", fs, err)
	}
	if f := fetchers[4]; f.SSO == nil || *f.SSO != (AWSSSOProfile{Session: "corp", StartURL: "https://d-1.awsapps.com/start", Region: "us-east-1", AccountID: "123456789012", RoleName: "Dev"}) || f.Endpoint != "https://portal.test" || f.OIDCEndpoint != "" {
		t.Errorf("s: %+v %+v", f, f.SSO)
	}
	if f := fetchers[1]; f.SSO == nil || f.SSO.Session != "" || f.SSO.StartURL != "https://d-2.awsapps.com/start" || f.Endpoint != "https://all.test" || f.OIDCEndpoint != "https://all.test" {
		t.Errorf("legacy: %+v", f)
	}
	if f := fetchers[0]; f.Static == nil || f.Static.AccessKeyID != "AKIACONFCONFCONFCONF" || !strings.Contains(got, "[profile c]\nregion = c\n") {
		t.Errorf("c: %+v", f)
	}
	if _, fs, err := AWSConfigFake([]byte("[default]\nregion = x\n"), nil); err != nil || fs != nil {
		t.Errorf("no fetcher: %v %v", fs, err)
	}
	for _, bad := range []string{
		"[profile s]\nsso_session = nosuch\nsso_account_id = 1\nsso_role_name = R\n",
		"[profile s]\nsso_start_url = https://x\nsso_account_id = 1\n",
		"[profile p]\ncredential_process = /bin/x 'unterminated\n",
		"[profile a]\nrole_arn = r\nsource_profile = b\n[profile b]\nrole_arn = r\nsource_profile = a\n",
		"[profile a]\nrole_arn = r\nsource_profile = nosuch\n",
		"[profile a]\naws_access_key_id = AKIACONFCONFCONFCONF\n",
		"[profile a]\naws_access_key_id = AKIACONFCONFCONFCONF\naws_secret_access_key = short\n",
		"[profile a]\nrole_arn = r\nsource_profile = b\nduration_seconds = 60\n[profile b]\n",
		"[default\n",
	} {
		if _, _, err := AWSConfigFake([]byte(bad), nil); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestAWSFakeProfiles: each fetching profile gets fake temporary keys
// (ASIA, 40 characters, a session token), stable for the key, in a
// section the credentials faker reads back.
func TestAWSFakeProfiles(t *testing.T) {
	sections, keys, err := AWSFakeProfiles([]AWSFetcher{{Profile: "p", Process: "x"}, {Profile: "s", SSO: &AWSSSOProfile{}}}, shapeFaker)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"aws:p", "aws:s"} {
		k := keys[n]
		if !strings.HasPrefix(k.AccessKeyID, "ASIA") || len(k.AccessKeyID) != 20 || len(k.SecretAccessKey) != 40 || len(k.SessionToken) != 356 {
			t.Errorf("%s: not the shape of temporary keys: %d %d %d", n, len(k.AccessKeyID), len(k.SecretAccessKey), len(k.SessionToken))
		}
	}
	f, _ := ByPath(".aws/credentials")
	_, creds, err := f.Fake(sections, func(_, v string) string { return strings.Repeat("y", len(v)) })
	if err != nil || len(creds) != 2 || creds[0].AWS.Real != keys["aws:p"] {
		t.Errorf("the sections do not read back: %v %v", creds, err)
	}
	_, keys, _ = AWSFakeProfiles([]AWSFetcher{{Profile: "c", Static: &AWSKey{AccessKeyID: "AKIACONFCONFCONFCONF", SecretAccessKey: strings.Repeat("s", 40)}}}, shapeFaker)
	if k := keys["aws:c"]; !strings.HasPrefix(k.AccessKeyID, "AKIA") || len(k.AccessKeyID) != 20 || k.AccessKeyID == "AKIACONFCONFCONFCONF" || k.SessionToken != "" {
		t.Errorf("static keys' fakes: %+v", k)
	}
	if _, _, err := AWSFakeProfiles([]AWSFetcher{{Profile: "a]b"}}, shapeFaker); err == nil {
		t.Error("a profile name that is no section: no error")
	}
}

// TestSplitCommand: split as Python's shlex.split (botocore's), checked
// against python3 itself where it is installed.
func TestSplitCommand(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"/bin/x a b", []string{"/bin/x", "a", "b"}},
		{"  /bin/x\t'a b'  \"c d\" ", []string{"/bin/x", "a b", "c d"}},
		{`x a\ b "q\"uote" 'back\slash' "keep\n"`, []string{"x", "a b", `q"uote`, `back\slash`, `keep\n`}},
		{`x '' ""`, []string{"x", "", ""}},
		{`x a'b'"c"`, []string{"x", "abc"}},
		{`x "a\\b"`, []string{"x", `a\b`}},
	}
	var ins []string
	for _, c := range cases {
		ins = append(ins, c.in)
	}
	pys := pythonSplit(t, ins)
	for i, c := range cases {
		got, err := SplitCommand(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%q: %q, %v; want %q", c.in, got, err, c.want)
		}
		if pys != nil && !slices.Equal(pys[i], c.want) {
			t.Errorf("%q: python's shlex gives %q", c.in, pys[i])
		}
	}
	for _, bad := range []string{"", "   ", "x 'a", `x "a`, `x \`} {
		if _, err := SplitCommand(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// shapeFaker is the broker's faker with a test key.
func shapeFaker(name, real string) string { return fake.Of([]byte("test key"), name, real) }

// pythonSplit is shlex.split of python3 for each of ins, in one python3
// (one each cost the test about a second of CPU); nil without python3 or
// on its error, an entry nil where shlex refuses the line.
func pythonSplit(t *testing.T, ins []string) [][]string {
	if _, err := exec.LookPath("python3"); err != nil {
		return nil
	}
	in, err := json.Marshal(ins)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", "-c", `import json, shlex, sys
out = []
for s in json.load(sys.stdin):
    try:
        out.append(shlex.split(s))
    except ValueError:
        out.append(None)
json.dump(out, sys.stdout)`)
	cmd.Env = []string{}
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		return nil
	}
	var got [][]string
	if err := json.Unmarshal(out, &got); err != nil || len(got) != len(ins) {
		t.Fatalf("python3's answer %q: %v", out, err)
	}
	return got
}

// FuzzSplitCommand: any line splits into one word or more, or is refused,
// without a panic (TestSplitCommand holds it to python3's shlex).
func FuzzSplitCommand(f *testing.F) {
	for _, s := range []string{"/bin/x a", `x "a\"b" 'c'`, `x\ y`, "x 'a", `x "\\"`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := SplitCommand(s)
		if err != nil {
			return
		}
		if len(got) == 0 {
			t.Fatal("no word and no error")
		}
	})
}

// FuzzAWSConfigFake: any config is faked or refused without a panic; a
// fake never holds a fetching line of a fetcher profile, and a config
// with no fetcher passes unchanged.
func FuzzAWSConfigFake(f *testing.F) {
	f.Add("[profile p]\ncredential_process = x\n[default]\nsso_session = s\n[sso-session s]\nsso_start_url = u\nsso_region = r\n")
	f.Add("[default]\nregion = x\n s3 =\n  endpoint_url = https://x\n")
	f.Fuzz(func(t *testing.T, config string) {
		fake, fetchers, err := AWSConfigFake([]byte(config), nil)
		if err != nil {
			return
		}
		if len(fetchers) == 0 {
			if string(fake) != config {
				t.Fatal("a config with no fetcher changed")
			}
			return
		}
		sections, err := awsConfigSections(fake)
		if err != nil {
			t.Fatalf("the fake does not parse: %v", err)
		}
		for _, fe := range fetchers {
			name := "profile " + fe.Profile
			if fe.Profile == "default" {
				name = "default"
			}
			if s := sections[name]; s != nil {
				for k := range s.top {
					if awsFetchKey(k) {
						t.Fatalf("%s keeps %s", name, k)
					}
				}
			}
		}
	})
}
