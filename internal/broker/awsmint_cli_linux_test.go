//go:build linux

package broker

import (
	"encoding/json"
	"os"
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
