package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/broker"
	"github.com/envsieve/envsieve/internal/login"
	"github.com/envsieve/envsieve/launch"
)

// TestAWSConfigStaticReread: a profile's static keys in the user's
// config are re-read when the file changes during the session (a tool
// writing new temporary keys there), as the credentials file's are; a
// config that no longer gives them, or is gone, keeps the last keys.
func TestAWSConfigStaticReread(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config")
	keys := func(id, secret string) string {
		return "[default]\nregion = us-east-1\n[profile c]\naws_access_key_id = " + id + "\naws_secret_access_key = " + secret + "\n"
	}
	oldID, oldSecret := "AKIA"+strings.Repeat("OLD0", 4), strings.Repeat("oldSecret/", 4)
	newID, newSecret := "ASIA"+strings.Repeat("NEW0", 4), strings.Repeat("newSecret+", 4)
	if err := os.WriteFile(path, []byte(keys(oldID, oldSecret)), 0o600); err != nil {
		t.Fatal(err)
	}
	src := awsFetched("aws:c", &launch.AWSFetch{Static: &login.AWSKey{AccessKeyID: oldID, SecretAccessKey: oldSecret}, ConfigFile: path},
		&broker.Config{})
	ctx := context.Background()
	if c, err := src.Credentials(ctx); err != nil || c.AccessKeyID != oldID {
		t.Fatalf("%s %v", c.AccessKeyID, err)
	}
	for _, step := range []struct {
		name, body string
		want       string
	}{
		{"new keys", keys(newID, newSecret), newID},
		{"not understood", "[profile c\n", newID},
		{"no static keys", "[profile c]\nregion = us-east-1\n", newID},
		{"back", keys(oldID, oldSecret), oldID},
		{"gone", "", oldID},
	} {
		time.Sleep(10 * time.Millisecond) // a new modification time
		if step.name == "gone" {
			os.Remove(path)
		} else if err := os.WriteFile(path, []byte(step.body), 0o600); err != nil {
			t.Fatal(err)
		}
		if c, err := src.Credentials(ctx); err != nil || c.AccessKeyID != step.want {
			t.Errorf("%s: %s %v", step.name, c.AccessKeyID, err)
		}
	}
}
