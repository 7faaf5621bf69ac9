package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/envsieve/envsieve/login"
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
