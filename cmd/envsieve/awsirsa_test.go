//go:build linux

package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/internal/sigv4"
)

// TestAWSWebIdentityEnv: a user whose environment holds EKS's IRSA
// variables (AWS_WEB_IDENTITY_TOKEN_FILE naming a token file outside
// HOME, AWS_ROLE_ARN, AWS_ROLE_SESSION_NAME), admitted by the policy,
// runs Debian's aws in a sealed tree as an unprivileged user: the tree
// cannot read the token, its environment holds none of the three
// variables but fake static keys, and `aws sts get-caller-identity` works
// twice through the broker, which assumed the role once itself
// (AssumeRoleWithWebIdentity with the token, at AWS_ENDPOINT_URL_STS),
// against a stand-in that serves only the role's real keys. Sealed by
// namespaces and by Landlock. A policy that admits none of the variables
// still gets the token file masked (EKS's path is well known). Before,
// the tree read the token and got the variables.
func TestAWSWebIdentityEnv(t *testing.T) {
	t.Run("namespaces", func(t *testing.T) { testAWSWebIdentityEnv(t, false, true) })
	t.Run("landlock", func(t *testing.T) { testAWSWebIdentityEnv(t, true, true) })
	t.Run("not-admitted", func(t *testing.T) { testAWSWebIdentityEnv(t, false, false) })
}

