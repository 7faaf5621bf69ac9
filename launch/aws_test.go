package launch

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/login"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
)

// TestAWSReloader: new keys the user's tools write to ~/.aws/credentials
// reach the broker at its next request; a file it cannot understand, or
// without the profile, leaves it the keys it had.
func TestAWSReloader(t *testing.T) {
	p := filepath.Join(t.TempDir(), "credentials")
	id1, id2 := "ASIA"+strings.Repeat("ONE1", 4), "ASIA"+strings.Repeat("TWO2", 4)
	secret := strings.Repeat("s3cr3t/", 6)[:40]
	write := func(body string) {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		// A new mtime even within the file system's clock granularity.
		later := time.Now().Add(time.Duration(len(body)) * time.Second)
		os.Chtimes(p, later, later)
	}
	profile := func(id, tok string) string {
		return "[default]\naws_access_key_id = " + id + "\naws_secret_access_key = " + secret + "\naws_session_token = " + tok + "\n"
	}
	write(profile(id1, "token-one-"+strings.Repeat("a", 20)))
	reload := AWSReloader([]LoginFile{{Path: p, Format: "aws-credentials", Names: []string{"aws:default"}}})
	steps := []struct {
		name, file string
		want       login.AWSKey
		ok         bool
	}{
		{"first read", "", login.AWSKey{AccessKeyID: id1, SecretAccessKey: secret, SessionToken: "token-one-" + strings.Repeat("a", 20)}, true},
		{"new keys written", profile(id2, "token-two-"+strings.Repeat("b", 30)), login.AWSKey{AccessKeyID: id2, SecretAccessKey: secret, SessionToken: "token-two-" + strings.Repeat("b", 30)}, true},
		{"not understood", "[default]\naws_access_key_id = " + id1 + "\n", login.AWSKey{}, false},
		{"profile gone", "[other]\nregion = x\n", login.AWSKey{}, false},
	}
	for _, s := range steps {
		if s.file != "" {
			write(s.file)
		}
		k, ok := reload("aws:default")
		if ok != s.ok || k != s.want {
			t.Errorf("%s: got %v %v", s.name, k.AccessKeyID, ok)
		}
	}
	if _, ok := reload("aws:unknown"); ok {
		t.Error("a profile of no file answered")
	}
}

// fakeRun is a broker that runs nowhere.
type fakeRun struct{}

func (fakeRun) ChildEnv() map[string]string { return map[string]string{} }
func (fakeRun) Close() error                { return nil }

