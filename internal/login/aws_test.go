package login

import (
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/broker"
)

// awsFaker is a launch's faker: broker.Fake under a test install key.
func awsFaker(name, real string) string {
	return broker.Fake([]byte("0123456789abcdef0123456789abcdef"), name, real)
}

var (
	realAWSID     = "AKIA" + "REALREALREAL" + "2345"
	realAWSSecret = "wJalrXUtnFEMI/K7MDENG+" + "bPxRfiCYREALSECRET"
	realAWSID2    = "ASIA" + "TEMPTEMPTEMP" + "6789"
	realAWSTok    = "IQoJb3JpZ2luX2VjEBAaCXVzLWVhc3QtMSJHMEUCIQ" + strings.Repeat("Zm9v", 20) + "=="
)

// awsFile is a credentials file of two profiles, one with a session token.
func awsFile() string {
	return "# my keys\n[default]\naws_access_key_id = " + realAWSID + "\naws_secret_access_key=" + realAWSSecret + "\r\nregion = eu-west-1\n" +
		"s3 =\n  max_concurrent_requests = 4\n\n; temp\n[work]\naws_access_key_id: " + realAWSID2 + "\naws_secret_access_key = " + realAWSSecret[:39] + "x\n" +
		"aws_session_token = " + realAWSTok + "\n[empty]\nregion = us-east-1\n"
}

func init() {
	fuzzSeeds["aws-credentials"] = []string{awsFile(), "[a]\ncredential_process = /usr/bin/get-keys\n",
		"[a]\naws_access_key_id = " + realAWSID + "\naws_secret_access_key = " + realAWSSecret + "\naws_security_token = " + realAWSTok + "\n"}
}

func TestAWSCredentials(t *testing.T) {
	real := awsFile()
	f, ok := ByPath(".aws/credentials")
	if !ok {
		t.Fatal("no format for .aws/credentials")
	}
	out, creds, err := f.Fake([]byte(real), awsFaker)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{realAWSID, realAWSSecret, realAWSID2, realAWSTok, realAWSSecret[:39] + "x"} {
		if strings.Contains(string(out), v) {
			t.Fatalf("the fake file holds a real key:\n%s", out)
		}
	}
	if len(creds) != 2 || creds[0].Name != "aws:default" || creds[1].Name != "aws:work" {
		t.Fatalf("creds = %+v", creds)
	}
	keyID := regexp.MustCompile(`^(AKIA|ASIA)[A-Z0-9]{16}$`)
	for _, c := range creds {
		k := c.AWS
		if k == nil || c.Real != k.Real.SecretAccessKey || c.In[0] != "sigv4" || c.Hosts[0] != "*.amazonaws.com" {
			t.Fatalf("%s: %+v", c.Name, c)
		}
		if !keyID.MatchString(k.Fake.AccessKeyID) || k.Fake.AccessKeyID[:4] != k.Real.AccessKeyID[:4] || len(k.Fake.SecretAccessKey) != 40 {
			t.Errorf("%s: fakes of the wrong shape", c.Name)
		}
		if (k.Real.SessionToken == "") != (k.Fake.SessionToken == "") || len(k.Fake.SessionToken) != len(k.Real.SessionToken) {
			t.Errorf("%s: the token's fake", c.Name)
		}
		for _, v := range []string{k.Fake.AccessKeyID, k.Fake.SecretAccessKey, k.Fake.SessionToken} {
			if !strings.Contains(string(out), v) {
				t.Errorf("%s: the fake file lacks a fake", c.Name)
			}
		}
	}
	// Everything else passes as it is.
	want := strings.NewReplacer(realAWSID, creds[0].AWS.Fake.AccessKeyID, realAWSSecret, creds[0].AWS.Fake.SecretAccessKey,
		realAWSID2, creds[1].AWS.Fake.AccessKeyID, realAWSSecret[:39]+"x", creds[1].AWS.Fake.SecretAccessKey, realAWSTok, creds[1].AWS.Fake.SessionToken).Replace(real)
	if string(out) != want {
		t.Errorf("fake file:\n%s\nwant:\n%s", out, want)
	}
}

