package daemoncli

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestStandIn: verify's stand-in serves its hosts only through CONNECT on
// port 443, with a certificate of its CA for them, and reports per request
// whether the real password came, another, or none, never a value.
func TestStandIn(t *testing.T) {
	const host, real = "git.envsieve-verify.invalid", "Pw-real-3d9f0c1e7a2b"
	const awsHost, awsID, awsSecret = "sts.us-east-1.amazonaws.com", "AKIAVERIFYSTANDIN01", "Sk-real-0123456789abcdef0123456789abcdef"
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- runStandIn(inR, outW); outW.Close() }()
	if err := json.NewEncoder(inW).Encode([]StandInLogin{{Host: host, User: "verify", Password: real},
		{Host: awsHost, Password: awsSecret, AWSKeyID: awsID}}); err != nil {
		t.Fatal(err)
	}
	out := bufio.NewReader(outR)
	line, err := out.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var ready StandInReady
	if err := json.Unmarshal(line, &ready); err != nil || ready.Error != "" || ready.Proxy == "" {
		t.Fatalf("ready: %s (%v)", line, err)
	}
	// The stand-in writes a line a request: read them as they come (the
	// pipe holds none).
	restC := make(chan []byte, 1)
	go func() { b, _ := io.ReadAll(out); restC <- b }()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(ready.CA)) {
		t.Fatal("no CA")
	}
	pu, _ := url.Parse(ready.Proxy)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(pu), TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(target, user, pw string) (int, error) {
		req, _ := http.NewRequest("GET", target, nil)
		if user != "" {
			req.SetBasicAuth(user, pw)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for _, tc := range []struct {
		user, pw string
		code     int
	}{{"", "", 401}, {"verify", "Pw-fake-aaaaaaaaaaaa", 401}, {"verify", real, 200}, {"someone", real, 401}} {
		code, err := get("https://"+host+"/verify.git/info/refs", tc.user, tc.pw)
		if err != nil || code != tc.code {
			t.Errorf("%q: %d %v, want %d", tc.user, code, err, tc.code)
		}
	}
	// Another host, another port: refused at CONNECT.
	for _, target := range []string{"https://other.invalid/", "https://" + host + ":8443/"} {
		if _, err := get(target, "verify", real); err == nil {
			t.Errorf("%s: served", target)
		}
	}
	// SigV4, signed by curl: with the real keys, another secret, another
	// key id, none.
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, []byte(ready.CA), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, user := range []string{awsID + ":" + awsSecret, awsID + ":Sk-fake-0123456789abcdef0123456789abcdef", "AKIAOTHERKEY0000000:" + awsSecret, ""} {
		cfg := "url = \"https://" + awsHost + "/?Action=GetCallerIdentity&Version=2011-06-15\"\nproxy = \"" + ready.Proxy + "\"\ncacert = \"" + caFile + "\"\n"
		if user != "" {
			cfg += "aws-sigv4 = \"aws:amz:us-east-1:sts\"\nuser = \"" + user + "\"\n"
		}
		c := exec.Command("curl", "-s", "-o", "/dev/null", "-K", "-")
		c.Env = []string{"PATH=/usr/bin:/bin"}
		c.Stdin = strings.NewReader(cfg)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("curl: %v\n%s", err, out)
		}
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	rest := <-restC
	if strings.Contains(string(rest), real) || strings.Contains(string(rest), "Pw-fake") || strings.Contains(string(rest), "Sk-") {
		t.Errorf("the stand-in printed a password:\n%s", rest)
	}
	var logins []string
	for _, l := range strings.Split(strings.TrimSpace(string(rest)), "\n") {
		var s StandInSeen
		if err := json.Unmarshal([]byte(l), &s); err != nil || (s.Host != host && s.Host != awsHost) {
			t.Fatalf("seen: %q (%v)", l, err)
		}
		logins = append(logins, s.Login)
	}
	if got, want := strings.Join(logins, ","), "none,other,real,other,real,other,other,none"; got != want {
		t.Errorf("seen %s, want %s", got, want)
	}
}
