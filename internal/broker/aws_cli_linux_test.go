//go:build linux

package broker

import (
	"bytes"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/login"
	"github.com/envsieve/envsieve/internal/sigv4"
)

// awsCLI is Debian's awscli (not a pyenv shim on PATH).
const awsCLI = "/usr/bin/aws"

// awsCredFile is a credentials file of one default profile.
func awsCredFile(keys sigv4.Credentials) string {
	cred := "[default]\naws_access_key_id = " + keys.AccessKeyID + "\naws_secret_access_key = " + keys.SecretAccessKey + "\n"
	if keys.SessionToken != "" {
		cred += "aws_session_token = " + keys.SessionToken + "\n"
	}
	return cred
}

// awsTree is a HOME for uid 65534 holding the credentials file cred, and
// the environment of a child of b with that HOME.
func awsTree(t *testing.T, b *Broker, cred string) (home string, env []string) {
	t.Helper()
	home = t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".aws"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{"credentials": cred, "config": "[default]\nregion = us-east-1\n"} {
		if err := os.WriteFile(filepath.Join(home, ".aws", name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// t.TempDir's parent is 0700: open the way down to HOME and the CA
	// bundle for uid 65534.
	for _, d := range []string{filepath.Dir(home), home, filepath.Join(home, ".aws"), filepath.Dir(filepath.Dir(b.bundle)), filepath.Dir(b.bundle)} {
		os.Chmod(d, 0o755)
	}
	os.Chown(home, 65534, 65534)
	os.Chmod(b.bundle, 0o644)
	env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "AWS_EC2_METADATA_DISABLED=true", "AWS_PAGER=", "LANG=C.UTF-8"}
	for k, v := range b.ChildEnv() {
		env = append(env, k+"="+v)
	}
	return home, env
}

// runAWS runs the CLI as uid 65534 in env, with the stand-in as its
// endpoint.
func runAWS(t *testing.T, env []string, endpoint string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	if endpoint != "" {
		args = append(args, "--endpoint-url", endpoint)
	}
	cmd := exec.Command(awsCLI, args...)
	cmd.Env = env
	cmd.SysProcAttr = asNobody()
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// TestAWSCLI: Debian's aws, run as another user with only the fake keys
// and the broker's proxy variables, reaches a stand-in that serves only
// the real keys: sts get-caller-identity, s3 ls and a multipart s3 cp
// work; what the tree can read back (export-credentials, its output) holds
// only fakes; keys the tree does not hold, and a presigned URL, are
// refused with their reasons.
func TestAWSCLI(t *testing.T) {
	if _, err := os.Stat(awsCLI); err != nil {
		t.Fatalf("Debian's awscli is needed: %v", err)
	}
	if os.Getuid() != 0 {
		t.Skip("needs root to run the client as another user") // CI runs as root
	}
	for _, real := range []sigv4.Credentials{awsReal, {AccessKeyID: "ASIA" + awsReal.AccessKeyID[4:],
		SecretAccessKey: awsReal.SecretAccessKey, SessionToken: "IQoJb3JpZ2luX2VjE" + strings.Repeat("T0k3n", 30)}} {
		t.Run(real.AccessKeyID[:4], func(t *testing.T) {
			// The user's file, faked by its login format as a launch
			// fakes it; the broker gets the profile's keys.
			f, _ := login.ByPath(".aws/credentials")
			fakeFile, creds, err := f.Fake([]byte("# mine\n"+awsCredFile(real)+"region = us-east-1\n"), func(name, real string) string { return Fake(testKey, name, real) })
			if err != nil || len(creds) != 1 {
				t.Fatalf("faking the credentials file: %v", err)
			}
			fake := sigv4.Credentials(creds[0].AWS.Fake)
			srv, roots, rec := awsStandIn(t, real)
			host := srv.Listener.Addr().String()
			endpoint := "https://" + host
			b, log := startAWSBroker(t, host, roots, AWSCred{Name: creds[0].Name, Fake: fake, Real: AWSStatic(creds[0].AWS.Real)},
				func(c *Config) { c.UID = 65534 })
			home, env := awsTree(t, b, string(fakeFile))
			noReal := func(what, s string) {
				t.Helper()
				for _, v := range []string{real.AccessKeyID, real.SecretAccessKey, real.SessionToken} {
					if v != "" && strings.Contains(s, v) {
						t.Errorf("%s holds a real key", what)
					}
				}
			}

			out, errOut, err := runAWS(t, env, endpoint, "sts", "get-caller-identity")
			noReal("sts output", out+errOut)
			if err != nil || !strings.Contains(out, "arn:aws:iam::123456789012:user/standin") {
				t.Fatalf("sts get-caller-identity: %v: %s%s", err, out, errOut)
			}
			out, errOut, err = runAWS(t, env, endpoint, "s3", "ls")
			noReal("s3 ls output", out+errOut)
			if err != nil || !strings.Contains(out, "standin-bucket") {
				t.Fatalf("s3 ls: %v: %s%s", err, out, errOut)
			}

			// The transfers once, with the session token (the one the
			// broker replaces; the long-term keys' run shows no more).
			if real.SessionToken != "" {
				big := filepath.Join(home, "big.bin")
				data := make([]byte, 9<<20)
				rand.Read(data)
				if err := os.WriteFile(big, data, 0o644); err != nil {
					t.Fatal(err)
				}
				n := len(rec.all())
				out, errOut, err = runAWS(t, env, endpoint, "s3", "cp", big, "s3://standin-bucket/big.bin")
				noReal("s3 cp output", out+errOut)
				if err != nil {
					t.Fatalf("s3 cp: %v: %s%s", err, out, errOut)
				}
				parts, bytesUp, payloads := 0, 0, map[string]bool{}
				for _, e := range rec.all()[n:] {
					if e.Method == "PUT" && strings.Contains(e.Query, "partNumber") {
						parts++
						bytesUp += e.Bytes
						kind := e.Payload
						if len(kind) == 64 {
							kind = "sha256"
						}
						payloads[kind] = true
					}
				}
				if parts < 2 || bytesUp < len(data) {
					t.Errorf("s3 cp: %d parts, %d bytes reached the stand-in", parts, bytesUp)
				}
				t.Logf("s3 cp of 9 MiB: %d parts, payload signing %v", parts, payloads)

				// A checksum trailer: the CLI streams aws-chunked with an
				// unsigned trailer.
				n = len(rec.all())
				out, errOut, err = runAWS(t, env, endpoint, "s3api", "put-object", "--bucket", "standin-bucket", "--key", "small",
					"--body", big, "--checksum-algorithm", "CRC32")
				noReal("s3api put-object output", out+errOut)
				if err != nil {
					t.Fatalf("s3api put-object: %v: %s%s", err, out, errOut)
				}
				if got := rec.all()[n:]; len(got) != 1 || got[0].Payload != sigv4.StreamingUnsignedTrailer || got[0].Bytes <= len(data) {
					t.Errorf("put-object with a trailer: %+v", got)
				}

				// botocore from Python, as a program of the tree would use it
				// (the botocore Debian's awscli carries).
				py := botocoreScript
				cmd := exec.Command("/usr/bin/python3", "-c", py, endpoint)
				cmd.Env, cmd.SysProcAttr = env, asNobody()
				var pyErr bytes.Buffer
				cmd.Stderr = &pyErr
				pyOut, err := cmd.Output()
				noReal("botocore's output", string(pyOut)+pyErr.String())
				if err != nil || !strings.Contains(string(pyOut), "user/standin") || !strings.Contains(string(pyOut), fake.SecretAccessKey) {
					t.Errorf("botocore: %v: %s", err, pyErr.String())
				}
			}

			out, errOut, err = runAWS(t, env, "", "configure", "export-credentials")
			noReal("export-credentials", out+errOut)
			if err != nil || !strings.Contains(out, fake.AccessKeyID) || !strings.Contains(out, fake.SecretAccessKey) {
				t.Errorf("export-credentials: %v: %s", err, errOut)
			}

			// A presigned URL made with the fake is refused by name.
			out, errOut, err = runAWS(t, env, endpoint, "s3", "presign", "s3://standin-bucket/big.bin")
			if err != nil {
				t.Fatalf("s3 presign: %v: %s", err, errOut)
			}
			cmd := exec.Command("curl", "-sS", "-w", "\n%{http_code}", strings.TrimSpace(out))
			cmd.Env, cmd.SysProcAttr = env, asNobody()
			got, _ := cmd.Output()
			if !strings.HasSuffix(string(got), "\n403") || !log.has("denied", "aws:default", "sigv4-presigned") {
				t.Errorf("a presigned URL: %s", got)
			}

			// Keys the tree does not hold: the fake id with another secret,
			// and another id.
			denied := rec.denied
			for _, c := range []struct {
				keys  sigv4.Credentials
				place string
			}{
				{sigv4.Credentials{AccessKeyID: fake.AccessKeyID, SecretAccessKey: strings.Repeat("x", 40), SessionToken: fake.SessionToken}, "sigv4-signature"},
				{sigv4.Credentials{AccessKeyID: "AKIA" + strings.Repeat("OTHR", 4), SecretAccessKey: fake.SecretAccessKey}, "sigv4-unknown-key"},
			} {
				_, env := awsTree(t, b, awsCredFile(c.keys))
				out, errOut, err := runAWS(t, env, endpoint, "sts", "get-caller-identity")
				if err == nil || !strings.Contains(out+errOut, "AccessDenied") || !strings.Contains(out+errOut, c.place) || !log.has("denied", "", c.place) && !log.has("denied", "aws:default", c.place) {
					t.Errorf("%s: %v: %s%s", c.place, err, out, errOut)
				}
			}
			if rec.denied != denied {
				t.Error("the stand-in got a request the broker should have refused")
			}
		})
	}
}

// botocoreScript calls STS and S3 with botocore's own credential chain and
// prints what the tree can read of the secret key.
const botocoreScript = `import os, sys
from awscli.botocore.session import get_session
s = get_session()
sts = s.create_client("sts", endpoint_url=sys.argv[1], region_name="us-east-1")
print(sts.get_caller_identity()["Arn"])
s3 = s.create_client("s3", endpoint_url=sys.argv[1], region_name="us-east-1")
s3.put_object(Bucket="standin-bucket", Key="py", Body=b"x" * 1000)
print(s.get_credentials().get_frozen_credentials().secret_key)
`