func testAWSWebIdentityEnv(t *testing.T, landlock, admit bool) {
	if _, err := os.Stat("/usr/bin/aws"); err != nil {
		t.Fatalf("Debian's awscli is needed: %v", err)
	}
	exe, home := unprivilegedInstall(t)
	name := loopbackName(t)
	roleID, roleSecret := "ASIA"+strings.Repeat("IRSA", 4), strings.Repeat("irsaReal/Secret+", 3)[:40]
	roleToken := strings.Repeat("irsaRealSessionToken", 8)
	webToken := "eyJhbGciOiJSUzI1NiJ9.irsaWebIdentity.c2lnbmF0dXJl"
	roleARN := "arn:aws:iam::123456789012:role/irsa"
	var assumed atomic.Int32
	host, ca, _ := companyStandIn(t, name, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		q, _ := url.ParseQuery(string(body))
		if q.Get("Action") == "AssumeRoleWithWebIdentity" {
			if q.Get("WebIdentityToken") != webToken || q.Get("RoleArn") != roleARN || q.Get("RoleSessionName") != "irsa-session" {
				http.Error(w, "<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>", http.StatusForbidden)
				return
			}
			assumed.Add(1)
			fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>%s</AccessKeyId>`+
				`<SecretAccessKey>%s</SecretAccessKey><SessionToken>%s</SessionToken><Expiration>%s</Expiration></Credentials>`+
				`</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`,
				roleID, roleSecret, roleToken, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
			return
		}
		s, err := sigv4.Parse(r)
		sum := sha256.Sum256(body)
		if err != nil || s == nil || s.AccessKeyID != roleID || r.Header.Get("X-Amz-Security-Token") != roleToken ||
			s.Verify(r, roleSecret, hex.EncodeToString(sum[:])) != nil {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, "<ErrorResponse><Error><Code>SignatureDoesNotMatch</Code><Message>not the real keys</Message></Error></ErrorResponse>")
			return
		}
		io.WriteString(w, `<GetCallerIdentityResponse><GetCallerIdentityResult><Arn>arn:aws:sts::123456789012:assumed-role/irsa/e2e</Arn>`+
			`<UserId>AROAE2E</UserId><Account>123456789012</Account></GetCallerIdentityResult></GetCallerIdentityResponse>`)
	})
	write := func(p, body string) {
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Outside HOME, as EKS projects it.
	secrets := t.TempDir()
	tokenFile := filepath.Join(secrets, "eks", "token")
	write(tokenFile, webToken)
	write(filepath.Join(home, ".aws/config"), "[default]\nregion = us-east-1\n")
	write(filepath.Join(home, "company-ca.pem"), string(ca))
	policy := "version: 1\nallow: [AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN, AWS_ROLE_SESSION_NAME, AWS_ENDPOINT_URL_STS, AWS_REGION]\n"
	if !admit {
		policy = "version: 1\nallow: [AWS_REGION]\n"
	}
	write(filepath.Join(home, "policy.yaml"), policy)
	write(filepath.Join(home, "work/.keep"), "")
	if os.Getuid() == 0 {
		for _, d := range []string{home, secrets} {
			filepath.Walk(d, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
		}
		os.Chmod(filepath.Dir(secrets), 0o755)
	}
	script := `cd "$HOME/work"
echo "token: $(cat ` + tokenFile + ` 2>/dev/null | wc -c)"
echo "vars: $(env | grep -c '^AWS_WEB_IDENTITY_TOKEN_FILE=\|^AWS_ROLE_ARN=\|^AWS_ROLE_SESSION_NAME=')"
echo "id: $(printenv AWS_ACCESS_KEY_ID)"
for i in 1 2; do
  echo "sts: $(AWS_EC2_METADATA_DISABLED=true /usr/bin/aws sts get-caller-identity --endpoint-url https://` + host + ` --query Arn --output text 2>&1)"
done
`
	argv := []string{exe, "run", "--seal", "--policy", filepath.Join(home, "policy.yaml"), "--", "/bin/sh", "-c", script}
	if landlock {
		noNS := filepath.Join(filepath.Dir(exe), "nouserns")
		copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		argv = append([]string{noNS}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "SSL_CERT_FILE=" + filepath.Join(home, "company-ca.pem"),
		"AWS_WEB_IDENTITY_TOKEN_FILE=" + tokenFile, "AWS_ROLE_ARN=" + roleARN, "AWS_ROLE_SESSION_NAME=irsa-session",
		"AWS_ENDPOINT_URL_STS=https://" + host, "AWS_REGION=us-east-1"}
	cmd.Dir = filepath.Join(home, "work")
	cmd.SysProcAttr = asUnprivileged()
	b, err := cmd.CombinedOutput()
	out := strings.NewReplacer(roleID, "<REAL-ROLE-ID>", roleSecret, "<REAL-ROLE-SECRET>", roleToken, "<REAL-ROLE-TOKEN>", webToken, "<WEB-TOKEN>").Replace(string(b))
	if err != nil {
		t.Fatalf("envsieve run: %v\n%s", err, out)
	}
	if out != string(b) {
		t.Errorf("a real key or the token is in what the tree printed:\n%s", out)
	}
	want := []string{"token: 0\n", "vars: 0\n", "id: ASIA",
		"sts: arn:aws:sts::123456789012:assumed-role/irsa/e2e\nsts: arn:aws:sts::123456789012:assumed-role/irsa/e2e"}
	wantAssumed := int32(1)
	if !admit {
		want, wantAssumed = []string{"token: 0\n", "vars: 0\n", "id: \n"}, 0
	}
	for _, want := range want {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing:\n%s", want, out)
		}
	}
	if n := assumed.Load(); n != wantAssumed {
		t.Errorf("the role was assumed %d times, want %d (by the broker, its keys valid an hour)", n, wantAssumed)
	}
}

// TestExplainAWSUserSetFiles: with AWS_CONFIG_FILE and
// AWS_SHARED_CREDENTIALS_FILE set by the user to files outside ~/.aws,
// explain names those files (what a launch fakes), not ~/.aws/config and
// ~/.aws/credentials, in text and JSON. Before, it named the default
// paths (and listed no credentials file at all, none being there).
func TestExplainAWSUserSetFiles(t *testing.T) {
	exe, home := unprivilegedInstall(t)
	realID := "AKIA" + strings.Repeat("USRS", 4)
	realSecret := strings.Repeat("userSet/Secret+x", 3)[:40]
	write := func(rel, body string) {
		p := filepath.Join(home, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, cred := filepath.Join(home, "etc/aws-config"), filepath.Join(home, "etc/aws-creds")
	write("etc/aws-creds", "[default]\naws_access_key_id = "+realID+"\naws_secret_access_key = "+realSecret+"\n")
	write("etc/aws-config", "[default]\nregion = us-east-1\n[profile vault]\ncredential_process = /usr/bin/false\n")
	if os.Getuid() == 0 {
		filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
	}
	explain := func(args ...string) string {
		cmd := exec.Command(exe, append(append([]string{"explain", "--seal"}, args...), "--", "true")...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "AWS_CONFIG_FILE=" + cfg, "AWS_SHARED_CREDENTIALS_FILE=~/etc/aws-creds"}
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
	text := explain()
	for _, want := range []string{
		"login:   " + cred + " fake, bound to *.amazonaws.com, *.amazonaws.com.cn\n",
		"aws:     " + cred + ": profile default faked, real keys from the file",
		"aws:     " + cfg + ": profile vault fake (real keys from its credential_process, run by the broker outside the tree)\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("explain --seal: %q missing:\n%s", want, text)
		}
	}
	if strings.Contains(text, "~/.aws/config") || strings.Contains(text, ".aws/credentials") {
		t.Errorf("explain --seal names a default path:\n%s", text)
	}
	var doc struct {
		Seal struct {
			Logins []struct{ Path string }
		}
		AWSConfig []struct{ Name, File string } `json:"aws_config"`
	}
	if err := json.Unmarshal([]byte(explain("--json")), &doc); err != nil {
		t.Fatal(err)
	}
	if c := doc.AWSConfig; len(c) != 1 || c[0].Name != "aws:vault" || c[0].File != cfg {
		t.Errorf("explain --json: aws_config = %+v", c)
	}
	if l := doc.Seal.Logins; !slices.ContainsFunc(l, func(s struct{ Path string }) bool { return s.Path == cred }) {
		t.Errorf("explain --json: logins = %+v", l)
	}
}

// TestExplainAWSWebIdentityEnv: explain names the web identity token file
// the user's AWS_WEB_IDENTITY_TOKEN_FILE names and what the tree gets of
// it: fake keys from the broker when the policy admits the variables in a
// sealed launch, masked when it does not or no broker runs, real unsealed;
// never the token.
func TestExplainAWSWebIdentityEnv(t *testing.T) {
	exe, home := unprivilegedInstall(t)
	webToken := "eyJhbGciOiJSUzI1NiJ9.explainWebIdentity.c2ln"
	tokenFile := filepath.Join(home, "eks/token")
	os.MkdirAll(filepath.Dir(tokenFile), 0o700)
	if err := os.WriteFile(tokenFile, []byte(webToken), 0o600); err != nil {
		t.Fatal(err)
	}
	admit := filepath.Join(home, "admit.yaml")
	none := filepath.Join(home, "none.yaml")
	os.WriteFile(admit, []byte("version: 1\nallow: [AWS_WEB_IDENTITY_TOKEN_FILE, AWS_ROLE_ARN]\n"), 0o600)
	os.WriteFile(none, []byte("version: 1\n"), 0o600)
	if os.Getuid() == 0 {
		filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
	}
	explain := func(args ...string) string {
		cmd := exec.Command(exe, append(append([]string{"explain"}, args...), "--", "true")...)
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "AWS_WEB_IDENTITY_TOKEN_FILE=" + tokenFile, "AWS_ROLE_ARN=arn:aws:iam::1:role/irsa"}
		cmd.Dir = home
		cmd.SysProcAttr = asUnprivileged()
		out, err := cmd.CombinedOutput()
		if strings.Contains(string(out), webToken) {
			t.Fatalf("explain %v printed the token", args)
		}
		if err != nil {
			t.Fatalf("explain %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	line := "aws:     web identity " + tokenFile + ": "
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--seal", "--policy", admit}, line + "fake (real keys from STS AssumeRoleWithWebIdentity"},
		{[]string{"--seal", "--policy", none}, line + "masked (the policy does not admit"},
		{[]string{"--seal", "--no-broker", "--policy", admit}, line + "masked (no broker can run"},
		{[]string{"--policy", admit}, line + "real (not sealed: the tree reads the token"},
	} {
		if text := explain(tc.args...); !strings.Contains(text, tc.want) {
			t.Errorf("explain %v: %q missing:\n%s", tc.args, tc.want, text)
		}
	}
	var doc struct {
		W *struct{ Name, Seen, File string } `json:"aws_web_identity"`
	}
	if err := json.Unmarshal([]byte(explain("--seal", "--json", "--policy", admit)), &doc); err != nil {
		t.Fatal(err)
	}
	if w := doc.W; w == nil || w.Seen != "fake" || w.File != tokenFile {
		t.Errorf("explain --json: aws_web_identity = %+v", doc.W)
	}
}

// TestAWSWebIdentityEnvRotated: the token file as Kubernetes projects it
// (DIR/token a link to DIR/..data/token, ..data a link to a dated
// directory, swapped when the kubelet rotates the token): the sealed tree
// reads none of it, not even the token the kubelet writes while the tree
// runs. Both seals.
func TestAWSWebIdentityEnvRotated(t *testing.T) {
	t.Parallel()
	t.Run("namespaces", func(t *testing.T) { testAWSWebIdentityEnvRotated(t, false) })
	t.Run("landlock", func(t *testing.T) { testAWSWebIdentityEnvRotated(t, true) })
}

func testAWSWebIdentityEnvRotated(t *testing.T, landlock bool) {
	exe, home := unprivilegedInstall(t)
	secrets := t.TempDir()
	dir := filepath.Join(secrets, "serviceaccount")
	project := func(stamp, token string) {
		d := filepath.Join(dir, "..2026_11_27_"+stamp)
		os.MkdirAll(d, 0o755)
		if err := os.WriteFile(filepath.Join(d, "token"), []byte(token), 0o644); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, "..data_tmp")
		os.Remove(tmp)
		if err := os.Symlink(filepath.Base(d), tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
		if os.Getuid() == 0 {
			filepath.Walk(secrets, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
		}
	}
	first, second := "eyJhbGciOiJSUzI1NiJ9.firstProjected.c2ln", "eyJhbGciOiJSUzI1NiJ9.secondRotated.c2ln"
	project("10_00", first)
	if err := os.Symlink("..data/token", filepath.Join(dir, "token")); err != nil {
		t.Fatal(err)
	}
	os.Chmod(filepath.Dir(secrets), 0o755)
	os.Chmod(secrets, 0o755)
	os.MkdirAll(filepath.Join(home, "work"), 0o755)
	if os.Getuid() == 0 {
		filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
		os.Lchown(secrets, 65534, 65534)
	}
	script := `cd "$HOME/work"
echo "before: $(cat ` + dir + `/token ` + dir + `/..data/token ` + dir + `/..2026_11_27_10_00/token 2>/dev/null | wc -c)"
touch ready
while [ ! -e go ]; do sleep 0.05; done
echo "after: $(cat ` + dir + `/token ` + dir + `/..data/token ` + dir + `/..2026_11_27_11_00/token 2>/dev/null | wc -c)"
`
	argv := []string{exe, "run", "--seal", "--", "/bin/sh", "-c", script}
	if landlock {
		noNS := filepath.Join(filepath.Dir(exe), "nouserns")
		copyFile(t, shimtest.Program(t, "nouserns", shimtest.NoUserNS), noNS)
		argv = append([]string{noNS}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + home, "AWS_WEB_IDENTITY_TOKEN_FILE=" + filepath.Join(dir, "token"),
		"AWS_ROLE_ARN=arn:aws:iam::123456789012:role/irsa"}
	cmd.Dir = filepath.Join(home, "work")
	cmd.SysProcAttr = asUnprivileged()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(filepath.Join(home, "work/ready")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the tree did not start:\n%s", out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	project("11_00", second) // the kubelet rotates the token
	os.WriteFile(filepath.Join(home, "work/go"), nil, 0o644)
	err := cmd.Wait()
	text := strings.NewReplacer(first, "<TOKEN>", second, "<ROTATED>").Replace(out.String())
	if err != nil {
		t.Fatalf("envsieve run: %v\n%s", err, text)
	}
	for _, want := range []string{"before: 0\n", "after: 0\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("%q missing:\n%s", want, text)
		}
	}
}
