//go:build linux

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/sigv4"
)

// TestAWSEnv: a user whose shell holds AWS keys (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), and whose policy admits
// them, runs Debian's aws in the tree as an unprivileged user, sealed or
// not: the tree's environment holds fakes of the same shape, `aws
// configure export-credentials` prints only those, and `aws sts
// get-caller-identity` against a stand-in that serves only the real keys
// (the ~/.aws/config endpoint_url) works through the broker's re-signing.
// No real value is in anything the tree prints.
func TestAWSEnv(t *testing.T) {
	t.Run("sealed", func(t *testing.T) { testAWSEnv(t, true) })
	t.Run("unsealed", func(t *testing.T) { testAWSEnv(t, false) })
}

func testAWSEnv(t *testing.T, sealed bool) {
	if _, err := os.Stat("/usr/bin/aws"); err != nil {
		t.Fatalf("Debian's awscli is needed: %v", err)
	}
	exe, home := unprivilegedInstall(t)
	name := loopbackName(t)
	realID := "ASIA" + strings.Repeat("ENVR", 4)
	realSecret := strings.Repeat("envReal/Secret+", 3)[:40]
	realToken := "IQoJb3JpZ2luX2VjEnvReal" + strings.Repeat("T0k3n", 12)
	host, ca, seen := companyStandIn(t, name, func(w http.ResponseWriter, r *http.Request) {
		s, err := sigv4.Parse(r)
		body, _ := io.ReadAll(r.Body)
		sum := sha256.Sum256(body)
		if err != nil || s == nil || s.AccessKeyID != realID || r.Header.Get("X-Amz-Security-Token") != realToken ||
			s.Verify(r, realSecret, hex.EncodeToString(sum[:])) != nil {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, "<ErrorResponse><Error><Code>SignatureDoesNotMatch</Code><Message>not the real keys</Message></Error></ErrorResponse>")
			return
		}
		io.WriteString(w, `<GetCallerIdentityResponse><GetCallerIdentityResult><Arn>arn:aws:sts::123456789012:assumed-role/e2e/env</Arn>`+
			`<UserId>AROAE2E:env</UserId><Account>123456789012</Account></GetCallerIdentityResult></GetCallerIdentityResponse>`)
	})
	write := func(rel, body string) {
		p := filepath.Join(home, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".aws/config", "[default]\nregion = us-east-1\nendpoint_url = https://"+host+"\n")
	write("company-ca.pem", string(ca))
	write("policy.yaml", "version: 1\nallow: [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN]\n")
	write("work/.keep", "")
	if os.Getuid() == 0 {
		filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
	}
	script := `cd "$HOME/work"
echo "env: id=$(printenv AWS_ACCESS_KEY_ID) secret=$(printenv AWS_SECRET_ACCESS_KEY) token=$(printenv AWS_SESSION_TOKEN)"
echo "export: $(/usr/bin/aws configure export-credentials --format env 2>&1 | tr '\n' ' ')"
echo "sts: $(AWS_EC2_METADATA_DISABLED=true /usr/bin/aws sts get-caller-identity --endpoint-url https://` + host + ` --query Arn --output text 2>&1)"
`
	argv := []string{exe, "run", "--policy", filepath.Join(home, "policy.yaml")}
	if sealed {
		argv = append(argv, "--seal")
	}
	argv = append(argv, "--", "/bin/sh", "-c", script)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "SSL_CERT_FILE=" + filepath.Join(home, "company-ca.pem"),
		"AWS_ACCESS_KEY_ID=" + realID, "AWS_SECRET_ACCESS_KEY=" + realSecret, "AWS_SESSION_TOKEN=" + realToken}
	cmd.Dir = filepath.Join(home, "work")
	cmd.SysProcAttr = asUnprivileged()
	b, err := cmd.CombinedOutput()
	out := strings.NewReplacer(realID, "<REAL-ID>", realSecret, "<REAL-SECRET>", realToken, "<REAL-TOKEN>").Replace(string(b))
	if err != nil {
		t.Fatalf("envsieve run: %v\n%s", err, out)
	}
	if out != string(b) {
		t.Errorf("a real key is in what the tree printed:\n%s", out)
	}
	for _, want := range []string{"env: id=ASIA", "export: export AWS_ACCESS_KEY_ID=ASIA", "AWS_SESSION_TOKEN=",
		"sts: arn:aws:sts::123456789012:assumed-role/e2e/env"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing:\n%s", want, out)
		}
	}
	// The fakes have the real ones' shape.
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "env: "); ok {
			f := strings.Fields(rest)
			if len(f) != 3 || len(f[0]) != len("id=")+len(realID) || len(f[1]) != len("secret=")+40 || len(f[2]) <= len("token=") {
				t.Errorf("the fakes are not of the real keys' shape: %q", rest)
			}
		}
	}
	if len(seen()) == 0 {
		t.Error("the stand-in got no request")
	}
	for _, a := range seen() {
		if !strings.Contains(a, "Credential="+realID+"/") {
			t.Errorf("the stand-in got a request not signed with the real key id (%d bytes)", len(a))
		}
	}
}