// TestAWSEnvKeys: AWS keys in the child's environment are fakes of the
// same shape, their real values only in the broker's request (with the
// endpoint_url hosts of the profile the environment selects); with no
// broker the launch fails closed (errNoBroker), or, under --no-broker,
// hands them over with a warning; an id without a secret is dropped.
func TestAWSEnvKeys(t *testing.T) {
	realID := "ASIA" + strings.Repeat("UNIT", 4)
	realSecret := strings.Repeat("unitReal/Secret+", 3)[:40]
	realToken := "IQoJunitToken" + strings.Repeat("x7", 30)
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".aws"), 0o700)
	os.WriteFile(filepath.Join(home, ".aws", "config"), []byte("[profile work]\nendpoint_url = https://aws.example.com:8443\n[default]\nregion = x\n"), 0o600)
	full := []string{"AWS_ACCESS_KEY_ID=" + realID, "AWS_SECRET_ACCESS_KEY=" + realSecret, "AWS_SESSION_TOKEN=" + realToken,
		"AWS_PROFILE=work", "PATH=/bin"}
	noBroker := errors.New("the broker cannot start")
	cases := []struct {
		name     string
		env      []string
		broker   string // "ok", "none" (the launcher cannot run one), "fails"
		noBroker bool
		wantErr  error
		wantEnv  string // "fake", "real", "none"
		warn     string
		// rule: a rule for aws may grant the keys, which only the
		// parent holds; the broker re-signs them, the tree has none.
		rule bool
	}{
		{name: "a rule may grant them", env: []string{"AWS_PROFILE=work", "PATH=/bin"}, rule: true, broker: "ok", wantEnv: "none"},
		{name: "a rule may grant them, no broker", env: []string{"PATH=/bin"}, rule: true, broker: "none", wantErr: errNoBroker},
		{name: "brokered", env: full, broker: "ok", wantEnv: "fake"},
		{name: "no broker", env: full, broker: "none", wantErr: errNoBroker},
		{name: "broker fails", env: full, broker: "fails", wantErr: noBroker},
		{name: "--no-broker", env: full, broker: "ok", noBroker: true, wantEnv: "real", warn: "AWS_SECRET_ACCESS_KEY"},
		{name: "id alone", env: []string{"AWS_ACCESS_KEY_ID=" + realID, "PATH=/bin"}, broker: "ok", wantEnv: "none", warn: "without the other"},
		{name: "none", env: []string{"PATH=/bin"}, broker: "ok", wantEnv: "none"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pol, err := policy.Default()
			parent := c.env
			if c.rule {
				pol, err = policy.Parse("p.yaml", []byte("version: 1\nrules:\n  - name: aws\n    match: {command: aws}\n    allow: [AWS_*]\n"))
				parent = full
			}
			if err != nil {
				t.Fatal(err)
			}
			var w warnings
			var req *BrokerRequest
			h := &Host{Home: home, Report: &w, SocketDir: t.TempDir()}
			switch c.broker {
			case "ok":
				h.Broker = func(r BrokerRequest, _ func(BrokerEvent)) (BrokerRun, error) { req = &r; return fakeRun{}, nil }
			case "fails":
				h.Broker = func(BrokerRequest, func(BrokerEvent)) (BrokerRun, error) { return nil, noBroker }
			}
			l := &Plan{host: h, opt: Options{Policy: pol, NoBroker: c.noBroker, Parent: parent}, ownKey: []byte("0123456789abcdef0123456789abcdef"),
				Result: &sieve.Result{Env: c.env}, Env: slices.Clone(c.env)}
			err = l.startBroker()
			defer l.stopBroker()
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("StartBroker: %v, want %v", err, c.wantErr)
			}
			if err != nil {
				if strings.Contains(err.Error(), realSecret) || strings.Contains(err.Error(), realID) {
					t.Error("the error holds a real value")
				}
				return
			}
			env := map[string]string{}
			for _, kv := range l.Env {
				k, v, _ := strings.Cut(kv, "=")
				env[k] = v
			}
			for _, kv := range l.Env {
				if strings.Contains(kv, realSecret) && c.wantEnv != "real" {
					t.Errorf("the child's environment holds the real secret")
				}
			}
			if c.rule {
				if req == nil || len(req.AWS) != 1 || req.AWS[0].Real.SecretAccessKey != realSecret || !slices.Equal(req.AWS[0].Hosts, []string{"aws.example.com:8443"}) {
					t.Fatalf("the broker's request does not re-sign the keys a rule may grant")
				}
				grant := l.brokerOverlay([]string{"AWS_ACCESS_KEY_ID=" + realID, "AWS_SECRET_ACCESS_KEY=" + realSecret, "PATH=/bin"})
				if !slices.Contains(grant, "AWS_SECRET_ACCESS_KEY="+req.AWS[0].Fake.SecretAccessKey) || slices.Contains(grant, "AWS_SECRET_ACCESS_KEY="+realSecret) {
					t.Error("a grant of the keys does not get the fakes")
				}
			}
			switch c.wantEnv {
			case "fake":
				id, sec, tok := env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"], env["AWS_SESSION_TOKEN"]
				if id == realID || sec == realSecret || tok == realToken || !strings.HasPrefix(id, "ASIA") || len(id) != len(realID) || len(sec) != 40 || tok == "" {
					t.Errorf("not fakes of the same shape: %q %d %d", id[:4], len(sec), len(tok))
				}
				if req == nil || len(req.AWS) != 1 {
					t.Fatalf("the broker's request has no AWS keys")
				}
				a := req.AWS[0]
				if a.Name != "aws:env" || a.Real != (login.AWSKey{AccessKeyID: realID, SecretAccessKey: realSecret, SessionToken: realToken}) ||
					a.Fake != (login.AWSKey{AccessKeyID: id, SecretAccessKey: sec, SessionToken: tok}) || !slices.Equal(a.Hosts, []string{"aws.example.com:8443"}) {
					t.Errorf("the broker's AWS keys: name %q hosts %v", a.Name, a.Hosts)
				}
				if _, ok := req.Secrets["AWS_SECRET_ACCESS_KEY"]; ok {
					t.Error("the secret is swapped as a plain value too")
				}
				if !slices.Contains(l.brokeredNames(), "AWS_SECRET_ACCESS_KEY") {
					t.Errorf("brokered names: %v", l.brokeredNames())
				}
			case "real":
				if env["AWS_SECRET_ACCESS_KEY"] != realSecret {
					t.Error("--no-broker: the real secret is not handed over")
				}
			case "none":
				if _, ok := env["AWS_ACCESS_KEY_ID"]; ok {
					t.Error("an AWS key variable is still in the child's environment")
				}
			}
			if (c.warn == "") != (len(w) == 0) || (c.warn != "" && !strings.Contains(strings.Join(w, "\n"), c.warn)) {
				t.Errorf("warnings = %q, want %q", w, c.warn)
			}
		})
	}
}

