//go:build linux

package broker

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAWSCLIMintedKeys: Debian's aws, as another user with only the fake
// keys, asks STS for a session token through the broker: what it prints
// holds fresh fakes, never the minted keys, and aws with those fakes in
// its environment reaches STS re-signed with the minted keys.
func TestAWSCLIMintedKeys(t *testing.T) {
	if _, err := os.Stat(awsCLI); err != nil {
		t.Fatalf("Debian's awscli is needed: %v", err)
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to run the client as another user") // CI runs as root
	}
	srv, roots, m := newMintStandIn(t)
	host := srv.Listener.Addr().String()
	endpoint := "https://" + host
	b, log := startAWSBroker(t, host, roots, AWSCred{Name: "aws:default", Fake: awsFake, Real: AWSStatic(awsReal)},
		func(c *Config) { c.UID = 65534 })
	_, env := awsTree(t, b, awsCredFile(awsFake))
	noMinted := func(what, s string) {
		t.Helper()
		for _, v := range []string{mintedTemp.AccessKeyID, mintedTemp.SecretAccessKey, mintedTemp.SessionToken} {
			if strings.Contains(s, v) {
				t.Fatalf("%s holds a minted real key", what)
			}
		}
	}
	for _, args := range [][]string{
		{"sts", "get-session-token"},
		{"sts", "assume-role", "--role-arn", "arn:aws:iam::123456789012:role/r", "--role-session-name", "tree"},
	} {
		t.Run(args[1], func(t *testing.T) {
			out, errOut, err := runAWS(t, env, endpoint, append(args, "--output", "json")...)
			noMinted(args[1]+"'s output", out+errOut)
			if err != nil {
				t.Fatalf("%v: %s%s", err, out, errOut)
			}
			var got struct {
				Credentials struct{ AccessKeyId, SecretAccessKey, SessionToken string }
			}
			if err := json.Unmarshal([]byte(out), &got); err != nil || got.Credentials.SecretAccessKey == "" {
				t.Fatalf("no credentials in the output: %v", err)
			}
			c := got.Credentials
			if !strings.HasPrefix(c.AccessKeyId, "ASIA") || len(c.SecretAccessKey) != 40 || len(c.SessionToken) != len(mintedTemp.SessionToken) {
				t.Errorf("the fakes lost the keys' shape")
			}
			n := m.calls()
			// The tree uses what it was given, as a script would.
			menv := append(append([]string(nil), env...), "AWS_ACCESS_KEY_ID="+c.AccessKeyId,
				"AWS_SECRET_ACCESS_KEY="+c.SecretAccessKey, "AWS_SESSION_TOKEN="+c.SessionToken)
			out, errOut, err = runAWS(t, menv, endpoint, "sts", "get-caller-identity")
			noMinted("get-caller-identity's output", out+errOut)
			m.mu.Lock()
			callers := append([]string(nil), m.callers[n:]...)
			m.mu.Unlock()
			if err != nil || len(callers) != 1 || callers[0] != mintedTemp.AccessKeyID {
				t.Errorf("with the minted fakes: %v, the stand-in saw %v: %s%s", err, callers, out, errOut)
			}
		})
	}
	if !log.hasKind("minted") {
		t.Error("no minted event")
	}
}

