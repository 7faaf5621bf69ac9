package login

import (
	"strings"
	"testing"
)

func testFaker(name, real string) string { return "FAKE-" + strings.ToUpper(name[len(name)-4:]) }

func TestGitCredentials(t *testing.T) {
	real := "https://alice:s3cr%2Ft@git.example.com\n\nhttps://bob:tok@github.com:8443/org\n"
	out, creds, err := fakeGitCredentials([]byte(real), testFaker)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "s3cr") || strings.Contains(string(out), "tok@") {
		t.Fatalf("fake file holds a real value:\n%s", out)
	}
	if len(creds) != 2 || creds[0].Real != "s3cr/t" || creds[0].Hosts[0] != "git.example.com" || creds[1].Hosts[0] != "github.com:8443" {
		t.Fatalf("creds = %+v", creds)
	}
	if !strings.Contains(string(out), "alice:FAKE-.COM@git.example.com\n\n") {
		t.Fatalf("fake file:\n%s", out)
	}
	_, creds, err = fakeGitCredentials([]byte("https://u:pw123456@Git.Example.COM:443/x\n"), testFaker)
	if err != nil || creds[0].Name != "git-credentials:https://git.example.com" || creds[0].Hosts[0] != "git.example.com" {
		t.Fatalf("the host is not normalized: %v %+v", err, creds)
	}
	for _, bad := range []string{"not a url\n", "https://git.example.com\n", "https://alice@host\n", "https://u:pw@a_b c/\n"} {
		if _, _, err := fakeGitCredentials([]byte(bad), testFaker); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func init() {
	fuzzSeeds["git-credentials"] = []string{"https://alice:s3cr%2Ft@git.example.com\n\nhttps://bob:tok@github.com:8443/org\n", "https://u:p%40ss@H.example/x\r\n"}
}
