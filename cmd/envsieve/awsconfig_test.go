//go:build linux

package main

import (
	"crypto/sha1"
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
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/internal/sigv4"
)

// TestAWSConfigProfiles: a user whose ~/.aws/config has a profile with a
// credential_process (a script that prints real temporary keys with an
// Expiration, and records where it runs) and an IAM Identity Center
// profile (a cached `aws sso login` token 5 minutes from its expiry,
// refreshed at a stand-in OIDC token endpoint and written back, then
// exchanged at a stand-in SSO portal) runs Debian's aws in a sealed tree as an unprivileged user:
// `aws sts get-caller-identity --profile P` works for both through the
// broker's re-signing against a stand-in that serves only the real keys
// and session tokens; the script ran only outside the tree (in the
// launcher's mount and pid namespaces, and able to write HOME, which the
// tree cannot), and again before its keys expired, as the portal was
// asked again; `aws configure export-credentials` and the tree's files
// show only fakes, and the tree's ~/.aws/config has no credential_process
// or sso_ line; an assume-role profile whose source is the process
// profile is assumed by the broker (once), and the tree holds only fakes
// of the role's keys; static keys in the config itself are fakes too; botocore from python3 (the one Debian's awscli carries)
// does the same with fakes. Sealed by namespaces (the files are fakes at their paths)
// and by Landlock (masked; AWS_CONFIG_FILE and AWS_SHARED_CREDENTIALS_FILE
// name the fakes).
func TestAWSConfigProfiles(t *testing.T) {
	t.Run("namespaces", func(t *testing.T) { testAWSConfigProfiles(t, false) })
	t.Run("landlock", func(t *testing.T) { testAWSConfigProfiles(t, true) })
}