// TestAWSFetchers: a credential_process the broker runs outside the tree
// is an absolute path, or a bare name found in an absolute directory of
// the user's PATH; a relative path, or a name found only through a
// relative PATH entry (the working directory, which the tree writes), or
// at a place the tree writes, is refused, and so is the config then. It
// runs in HOME, which the tree cannot write. A profile the credentials file
// already fakes keeps that file's keys.
func TestAWSFetchers(t *testing.T) {
	home, outside := t.TempDir(), t.TempDir()
	bin := filepath.Join(home, "bin")
	os.MkdirAll(filepath.Join(home, ".aws"), 0o700)
	os.MkdirAll(bin, 0o700)
	os.WriteFile(filepath.Join(bin, "get-keys"), []byte("#!/bin/sh\n"), 0o700)
	env := []string{"PATH=" + bin + ":/usr/bin", "HOME=" + home}
	cases := []struct {
		name, process string
		env           []string
		argv0         string // "" for an error
	}{
		{"absolute", filepath.Join(bin, "get-keys") + " --a", env, filepath.Join(bin, "get-keys")},
		{"in PATH", "get-keys --a 'b c'", env, filepath.Join(bin, "get-keys")},
		{"relative", "./get-keys", env, ""},
		{"relative dir", "bin/get-keys", env, ""},
		{"relative PATH entry", "get-keys", []string{"PATH=.:bin"}, ""},
		{"not found", "nosuch-xyz", env, ""},
		{"where the tree writes", filepath.Join(home, "work/get"), env, ""},
		{"in PATH where the tree writes", "get-keys", []string{"PATH=" + filepath.Join(home, "work")}, ""},
		{"outside HOME, writable", filepath.Join(outside, "get") + " --a", env, ""},
		{"outside HOME, to be made", filepath.Join(outside, "new/dir/get"), env, ""},
	}
	os.MkdirAll(filepath.Join(home, "work"), 0o700)
	os.WriteFile(filepath.Join(home, "work", "get-keys"), []byte("#!/bin/sh\n"), 0o700)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			os.WriteFile(awsConfigPath(home, nil), []byte("[profile p]\ncredential_process = "+c.process+"\nregion = r\n"), 0o600)
			fake, fs, fetch, _, err := awsFetchers(home, c.env, []string{filepath.Join(home, "work")}, nil)
			if c.argv0 == "" {
				if err == nil {
					t.Fatalf("no error: %v", fetch["aws:p"])
				}
				return
			}
			if err != nil || len(fs) != 1 || fetch["aws:p"].Argv[0] != c.argv0 || fetch["aws:p"].Dir != home || !slices.Equal(fetch["aws:p"].Env, c.env) {
				t.Fatalf("%v %+v %v", err, fetch["aws:p"], fs)
			}
			if string(fake) != "[profile p]\nregion = r\n" {
				t.Errorf("fake %q", fake)
			}
		})
	}
	os.WriteFile(awsConfigPath(home, nil), []byte("[profile p]\ncredential_process = /x\n"), 0o600)
	if _, fs, _, _, err := awsFetchers(home, env, nil, map[string]bool{"aws:p": true}); err != nil || len(fs) != 0 {
		t.Errorf("a profile of the faked credentials file: %v %v", fs, err)
	}
}

