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

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/internal/sigv4"
)

// TestAWSLoginFile: a user whose ~/.aws/credentials holds real keys, and
// whose ~/.aws/config names an endpoint_url, runs Debian's aws in a sealed
// tree as an unprivileged user: `aws sts get-caller-identity` against
// that endpoint (a stand-in that serves only the real keys, its
// certificate from a company CA the user's SSL_CERT_FILE names) works
// through the broker's re-signing, while the tree's credentials file and
// `aws configure export-credentials` hold only fakes.
func TestAWSLoginFile(t *testing.T) {
	t.Run("namespaces", func(t *testing.T) { testAWSLoginFile(t, false) })
	t.Run("landlock", func(t *testing.T) { testAWSLoginFile(t, true) })
}

// testAWSLoginFile runs it sealed by namespaces (the file is a fake at its
// path) or by Landlock (the file is masked; AWS_SHARED_CREDENTIALS_FILE
// names the fake).
func testAWSLoginFile(t *testing.T, landlock bool) {
	if _, err := os.Stat("/usr/bin/aws"); err != nil {
		t.Fatalf("Debian's awscli is needed: %v", err)
	}
	exe, home := unprivilegedInstall(t)
	name := loopbackName(t)
	realID := "AKIA" + strings.Repeat("E2ER", 4)
	realSecret := strings.Repeat("e2eReal/Secret+", 3)[:40]
	host, ca, seen := companyStandIn(t, name, func(w http.ResponseWriter, r *http.Request) {
		s, err := sigv4.Parse(r)
		body, _ := io.ReadAll(r.Body)
		sum := sha256.Sum256(body)
		if err != nil || s == nil || s.AccessKeyID != realID || s.Verify(r, realSecret, hex.EncodeToString(sum[:])) != nil {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, "<ErrorResponse><Error><Code>SignatureDoesNotMatch</Code><Message>not the real keys</Message></Error></ErrorResponse>")
			return
		}
		io.WriteString(w, `<GetCallerIdentityResponse><GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:user/e2e</Arn>`+
			`<UserId>AIDAE2E</UserId><Account>123456789012</Account></GetCallerIdentityResult></GetCallerIdentityResponse>`)
	})
	write := func(rel, body string) {
		p := filepath.Join(home, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".aws/credentials", "[default]\naws_access_key_id = "+realID+"\naws_secret_access_key = "+realSecret+"\n")
	write(".aws/config", "[default]\nregion = us-east-1\nendpoint_url = https://"+host+"\n")
	write("company-ca.pem", string(ca))
	write("work/.keep", "")
	if os.Getuid() == 0 {
		filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
	}
	script := `cd "$HOME/work"
echo "file: $(grep aws_ "$HOME/.aws/credentials" 2>&1 | tr '\n' ' ')"
echo "export: $(/usr/bin/aws configure export-credentials --format env 2>&1 | tr '\n' ' ')"
echo "sts: $(AWS_EC2_METADATA_DISABLED=true /usr/bin/aws sts get-caller-identity --endpoint-url https://` + host + ` --query Arn --output text 2>&1)"
`
	argv := []string{exe, "run", "--seal", "--", "/bin/sh", "-c", script}
	if landlock {
		noNS := filepath.Join(filepath.Dir(exe), "nouserns")
		copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		argv = append([]string{noNS}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "SSL_CERT_FILE=" + filepath.Join(home, "company-ca.pem")}
	cmd.Dir = filepath.Join(home, "work")
	cmd.SysProcAttr = asUnprivileged()
	b, err := cmd.CombinedOutput()
	out := strings.NewReplacer(realID, "<REAL-ID>", realSecret, "<REAL-SECRET>").Replace(string(b))
	if err != nil {
		t.Fatalf("envsieve run: %v\n%s", err, out)
	}
	if out != string(b) {
		t.Errorf("a real key is in what the tree printed:\n%s", out)
	}
	file := "file: aws_access_key_id = AKIA"
	if landlock {
		file = "file: grep: " + home + "/.aws/credentials: Permission denied"
	}
	for _, want := range []string{file, "export: export AWS_ACCESS_KEY_ID=AKIA", "sts: arn:aws:iam::123456789012:user/e2e"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing:\n%s", want, out)
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
