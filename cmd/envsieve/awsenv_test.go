//go:build linux

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/internal/sigv4"
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

// TestExplainAWS: explain names the AWS profiles a sealed tree gets fakes
// of and the AWS key variables of the environment, each with the hosts the
// broker re-signs them for (AWS's and the profile's endpoint_url), in text
// and JSON, and never a value; without a broker the variables are named
// as refused, and under --no-broker as real.
func TestExplainAWS(t *testing.T) {
	exe, home := unprivilegedInstall(t)
	realID := "AKIA" + strings.Repeat("EXPL", 4)
	realSecret := strings.Repeat("explReal/Secret+", 3)[:40]
	write := func(rel, body string) {
		p := filepath.Join(home, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(".aws/credentials", "[default]\naws_access_key_id = "+realID+"\naws_secret_access_key = "+realSecret+"\n"+
		"[work]\naws_access_key_id = "+realID+"\naws_secret_access_key = "+realSecret+"\n")
	write(".aws/config", "[default]\nregion = us-east-1\n[profile work]\nendpoint_url = https://s3.work.example:9000\n"+
		"[profile vault]\ncredential_process = /usr/bin/false\n[profile corp]\nsso_session = corp\nsso_account_id = 1\nsso_role_name = R\n"+
		"[sso-session corp]\nsso_start_url = https://d-1.awsapps.com/start\nsso_region = us-east-1\n"+
		"[profile dev]\nrole_arn = arn:aws:iam::1:role/dev\nsource_profile = work\n"+
		"[profile ec2]\nrole_arn = arn:aws:iam::1:role/e\ncredential_source = Ec2InstanceMetadata\n"+
		"[profile envrole]\nrole_arn = arn:aws:iam::1:role/e\ncredential_source = Environment\n")
	write("policy.yaml", "version: 1\nallow: [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_PROFILE]\n")
	if os.Getuid() == 0 {
		filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
	}
	explain := func(args ...string) string {
		argv := append(append([]string{"explain", "--policy", filepath.Join(home, "policy.yaml")}, args...), "--", "true")
		cmd := exec.Command(exe, argv...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "AWS_PROFILE=work",
			"AWS_ACCESS_KEY_ID=" + realID, "AWS_SECRET_ACCESS_KEY=" + realSecret}
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		out, err := cmd.CombinedOutput()
		clean := strings.NewReplacer(realID, "<REAL-ID>", realSecret, "<REAL-SECRET>").Replace(string(out))
		if err != nil {
			t.Fatalf("explain %v: %v\n%s", args, err, clean)
		}
		if clean != string(out) {
			t.Errorf("explain %v printed a real value:\n%s", args, clean)
		}
		return string(out)
	}
	text := explain("--seal")
	cred := home + "/.aws/credentials"
	for _, want := range []string{
		"aws:     " + cred + ": profile default faked, real keys from the file, re-signed for *.amazonaws.com, *.amazonaws.com.cn\n",
		"aws:     " + cred + ": profile work faked, real keys from the file, re-signed for *.amazonaws.com, *.amazonaws.com.cn, s3.work.example:9000\n",
		"login:   " + cred + " fake, bound to *.amazonaws.com, *.amazonaws.com.cn\n",
		"aws:     AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY from the environment: fake, re-signed for *.amazonaws.com, *.amazonaws.com.cn, s3.work.example:9000\n",
		"aws:     ~/.aws/config: profile corp fake (real keys from IAM Identity Center: the SSO cache's token, exchanged by the broker outside the tree)\n",
		"aws:     ~/.aws/config: profile vault fake (real keys from its credential_process, run by the broker outside the tree)\n",
		"aws:     ~/.aws/config: profile dev fake (real keys from STS AssumeRole, called by the broker with profile work's keys)\n",
		"aws:     ~/.aws/config: profile ec2 real (credential_source Ec2InstanceMetadata: the tree asks the machine's metadata service itself, not through the broker, and gets its real keys)\n",
		"aws:     ~/.aws/config: profile envrole not faked (credential_source Environment: the tree assumes the role with the environment's keys, through the broker when they are fakes, and the keys STS answers reach it as fresh fakes)\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("explain --seal: %q missing:\n%s", want, text)
		}
	}
	var doc struct {
		Seal struct {
			Logins []struct {
				Path string
				AWS  []struct {
					Name  string
					Hosts []string
				}
			}
		}
		AWSEnv *struct {
			Name, Seen  string
			Vars, Hosts []string
		} `json:"aws_env"`
		AWSConfig []struct{ Name, Seen, From string } `json:"aws_config"`
	}
	if err := json.Unmarshal([]byte(explain("--seal", "--json")), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, l := range doc.Seal.Logins {
		if l.Path == cred {
			found = len(l.AWS) == 2 && l.AWS[1].Name == "aws:work" && slices.Contains(l.AWS[1].Hosts, "s3.work.example:9000")
		}
	}
	if !found {
		t.Errorf("explain --json: the AWS profiles are not in the credentials file's login: %+v", doc.Seal.Logins)
	}
	if a := doc.AWSEnv; a == nil || a.Name != "aws:env" || a.Seen != "fake" || !slices.Equal(a.Vars, []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"}) {
		t.Errorf("explain --json: aws_env = %+v", doc.AWSEnv)
	}
	if c := doc.AWSConfig; len(c) != 5 || c[0].Name != "aws:corp" || c[0].From != "sso" || c[1].Name != "aws:dev" || c[1].From != "role" ||
		c[2].Name != "aws:vault" || c[2].From != "process" || c[2].Seen != "fake" || c[3].Name != "aws:ec2" || c[3].Seen != "real" ||
		c[4].Name != "aws:envrole" || c[4].From != "credential_source" {
		t.Errorf("explain --json: aws_config = %+v", c)
	}
	if text := explain("--no-broker"); !strings.Contains(text, "from the environment: real (--no-broker)") ||
		!strings.Contains(text, "profile vault not faked (its credential_process runs in the tree, and the keys it prints are real)") {
		t.Errorf("explain --no-broker:\n%s", text)
	}
	// Only a rule for aws may grant them: named as the grant's.
	write("policy.yaml", "version: 1\nrules:\n  - name: aws\n    match: {command: aws}\n    allow: [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY]\n")
	if os.Getuid() == 0 {
		os.Lchown(filepath.Join(home, "policy.yaml"), 65534, 65534)
	}
	if text := explain(); !strings.Contains(text, "aws:     AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY from the environment, for a rule's grant: fake, re-signed for *.amazonaws.com, *.amazonaws.com.cn\n") {
		t.Errorf("explain with a rule for aws:\n%s", text)
	}
}

// TestAWSRuleGrant: a rule for aws that grants the AWS keys of the user's
// environment (the only way to make aws work before re-signing) hands aws
// fakes, which the broker re-signs: `aws configure export-credentials`
// under the rule prints only fakes, and `aws sts get-caller-identity`
// works against a stand-in that serves only the real keys. The tree's own
// environment gets no AWS key at all.
func TestAWSRuleGrant(t *testing.T) {
	if _, err := os.Stat("/usr/bin/aws"); err != nil {
		t.Fatalf("Debian's awscli is needed: %v", err)
	}
	exe, home := unprivilegedInstall(t)
	name := loopbackName(t)
	realID := "AKIA" + strings.Repeat("RULE", 4)
	realSecret := strings.Repeat("ruleReal/Secret+", 3)[:40]
	host, ca, seen := companyStandIn(t, name, func(w http.ResponseWriter, r *http.Request) {
		s, err := sigv4.Parse(r)
		body, _ := io.ReadAll(r.Body)
		sum := sha256.Sum256(body)
		if err != nil || s == nil || s.AccessKeyID != realID || s.Verify(r, realSecret, hex.EncodeToString(sum[:])) != nil {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, "<ErrorResponse><Error><Code>SignatureDoesNotMatch</Code><Message>not the real keys</Message></Error></ErrorResponse>")
			return
		}
		io.WriteString(w, `<GetCallerIdentityResponse><GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:user/rule</Arn>`+
			`<UserId>AIDARULE</UserId><Account>123456789012</Account></GetCallerIdentityResult></GetCallerIdentityResponse>`)
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
	write("policy.yaml", "version: 1\nredact: {enabled: false, entropy: false}\nrules:\n  - name: aws\n    match: {command: aws}\n"+
		"    allow: [AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY]\n")
	write("work/.keep", "")
	if os.Getuid() == 0 {
		filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
	}
	script := `cd "$HOME/work"
echo "tree: [$(printenv AWS_SECRET_ACCESS_KEY)]"
echo "export: $(/usr/bin/aws configure export-credentials --format env 2>&1 | tr '\n' ' ')"
echo "sts: $(AWS_EC2_METADATA_DISABLED=true /usr/bin/aws sts get-caller-identity --endpoint-url https://` + host + ` --query Arn --output text 2>&1)"
`
	cmd := exec.Command(exe, "run", "--policy", filepath.Join(home, "policy.yaml"), "--", "/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "SSL_CERT_FILE=" + filepath.Join(home, "company-ca.pem"),
		"ENVSIEVE_SHIM=" + shimtest.Lib(t), "AWS_ACCESS_KEY_ID=" + realID, "AWS_SECRET_ACCESS_KEY=" + realSecret}
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
	for _, want := range []string{"tree: []", "export: export AWS_ACCESS_KEY_ID=AKIA", "sts: arn:aws:iam::123456789012:user/rule"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing:\n%s", want, out)
		}
	}
	for _, a := range seen() {
		if !strings.Contains(a, "Credential="+realID+"/") {
			t.Errorf("the stand-in got a request not signed with the real key id (%d bytes)", len(a))
		}
	}
}