// TestFakeAWSConfig: in a sealed launch, the profiles of ~/.aws/config
// that fetch keys get fake keys appended to the fake credentials file
// (or a file of their own when the real one is missing or cannot be
// faked), the config a fake without their fetching lines (bound at its
// path: a mask of its own; AWS_CONFIG_FILE), and the broker request their
// fetchers; a config not understood that names a fetcher is masked.
func TestFakeAWSConfig(t *testing.T) {
	id, secret := "AKIA"+strings.Repeat("FILE", 4), strings.Repeat("fileSecret", 4)
	for _, tc := range []struct {
		name, creds string
		profiles    []string // in the fake credentials file
		credSeen    string
	}{
		{"with credentials", "[default]\naws_access_key_id = " + id + "\naws_secret_access_key = " + secret + "\n", []string{"default", "p"}, "fake"},
		{"credentials masked", "[default]\ncredential_process = /x\n", []string{"p"}, "fake"},
		{"no credentials", "", []string{"p"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			os.MkdirAll(filepath.Join(home, ".aws"), 0o700)
			os.MkdirAll(filepath.Join(home, "bin"), 0o700)
			os.WriteFile(filepath.Join(home, "bin/get"), []byte("#!/bin/sh\n"), 0o700)
			if tc.creds != "" {
				os.WriteFile(filepath.Join(home, ".aws/credentials"), []byte(tc.creds), 0o600)
			}
			os.WriteFile(awsConfigPath(home, nil), []byte("[default]\nregion = r\n[profile p]\ncredential_process = "+home+"/bin/get\n"), 0o600)
			l := loginPlan(home)
			l.opt.Parent = []string{"PATH=/usr/bin", "HOME=" + home}
			lf, err := l.fakeLogins()
			if err != nil {
				t.Fatal(err)
			}
			defer l.removeLogins()
			cfg, creds := lf.fake[awsConfigPath(home, nil)], lf.fake[filepath.Join(home, ".aws/credentials")]
			if b, err := os.ReadFile(cfg); err != nil || string(b) != "[default]\nregion = r\n[profile p]\n" || lf.vars["AWS_CONFIG_FILE"] != cfg {
				t.Errorf("the fake config %q: %v", b, err)
			}
			b, err := os.ReadFile(creds)
			if err != nil || lf.vars["AWS_SHARED_CREDENTIALS_FILE"] != creds || strings.Contains(string(b), secret) || strings.Contains(string(b), "credential_process") {
				t.Fatalf("the fake credentials %q: %v", b, err)
			}
			for _, p := range []string{"default", "p"} {
				if strings.Contains(string(b), "["+p+"]") != slices.Contains(tc.profiles, p) {
					t.Errorf("[%s] in the fake credentials: %q", p, b)
				}
			}
			if !slices.Contains(lf.masks, awsConfigPath(home, nil)) || len(lf.aws) != 1 || lf.aws[0].Name != "aws:p" ||
				lf.aws[0].Fetch == nil || lf.aws[0].Fetch.Argv[0] != home+"/bin/get" || lf.aws[0].Fetch.Dir != home {
				t.Errorf("masks %v, fetched %+v", lf.masks, lf.aws)
			}
			for _, st := range lf.states {
				if st.Path == filepath.Join(home, ".aws/credentials") && st.Seen != tc.credSeen {
					t.Errorf("the credentials file is %s (%s)", st.Seen, st.Why)
				}
			}
		})
	}
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".aws"), 0o700)
	os.WriteFile(awsConfigPath(home, nil), []byte("[profile s]\nsso_session = nosuch\n"), 0o600)
	l := loginPlan(home)
	lf, err := l.fakeLogins()
	if err != nil {
		t.Fatal(err)
	}
	defer l.removeLogins()
	if !slices.Contains(lf.masks, awsConfigPath(home, nil)) || lf.fake[awsConfigPath(home, nil)] != "" {
		t.Errorf("a config not understood: masks %v, fake %q", lf.masks, lf.fake[awsConfigPath(home, nil)])
	}
	os.WriteFile(awsConfigPath(home, nil), []byte("[default]\nregion = r\n"), 0o600)
	l = loginPlan(home)
	if lf, _ := l.fakeLogins(); lf != nil && (len(lf.masks) != 0 || lf.fake[awsConfigPath(home, nil)] != "") {
		t.Errorf("a config without fetchers: masks %v", lf.masks)
	}
}