// TestAWSCLIRoleMFAAndEnvironment: roles the tree assumes itself, through
// the broker (docs/broker.md: an assume-role profile with mfa_serial or
// credential_source is left to the tree). Debian's aws as another user
// with only the fake keys: `aws sts assume-role --serial-number
// --token-code`, and botocore from Debian's python3 (what aws runs) with
// a profile whose mfa_serial makes it prompt for the code (typed on
// stdin) and one with credential_source = Environment (the fakes in the
// environment). Each AssumeRole reaches the stand-in re-signed with the
// real source keys, with the device and code it requires; the role's keys
// reach the tree as fakes only; a call with them reaches the stand-in
// re-signed with the minted keys. A capability test: it passed at once.
func TestAWSCLIRoleMFAAndEnvironment(t *testing.T) {
	if _, err := os.Stat(awsCLI); err != nil {
		t.Fatalf("Debian's awscli is needed: %v", err)
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to run the client as another user") // CI runs as root
	}
	srv, roots, m := newMintStandIn(t)
	host := srv.Listener.Addr().String()
	endpoint := "https://" + host
	b, _ := startAWSBroker(t, host, roots, AWSCred{Name: "aws:default", Fake: awsFake, Real: AWSStatic(awsReal)},
		func(c *Config) { c.UID = 65534 })
	home, env := awsTree(t, b, awsCredFile(awsFake))
	cfg := "[default]\nregion = us-east-1\n" +
		"[profile mfa]\nrole_arn = arn:aws:iam::123456789012:role/mfa\nsource_profile = default\nmfa_serial = " + mfaSerial + "\nregion = us-east-1\n" +
		"[profile envrole]\nrole_arn = arn:aws:iam::123456789012:role/env\ncredential_source = Environment\nregion = us-east-1\n"
	if err := os.WriteFile(filepath.Join(home, ".aws", "config"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	// botocore's own assume-role provider has no endpoint setting in
	// this awscli: the script points its clients at the stand-in.
	script := `
import sys
from awscli.botocore.session import get_session
s = get_session(); s.set_config_variable("profile", sys.argv[2])
create = s.create_client
def at_standin(*a, **k):
    k["endpoint_url"] = sys.argv[1]
    return create(*a, **k)
s.create_client = at_standin
c = s.get_credentials().get_frozen_credentials()
print("keys", c.access_key, c.secret_key, c.token)
print("arn", s.create_client("sts", region_name="us-east-1").get_caller_identity()["Arn"])
`
	botocore := func(env []string, profile string) (string, error) {
		cmd := exec.Command("/usr/bin/python3", "-c", script, endpoint, profile)
		cmd.Env = env
		cmd.SysProcAttr = asNobody()
		cmd.SysProcAttr.Setsid = true // no terminal: getpass reads stdin
		cmd.Stdin = strings.NewReader(mfaCode + "\n")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	envKeys := append(append([]string(nil), env...), "AWS_ACCESS_KEY_ID="+awsFake.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+awsFake.SecretAccessKey)
	for _, tc := range []struct {
		name, role string
		run        func() (string, error)
		mfa        bool
	}{
		{"cli-mfa", "mfa", func() (string, error) {
			out, errOut, err := runAWS(t, env, endpoint, "sts", "assume-role", "--role-arn", "arn:aws:iam::123456789012:role/mfa",
				"--role-session-name", "tree", "--serial-number", mfaSerial, "--token-code", mfaCode, "--output", "json")
			return out + errOut, err
		}, true},
		{"profile-mfa", "mfa", func() (string, error) { return botocore(env, "mfa") }, true},
		{"credential-source-environment", "env", func() (string, error) { return botocore(envKeys, "envrole") }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m.mu.Lock()
			na, nc := len(m.assumed), len(m.callers)
			m.mu.Unlock()
			out, err := tc.run()
			for _, v := range []string{mintedTemp.AccessKeyID, mintedTemp.SecretAccessKey, mintedTemp.SessionToken, awsReal.AccessKeyID, awsReal.SecretAccessKey} {
				if strings.Contains(out, v) {
					t.Fatal("the tree's output holds a real key")
				}
			}
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			m.mu.Lock()
			assumed := append([]assumeCall(nil), m.assumed[na:]...)
			callers := append([]string(nil), m.callers[nc:]...)
			m.mu.Unlock()
			if len(assumed) != 1 || assumed[0].key != awsReal.AccessKeyID ||
				assumed[0].form.Get("RoleArn") != "arn:aws:iam::123456789012:role/"+tc.role {
				t.Fatalf("AssumeRole calls at the stand-in: %d, want one signed with the real source key", len(assumed))
			}
			if f := assumed[0].form; tc.mfa && (f.Get("SerialNumber") != mfaSerial || f.Get("TokenCode") != mfaCode) {
				t.Errorf("AssumeRole without the device and code: %q %q", f.Get("SerialNumber"), f.Get("TokenCode"))
			}
			var fakeID string
			if tc.name == "cli-mfa" {
				var got struct {
					Credentials struct{ AccessKeyId, SecretAccessKey, SessionToken string }
				}
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatalf("output: %v", err)
				}
				c := got.Credentials
				fakeID = c.AccessKeyId
				menv := append(append([]string(nil), env...), "AWS_ACCESS_KEY_ID="+c.AccessKeyId,
					"AWS_SECRET_ACCESS_KEY="+c.SecretAccessKey, "AWS_SESSION_TOKEN="+c.SessionToken)
				o, e, err := runAWS(t, menv, endpoint, "sts", "get-caller-identity")
				if err != nil || strings.Contains(o+e, mintedTemp.SecretAccessKey) {
					t.Fatalf("with the minted fakes: %v: %s%s", err, o, e)
				}
				m.mu.Lock()
				callers = append([]string(nil), m.callers[nc:]...)
				m.mu.Unlock()
			} else {
				for _, l := range strings.Split(out, "\n") {
					if f := strings.Fields(l); len(f) == 4 && f[0] == "keys" {
						fakeID = f[1]
						if len(f[2]) != 40 || len(f[3]) != len(mintedTemp.SessionToken) {
							t.Errorf("the fakes lost the keys' shape")
						}
					}
				}
				if !strings.Contains(out, "arn arn:aws:sts::123456789012:assumed-role/standin/ASIA") {
					t.Errorf("no caller identity: %s", out)
				}
			}
			if !strings.HasPrefix(fakeID, "ASIA") || fakeID == mintedTemp.AccessKeyID {
				t.Errorf("the role's key id the tree got is %q, want a fake", fakeID)
			}
			if len(callers) != 1 || callers[0] != mintedTemp.AccessKeyID {
				t.Errorf("the call with the role's fakes reached the stand-in signed with %v, want the minted key", callers)
			}
		})
	}
}
