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
	t.Run("namespaces", func(t *testing.T) { testAWSLoginFile(t, false, false) })
	t.Run("landlock", func(t *testing.T) { testAWSLoginFile(t, true, false) })
}

// TestAWSUserSetFiles: the same with the credentials and config files
// where the user's AWS_SHARED_CREDENTIALS_FILE and AWS_CONFIG_FILE name
// them (off the seal's list), the config holding a profile of static
// keys too: the tree reads fakes at those paths (namespaces) or finds
// them masked (Landlock), its variables name the fakes, and both
// profiles' calls work through the broker.
func TestAWSUserSetFiles(t *testing.T) {
	t.Run("namespaces", func(t *testing.T) { testAWSLoginFile(t, false, true) })
	t.Run("landlock", func(t *testing.T) { testAWSLoginFile(t, true, true) })
}

// testAWSLoginFile runs it sealed by namespaces (the file is a fake at its
// path) or by Landlock (the file is masked; AWS_SHARED_CREDENTIALS_FILE
// names the fake).
func testAWSLoginFile(t *testing.T, landlock, userSet bool) {
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
	credRel, cfgRel := ".aws/credentials", ".aws/config"
	cfg := "[default]\nregion = us-east-1\nendpoint_url = https://" + host + "\n"
	if userSet {
		credRel, cfgRel = "secrets/aws-creds", "secrets/aws-config"
		cfg += "[profile c]\nregion = us-east-1\nendpoint_url = https://" + host + "\naws_access_key_id = " + realID + "\naws_secret_access_key = " + realSecret + "\n"
	}
	write(credRel, "[default]\naws_access_key_id = "+realID+"\naws_secret_access_key = "+realSecret+"\n")
	write(cfgRel, cfg)
	write("company-ca.pem", string(ca))
	write("work/.keep", "")
	if os.Getuid() == 0 {
		filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
	}
	script := `cd "$HOME/work"
echo "file: $(grep aws_ "$HOME/` + credRel + `" 2>&1 | tr '\n' ' ')"
echo "config: $(grep aws_secret "$HOME/` + cfgRel + `" 2>&1 | tr '\n' ' ')"
echo "vars: ${AWS_SHARED_CREDENTIALS_FILE:-unset} ${AWS_CONFIG_FILE:-unset}"
echo "export: $(/usr/bin/aws configure export-credentials --format env 2>&1 | tr '\n' ' ')"
echo "sts: $(AWS_EC2_METADATA_DISABLED=true /usr/bin/aws sts get-caller-identity --region us-east-1 --endpoint-url https://` + host + ` --query Arn --output text 2>&1)"
`
	if userSet {
		script = "exec > \"$HOME/work/out.txt\" 2>&1\n" + script
		script += `echo "sts c: $(AWS_EC2_METADATA_DISABLED=true /usr/bin/aws sts get-caller-identity --profile c --endpoint-url https://` + host + ` --query Arn --output text 2>&1)"
`
	}
	argv := []string{exe, "run", "--seal", "--", "/bin/sh", "-c", script}
	if landlock {
		noNS := filepath.Join(filepath.Dir(exe), "nouserns")
		copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		argv = append([]string{noNS}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "SSL_CERT_FILE=" + filepath.Join(home, "company-ca.pem")}
	if userSet {
		cmd.Env = append(cmd.Env, "AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(home, credRel), "AWS_CONFIG_FILE="+filepath.Join(home, cfgRel))
	}
	cmd.Dir = filepath.Join(home, "work")
	cmd.SysProcAttr = asUnprivileged()
	b, err := cmd.CombinedOutput()
	if userSet {
		// The user's environment names a file of keys: the launcher
		// masks what looks like a key in the tree's output, so the tree
		// writes what it saw to a file the test reads.
		if err == nil {
			b, err = os.ReadFile(filepath.Join(home, "work", "out.txt"))
		}
	}
	out := strings.NewReplacer(realID, "<REAL-ID>", realSecret, "<REAL-SECRET>").Replace(string(b))
	if err != nil {
		t.Fatalf("envsieve run: %v\n%s", err, out)
	}
	if out != string(b) {
		t.Errorf("a real key is in what the tree printed:\n%s", out)
	}
	file := "file: aws_access_key_id = AKIA"
	if landlock {
		file = "file: grep: " + home + "/" + credRel + ": Permission denied"
	}
	wants := []string{file, "export: export AWS_ACCESS_KEY_ID=AKIA", "sts: arn:aws:iam::123456789012:user/e2e"}
	if userSet {
		config := "config: \n" // the fake config has no static key line
		if landlock {
			config = "config: grep: " + home + "/" + cfgRel + ": Permission denied"
		}
		wants = append(wants, config, "sts c: arn:aws:iam::123456789012:user/e2e")
		if strings.Contains(out, "vars: "+filepath.Join(home, credRel)) || strings.Contains(out, " "+filepath.Join(home, cfgRel)+"\n") {
			t.Errorf("a variable names the real file:\n%s", out)
		}
	}
	for _, want := range wants {
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