// TestFakeAWSWebIdentity: a web identity profile (role_arn with a
// web_identity_token_file) gets fake keys in a sealed launch, like an
// assume-role profile: the tree's config loses its role lines, the token
// file (a real credential, off the seal's list) is masked, and the broker
// gets the role and the token file's path, to call
// AssumeRoleWithWebIdentity itself.
func TestFakeAWSWebIdentity(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".aws"), 0o700)
	tok := filepath.Join(home, "k8s", "token")
	os.MkdirAll(filepath.Dir(tok), 0o700)
	os.WriteFile(tok, []byte("eyJhbGciOiJSUzI1NiJ9.e30.sig\n"), 0o600)
	os.WriteFile(awsConfigPath(home, nil), []byte("[profile w]\nregion = eu-west-1\nrole_arn = arn:aws:iam::1:role/irsa\n"+
		"web_identity_token_file = "+tok+"\nrole_session_name = me\n"), 0o600)
	l := loginPlan(home)
	l.opt.Parent = []string{"PATH=/usr/bin", "HOME=" + home}
	lf, err := l.fakeLogins()
	if err != nil {
		t.Fatal(err)
	}
	defer l.removeLogins()
	if lf == nil || !slices.Contains(lf.masks, tok) {
		t.Fatalf("the token file is not masked: %+v", lf)
	}
	b, err := os.ReadFile(lf.fake[awsConfigPath(home, nil)])
	if err != nil || string(b) != "[profile w]\nregion = eu-west-1\n" {
		t.Errorf("the fake config %q: %v", b, err)
	}
	if len(lf.aws) != 1 || lf.aws[0].Name != "aws:w" || lf.aws[0].Fetch == nil || lf.aws[0].Fetch.Role == nil ||
		lf.aws[0].Fetch.Role.TokenFile != tok || lf.aws[0].Fetch.Role.ARN != "arn:aws:iam::1:role/irsa" || lf.aws[0].Fetch.From() != "web-identity" {
		t.Errorf("fetched %+v", lf.aws)
	}
}