func testAWSConfigProfiles(t *testing.T, landlock bool) {
	if _, err := os.Stat("/usr/bin/aws"); err != nil {
		t.Fatalf("Debian's awscli is needed: %v", err)
	}
	exe, home := unprivilegedInstall(t)
	name := loopbackName(t)
	procID, procSecret := "ASIA"+strings.Repeat("PR0C", 4), strings.Repeat("procReal/Secret+", 3)[:40]
	procToken := strings.Repeat("procRealSessionToken", 8)
	ssoID, ssoSecret := "ASIA"+strings.Repeat("SS0R", 4), strings.Repeat("ssoReal/Secret+x", 3)[:40]
	ssoToken := strings.Repeat("ssoRealSessionToken", 8)
	roleID, roleSecret := "ASIA"+strings.Repeat("R0LE", 4), strings.Repeat("roleReal/Secret+", 3)[:40]
	roleToken := strings.Repeat("roleRealSessionToken", 8)
	var assumed, webAssumed atomic.Int32
	webToken := "eyJhbGciOiJSUzI1NiJ9.e2eWebIdentity.c2lnbmF0dXJl"
	confID, confSecret := "AKIA"+strings.Repeat("C0NF", 4), strings.Repeat("confReal/Secret+", 3)[:40]
	// The cached token expires in 5 minutes: the broker refreshes it
	// first (botocore's 15-minute window), and the portal takes only the
	// new one.
	bearer := "aoaAAAAA" + strings.Repeat("ssoBearerToken", 4)
	newBearer := "aoaBBBBB" + strings.Repeat("ssoRefreshedTok", 4)
	refresh, newRefresh := "aorAAAAA"+strings.Repeat("ssoRefreshTok", 4), "aorBBBBB"+strings.Repeat("ssoRotatedTok", 4)
	var portalCalls atomic.Int32
	host, ca, seen := companyStandIn(t, name, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			var in map[string]string
			if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in["refreshToken"] != refresh || in["clientSecret"] != "e2e-client-secret" {
				http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, `{"accessToken":%q,"expiresIn":28800,"refreshToken":%q,"tokenType":"Bearer"}`, newBearer, newRefresh)
			return
		}
		if r.URL.Path == "/federation/credentials" {
			if r.Header.Get("X-Amz-Sso_bearer_token") != newBearer || r.URL.Query().Get("account_id") != "123456789012" ||
				r.URL.Query().Get("role_name") != "Dev" {
				http.Error(w, `{"message":"no"}`, http.StatusUnauthorized)
				return
			}
			portalCalls.Add(1)
			// Keys that expire in 2 minutes: the broker fetches again
			// for each request (it refreshes 5 minutes ahead).
			fmt.Fprintf(w, `{"roleCredentials":{"accessKeyId":%q,"secretAccessKey":%q,"sessionToken":%q,"expiration":%d}}`,
				ssoID, ssoSecret, ssoToken, time.Now().Add(2*time.Minute).UnixMilli())
			return
		}
		s, err := sigv4.Parse(r)
		body, _ := io.ReadAll(r.Body)
		sum := sha256.Sum256(body)
		if q, _ := url.ParseQuery(string(body)); q.Get("Action") == "AssumeRoleWithWebIdentity" {
			// Unsigned: the token is the credential. Answered with the
			// role's real keys: to the broker only.
			if q.Get("WebIdentityToken") != webToken || q.Get("RoleArn") != "arn:aws:iam::123456789012:role/web" {
				http.Error(w, "<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>", http.StatusForbidden)
				return
			}
			webAssumed.Add(1)
			fmt.Fprintf(w, `<AssumeRoleWithWebIdentityResponse><AssumeRoleWithWebIdentityResult><Credentials><AccessKeyId>%s</AccessKeyId>`+
				`<SecretAccessKey>%s</SecretAccessKey><SessionToken>%s</SessionToken><Expiration>%s</Expiration></Credentials>`+
				`</AssumeRoleWithWebIdentityResult></AssumeRoleWithWebIdentityResponse>`,
				roleID, roleSecret, roleToken, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
			return
		}
		ok := err == nil && s != nil
		if ok {
			switch s.AccessKeyID {
			case procID:
				ok = r.Header.Get("X-Amz-Security-Token") == procToken && s.Verify(r, procSecret, hex.EncodeToString(sum[:])) == nil
			case ssoID:
				ok = r.Header.Get("X-Amz-Security-Token") == ssoToken && s.Verify(r, ssoSecret, hex.EncodeToString(sum[:])) == nil
			case confID:
				ok = r.Header.Get("X-Amz-Security-Token") == "" && s.Verify(r, confSecret, hex.EncodeToString(sum[:])) == nil
			case roleID:
				ok = r.Header.Get("X-Amz-Security-Token") == roleToken && s.Verify(r, roleSecret, hex.EncodeToString(sum[:])) == nil
			default:
				ok = false
			}
		}
		if !ok {
			w.WriteHeader(http.StatusForbidden)
			io.WriteString(w, "<ErrorResponse><Error><Code>SignatureDoesNotMatch</Code><Message>not the real keys</Message></Error></ErrorResponse>")
			return
		}
		if q, _ := url.ParseQuery(string(body)); q.Get("Action") == "AssumeRole" {
			// Answered with the role's real keys: to the broker only.
			if q.Get("RoleArn") != "arn:aws:iam::123456789012:role/dev" || s.AccessKeyID != procID {
				http.Error(w, "<ErrorResponse><Error><Code>AccessDenied</Code></Error></ErrorResponse>", http.StatusForbidden)
				return
			}
			assumed.Add(1)
			fmt.Fprintf(w, `<AssumeRoleResponse><AssumeRoleResult><Credentials><AccessKeyId>%s</AccessKeyId><SecretAccessKey>%s</SecretAccessKey>`+
				`<SessionToken>%s</SessionToken><Expiration>%s</Expiration></Credentials></AssumeRoleResult></AssumeRoleResponse>`,
				roleID, roleSecret, roleToken, time.Now().Add(time.Hour).UTC().Format(time.RFC3339))
			return
		}
		who := map[string]string{procID: "proc", ssoID: "sso", roleID: "role", confID: "conf"}[s.AccessKeyID]
		io.WriteString(w, `<GetCallerIdentityResponse><GetCallerIdentityResult><Arn>arn:aws:iam::123456789012:user/`+who+`</Arn>`+
			`<UserId>AIDAE2E</UserId><Account>123456789012</Account></GetCallerIdentityResult></GetCallerIdentityResponse>`)
	})
	write := func(rel, body string, mode os.FileMode) {
		p := filepath.Join(home, rel)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	// The script records its uid, mount and pid namespaces in HOME (which
	// the tree cannot write), and fails when it cannot.
	write("bin/get-keys", `#!/bin/sh
echo "$(id -u) $(readlink /proc/self/ns/mnt) $(readlink /proc/self/ns/pid) $1" >>"$HOME/runs.log" || exit 1
exp=$(date -u -d '+2 min' +%Y-%m-%dT%H:%M:%SZ)
printf '{"Version":1,"AccessKeyId":"%s","SecretAccessKey":"%s","SessionToken":"%s","Expiration":"%s"}\n' `+
		procID+" "+procSecret+" "+procToken+` "$exp"
`, 0o755)
	write(".aws/config", "[default]\nregion = us-east-1\n"+
		"[profile p]\nregion = us-east-1\ncredential_process = "+filepath.Join(home, "bin/get-keys")+" --p\nendpoint_url = https://"+host+"\n"+
		"[profile s]\nsso_session = corp\nsso_account_id = 123456789012\nsso_role_name = Dev\nregion = us-east-1\nendpoint_url = https://"+host+"\n"+
		"[profile r]\nrole_arn = arn:aws:iam::123456789012:role/dev\nsource_profile = p\nregion = us-east-1\nendpoint_url = https://"+host+"\n"+
		"[profile w]\nrole_arn = arn:aws:iam::123456789012:role/web\nweb_identity_token_file = "+filepath.Join(home, "k8s/token")+"\nregion = us-east-1\nendpoint_url = https://"+host+"\n"+
		"[profile c]\naws_access_key_id = "+confID+"\naws_secret_access_key = "+confSecret+"\nregion = us-east-1\nendpoint_url = https://"+host+"\n"+
		"[sso-session corp]\nsso_start_url = https://d-1.awsapps.com/start\nsso_region = us-east-1\n", 0o600)
	sum := sha1.Sum([]byte("corp"))
	cache := ".aws/sso/cache/" + hex.EncodeToString(sum[:]) + ".json"
	write(cache, fmt.Sprintf(`{"startUrl":"https://d-1.awsapps.com/start","region":"us-east-1","accessToken":%q,"expiresAt":%q,`+
		`"clientId":"e2e-client","clientSecret":"e2e-client-secret","registrationExpiresAt":%q,"refreshToken":%q}`,
		bearer, time.Now().Add(5*time.Minute).UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339), refresh), 0o600)
	write("k8s/token", webToken+"\n", 0o600)
	write("company-ca.pem", string(ca), 0o600)
	write("work/.keep", "", 0o600)
	if os.Getuid() == 0 {
		filepath.Walk(home, func(p string, _ os.FileInfo, _ error) error { return os.Lchown(p, 65534, 65534) })
	}
	aws := `AWS_EC2_METADATA_DISABLED=true /usr/bin/aws`
	script := `cd "$HOME/work"
echo "config: $(grep -c 'credential_process\|sso_session\|sso_account\|sso_role\|role_arn\|aws_access_key_id\|web_identity' "${AWS_CONFIG_FILE:-$HOME/.aws/config}" 2>&1)"
echo "token: $(cat "$HOME/k8s/token" 2>/dev/null | wc -c)"
echo "region: $(` + aws + ` configure get region --profile p 2>&1)"
for p in p s r c w; do
  echo "export $p: $(` + aws + ` configure export-credentials --profile $p --format env 2>&1 | tr '\n' ' ')"
  for i in 1 2; do
    echo "sts $p: $(` + aws + ` sts get-caller-identity --profile $p --endpoint-url https://` + host + ` --query Arn --output text 2>&1)"
  done
done
AWS_EC2_METADATA_DISABLED=true /usr/bin/python3 -c '
import sys
from awscli.botocore.session import get_session
for p in ("p", "s"):
    s = get_session(); s.set_config_variable("profile", p)
    c = s.get_credentials().get_frozen_credentials()
    arn = s.create_client("sts", endpoint_url=sys.argv[1], region_name="us-east-1").get_caller_identity()["Arn"]
    print("botocore %s: %s %s %s %d" % (p, arn, c.access_key, c.secret_key, len(c.token or "")))
' https://` + host + ` 2>&1
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
	out := strings.NewReplacer(procID, "<REAL-ID>", procSecret, "<REAL-SECRET>", procToken, "<REAL-TOKEN>",
		ssoID, "<REAL-SSO-ID>", ssoSecret, "<REAL-SSO-SECRET>", ssoToken, "<REAL-SSO-TOKEN>", bearer, "<BEARER>",
		newBearer, "<NEW-BEARER>", refresh, "<REFRESH>", newRefresh, "<NEW-REFRESH>", "e2e-client-secret", "<CLIENT-SECRET>",
		confID, "<REAL-CONF-ID>", confSecret, "<REAL-CONF-SECRET>", roleID, "<REAL-ROLE-ID>", roleSecret, "<REAL-ROLE-SECRET>", roleToken, "<REAL-ROLE-TOKEN>", webToken, "<WEB-TOKEN>").Replace(string(b))
	if err != nil {
		t.Fatalf("envsieve run: %v\n%s", err, out)
	}
	if out != string(b) {
		t.Errorf("a real key is in what the tree printed:\n%s", out)
	}
	for _, want := range []string{"config: 0", "region: us-east-1",
		"export p: export AWS_ACCESS_KEY_ID=ASIA", "export s: export AWS_ACCESS_KEY_ID=ASIA",
		"sts p: arn:aws:iam::123456789012:user/proc\nsts p: arn:aws:iam::123456789012:user/proc",
		"sts s: arn:aws:iam::123456789012:user/sso\nsts s: arn:aws:iam::123456789012:user/sso",
		"export r: export AWS_ACCESS_KEY_ID=ASIA", "export c: export AWS_ACCESS_KEY_ID=AKIA",
		"sts c: arn:aws:iam::123456789012:user/conf",
		"sts r: arn:aws:iam::123456789012:user/role\nsts r: arn:aws:iam::123456789012:user/role",
		"export w: export AWS_ACCESS_KEY_ID=ASIA", "sts w: arn:aws:iam::123456789012:user/role\nsts w: arn:aws:iam::123456789012:user/role",
		"token: 0",
		"botocore p: arn:aws:iam::123456789012:user/proc ASIA", "botocore s: arn:aws:iam::123456789012:user/sso ASIA"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q missing:\n%s", want, out)
		}
	}
	if strings.Contains(out, "get-keys") {
		t.Errorf("the tree ran the credential_process:\n%s", out)
	}
	if !strings.Contains(out, "AWS_SESSION_TOKEN=") {
		t.Errorf("the fakes have no session token:\n%s", out)
	}
	// Where the script ran: only outside the tree, twice (the keys
	// expire within the broker's 5 minutes).
	runs, _ := os.ReadFile(filepath.Join(home, "runs.log"))
	mnt, _ := os.Readlink("/proc/self/ns/mnt")
	pid, _ := os.Readlink("/proc/self/ns/pid")
	lines := strings.Split(strings.TrimSpace(string(runs)), "\n")
	if len(runs) == 0 || len(lines) < 2 {
		t.Errorf("the credential_process ran %d times outside the tree, want 2 or more (a refresh):\n%s", len(lines), runs)
	}
	for _, l := range lines {
		if f := strings.Fields(l); len(f) != 4 || f[1] != mnt || f[2] != pid || f[3] != "--p" {
			t.Errorf("the credential_process ran in the tree (or not as configured): %q (the launcher's: %s %s)", l, mnt, pid)
		}
	}
	if n := assumed.Load(); n != 1 {
		t.Errorf("the role was assumed %d times, want once (by the broker, its keys valid an hour)", n)
	}
	if n := webAssumed.Load(); n != 1 {
		t.Errorf("the web identity role was assumed %d times, want once (by the broker, its keys valid an hour)", n)
	}
	if n := portalCalls.Load(); n < 2 {
		t.Errorf("the SSO portal was asked %d times, want 2 or more (a refresh)", n)
	}
	// The refreshed token was written back to the user's cache, outside
	// the tree.
	if data, _ := os.ReadFile(filepath.Join(home, cache)); !strings.Contains(string(data), newBearer) || !strings.Contains(string(data), newRefresh) {
		t.Errorf("the SSO cache does not hold the refreshed token (%d bytes)", len(data))
	}
	if len(seen()) == 0 {
		t.Error("the stand-in got no request")
	}
	for _, a := range seen() {
		if a != "" && !strings.Contains(a, "Credential="+procID+"/") && !strings.Contains(a, "Credential="+ssoID+"/") &&
			!strings.Contains(a, "Credential="+roleID+"/") && !strings.Contains(a, "Credential="+confID+"/") {
			t.Errorf("the stand-in got a request not signed with a real key id (%d bytes)", len(a))
		}
	}
}