func TestAWSCredentialsRefused(t *testing.T) {
	cases := []struct{ name, file string }{
		{"id without secret", "[a]\naws_access_key_id = " + realAWSID + "\n"},
		{"secret without id", "[a]\naws_secret_access_key = " + realAWSSecret + "\n"},
		{"token without keys", "[a]\naws_session_token = " + realAWSTok + "\n"},
		{"key twice", "[a]\naws_access_key_id = " + realAWSID + "\naws_access_key_id = " + realAWSID + "\naws_secret_access_key = " + realAWSSecret + "\n"},
		{"section twice", "[a]\nregion = x\n[a]\nregion = y\n"},
		{"credential_process", "[a]\ncredential_process = /usr/bin/get-keys\n"},
		{"outside a section", "aws_access_key_id = " + realAWSID + "\n"},
		{"continued secret", "[a]\naws_access_key_id = " + realAWSID + "\naws_secret_access_key = " + realAWSSecret + "\n  more\n"},
		{"not key value", "[a]\njust words\n"},
		{"bad section", "[a\n"},
		{"two tokens", "[a]\naws_access_key_id = " + realAWSID + "\naws_secret_access_key = " + realAWSSecret + "\naws_session_token = a\naws_security_token = b\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, _, err := fakeAWSCredentials([]byte(c.file), awsFaker); err == nil {
				t.Error("no error")
			}
		})
	}
}

func TestAWSEnv(t *testing.T) {
	fakes, c, ok, err := AWSEnv(map[string]string{"AWS_ACCESS_KEY_ID": realAWSID2, "AWS_SECRET_ACCESS_KEY": realAWSSecret, "AWS_SESSION_TOKEN": realAWSTok, "HOME": "/x"}, awsFaker)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if len(fakes) != 3 || fakes["AWS_ACCESS_KEY_ID"] != c.AWS.Fake.AccessKeyID || fakes["AWS_SESSION_TOKEN"] != c.AWS.Fake.SessionToken || c.AWS.Real.SessionToken != realAWSTok {
		t.Errorf("fakes %v, cred %+v", len(fakes), c.Name)
	}
	for k, v := range fakes {
		if v == realAWSID2 || v == realAWSSecret || v == realAWSTok || v == "" {
			t.Errorf("%s is not a fake", k)
		}
	}
	if _, _, ok, err := AWSEnv(map[string]string{"HOME": "/x"}, awsFaker); ok || err != nil {
		t.Error("keys found in an environment without them")
	}
	if _, _, _, err := AWSEnv(map[string]string{"AWS_ACCESS_KEY_ID": realAWSID}, awsFaker); err == nil {
		t.Error("an id without a secret is not an error")
	}
}

// FuzzAWSCredentials: any file is faked or refused, never half: a fake
// file holds none of the real keys it returns, and reads back as the same
// profiles.
func FuzzAWSCredentials(f *testing.F) {
	f.Add("[default]\naws_access_key_id = " + realAWSID + "\naws_secret_access_key = " + realAWSSecret + "\n")
	f.Add("[w]\naws_access_key_id: " + realAWSID2 + "\naws_secret_access_key=" + realAWSSecret + "\naws_session_token = " + realAWSTok + "\ns3 =\n  x = 1\n")
	f.Add("# c\n; d\n[p]\nregion = x\n")
	f.Fuzz(func(t *testing.T, file string) {
		out, creds, err := fakeAWSCredentials([]byte(file), awsFaker)
		if err != nil {
			return
		}
		for _, c := range creds {
			for _, v := range []string{c.AWS.Real.AccessKeyID, c.AWS.Real.SecretAccessKey, c.AWS.Real.SessionToken} {
				if v != "" && strings.Contains(string(out), v) {
					t.Fatalf("%s: the fake file holds a real key", c.Name)
				}
			}
		}
		_, again, err := fakeAWSCredentials(out, awsFaker)
		if err != nil || len(again) != len(creds) {
			t.Fatalf("the fake file does not read back: %v (%d of %d)", err, len(again), len(creds))
		}
	})
}