// TestAWSTokenMask: a token in a volume Kubernetes projects masks its
// directory (the kubelet swaps ..data to rotate it); any other token file
// masks itself, a "..data" that is no link included.
func TestAWSTokenMask(t *testing.T) {
	d := t.TempDir()
	k8s, plain, odd := filepath.Join(d, "k8s"), filepath.Join(d, "plain"), filepath.Join(d, "odd")
	for _, p := range []string{filepath.Join(k8s, "..2026_01_01"), plain, filepath.Join(odd, "..data")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Symlink("..2026_01_01", filepath.Join(k8s, "..data"))
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{filepath.Join(k8s, "token"), k8s},
		{filepath.Join(plain, "token"), filepath.Join(plain, "token")},
		{filepath.Join(odd, "token"), filepath.Join(odd, "token")},
		{filepath.Join(d, "missing", "token"), filepath.Join(d, "missing", "token")},
	} {
		if got := awsTokenMask(tc.in); got != tc.want {
			t.Errorf("awsTokenMask(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestFakeAWSWebIdentityEnv: the child's environment with
// AWS_WEB_IDENTITY_TOKEN_FILE and AWS_ROLE_ARN gets a login the broker
// fetches (AssumeRoleWithWebIdentity with the token file, at the STS
// endpoint the environment names, in its region) and fake static keys in
// place of the three variables; nothing with static keys in the
// environment (botocore reads them first), without the role, or with an
// STS endpoint that is not https.
func TestFakeAWSWebIdentityEnv(t *testing.T) {
	home := t.TempDir()
	tok := filepath.Join(home, "k8s", "token")
	os.MkdirAll(filepath.Dir(tok), 0o700)
	os.WriteFile(tok, []byte("eyJhbGciOiJSUzI1NiJ9.e30.sig\n"), 0o600)
	base := []string{"AWS_WEB_IDENTITY_TOKEN_FILE=" + tok, "AWS_ROLE_ARN=arn:aws:iam::1:role/irsa", "AWS_ROLE_SESSION_NAME=me",
		"AWS_REGION=eu-west-1", "AWS_ENDPOINT_URL_STS=https://sts.example.test:8443"}
	for _, tc := range []struct {
		name  string
		env   []string
		fetch bool
	}{
		{"irsa", base, true},
		{"static-keys-first", append(slices.Clone(base), "AWS_ACCESS_KEY_ID=AKIAEXAMPLE"), false},
		{"no-role", base[:1], false},
		{"http-endpoint", append(slices.Clone(base), "AWS_ENDPOINT_URL_STS=http://sts.example.test"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := loginPlan(home)
			l.opt.Parent = []string{"PATH=/usr/bin", "HOME=" + home}
			l.Env = tc.env
			lf, err := l.fakeLogins()
			if err != nil {
				t.Fatal(err)
			}
			defer l.removeLogins()
			if !tc.fetch {
				if lf != nil && (len(lf.aws) > 0 || lf.envSet != nil) {
					t.Errorf("faked: %+v %v", lf.aws, slices.Sorted(maps.Keys(lf.envSet)))
				}
				return
			}
			if lf == nil || len(lf.aws) != 1 {
				t.Fatalf("no login: %+v", lf)
			}
			a := lf.aws[0]
			if r := a.Fetch.Role; r == nil || r.TokenFile != tok || r.ARN != "arn:aws:iam::1:role/irsa" || r.SessionName != "me" ||
				r.Region != "eu-west-1" || a.Fetch.STS != "https://sts.example.test:8443" || a.Fetch.From() != "web-identity" ||
				!slices.Contains(a.Hosts, "sts.example.test:8443") {
				t.Errorf("fetched %+v %+v", a, a.Fetch.Role)
			}
			if k := lf.envSet["AWS_ACCESS_KEY_ID"]; k != a.Fake.AccessKeyID || !strings.HasPrefix(k, "ASIA") ||
				lf.envSet["AWS_SECRET_ACCESS_KEY"] != a.Fake.SecretAccessKey || lf.envSet["AWS_SESSION_TOKEN"] != a.Fake.SessionToken {
				t.Errorf("the tree's keys are not the login's fakes")
			}
			if !slices.Equal(lf.envDrop, awsWebIdentityVars) {
				t.Errorf("dropped %v", lf.envDrop)
			}
		})
	}
}
