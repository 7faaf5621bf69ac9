package launch

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/envsieve/envsieve/login"
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
// broker the launch fails closed (ErrNoBroker), or, under --no-broker,
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
		{name: "a rule may grant them, no broker", env: []string{"PATH=/bin"}, rule: true, broker: "none", wantErr: ErrNoBroker},
		{name: "brokered", env: full, broker: "ok", wantEnv: "fake"},
		{name: "no broker", env: full, broker: "none", wantErr: ErrNoBroker},
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