func TestAWSEndpointHosts(t *testing.T) {
	config := "[default]\nregion = us-east-1\nendpoint_url = https://minio.example:9000\n" +
		"[profile dev]\nservices = local\ns3 =\n  endpoint_url = https://s3.dev.example\n  addressing_style = path\n" +
		"[services local]\nsts =\n  endpoint_url = http://127.0.0.1:4566\n" +
		"[profile plain]\nregion = eu-west-1\n[sso-session x]\nsso_region = us-east-1\n"
	got, err := AWSEndpointHosts([]byte(config))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"default": {"minio.example:9000"}, "dev": {"127.0.0.1:4566", "s3.dev.example"}}
	if len(got) != len(want) || !slices.Equal(got["default"], want["default"]) || !slices.Equal(got["dev"], want["dev"]) {
		t.Errorf("got %v, want %v", got, want)
	}
	for _, bad := range []string{"[default]\nendpoint_url = minio:9000\n", "[default]\n  x = 1\n", "region = x\n", "[default\n"} {
		if _, err := AWSEndpointHosts([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzAWSEndpointHosts: any config is read or refused without a panic,
// and every host it returns is one a URL named.
func FuzzAWSEndpointHosts(f *testing.F) {
	f.Add("[default]\nendpoint_url = https://minio.example:9000\n[profile d]\nservices = l\n[services l]\ns3 =\n  endpoint_url = http://h\n")
	f.Add("[profile x]\ns3 =\n\tendpoint_url=https://a\n")
	f.Fuzz(func(t *testing.T, config string) {
		got, err := AWSEndpointHosts([]byte(config))
		if err != nil {
			return
		}
		for p, hosts := range got {
			for _, h := range hosts {
				if h == "" || !strings.Contains(config, h) {
					t.Fatalf("profile %q: host %q is not in the config", p, h)
				}
			}
		}
	})
}

// TestAWSConfigFetchers: the profiles of ~/.aws/config that get their keys
// by a credential_process or IAM Identity Center are named, the others
// not; a config that cannot be read is an error.
func TestAWSConfigFetchers(t *testing.T) {
	config := "[default]\nregion = us-east-1\n[profile p]\ncredential_process = /usr/bin/get-keys --x\n" +
		"[profile s]\nsso_session = corp\nsso_account_id = 1\nsso_role_name = R\n[profile legacy]\nsso_start_url = https://x\n" +
		"[sso-session corp]\nsso_start_url = https://corp\n[profile static]\nregion = x\n"
	got, err := AWSConfigFetchers([]byte(config))
	want := map[string]string{"p": "credential_process", "s": "sso", "legacy": "sso"}
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("got %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"region = x\n", "[default\n", "[default]\n  indented = x\n"} {
		if _, err := AWSConfigFetchers([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// FuzzAWSConfigFetchers: any config is read or refused without a panic,
// and every profile it names is one the config names.
func FuzzAWSConfigFetchers(f *testing.F) {
	f.Add("[profile p]\ncredential_process = x\n[default]\nsso_session = s\n")
	f.Fuzz(func(t *testing.T, config string) {
		got, err := AWSConfigFetchers([]byte(config))
		if err != nil {
			return
		}
		words := strings.Join(strings.Fields(config), " ") // a section's name is single-spaced
		for p, how := range got {
			if !strings.Contains(words, p) || (how != "credential_process" && how != "sso") {
				t.Fatalf("profile %q (%s) is not the config's", p, how)
			}
		}
	})
}
