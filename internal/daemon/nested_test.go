//go:build unix

package daemon

import (
	"context"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/secret"
)

// TestNestedDaemon: a daemon started inside an envsieve tree gives its
// commands secrets only from their session's snapshot; its store is not
// used (the CLI gives it none there; this proves the daemon does not need
// to be trusted to). The control, not nested, uses the store.
func TestNestedDaemon(t *testing.T) {
	src := "version: 1\nsecrets:\n  STORED: {from: store}\n"
	for _, tc := range []struct {
		name    string
		nested  string
		snap    []string
		present bool // the command sees STORED
	}{
		{name: "control", present: true},
		{name: "nested", nested: "a test"},
		{name: "nested, in the snapshot", nested: "a test", snap: []string{"STORED=handed"}, present: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServerConfig(t, src, Config{Store: secret.Env{"STORED=from-the-store"}, Nested: tc.nested})
			c := dial(t, s.path)
			sid := mustSession(t, c, mustInit(t, c, "", clientEnv("/c-bin", tc.snap...)), "", "")
			var out strings.Builder
			res, err := c.Exec(context.Background(), ExecParams{SessionID: sid, Secrets: []string{"STORED"},
				Argv: []string{"sh", "-c", `case "$STORED" in from-the-store) echo STORE;; handed) echo HANDED;; esac`}}, &out, nil)
			if !tc.present {
				if err == nil || !strings.Contains(err.Error(), "STORED") {
					t.Fatalf("nested: err = %v (output %q), want an error naming STORED", err, out.String())
				}
				return
			}
			if err != nil || res.ExitCode != 0 {
				t.Fatalf("exec: %v %+v", err, res)
			}
			want := "STORE"
			if tc.nested != "" {
				want = "HANDED"
			}
			if strings.TrimSpace(out.String()) != want {
				t.Errorf("the command saw %q, want %q", out.String(), want)
			}
			// A session's command is in an envsieve tree, and marked so.
			if got, _, _ := run(t, c, sid, "printenv", "ENVSIEVE_TREE"); strings.TrimSpace(got) != "1" {
				t.Errorf("a session's command has ENVSIEVE_TREE=%q, want 1", got)
			}
		})
	}
}
