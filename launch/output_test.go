package launch_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
)

// TestAuditMasksArgv: a withheld value typed into the command line (an
// agent pasting it) reaches the audit log as its token, never as itself.
func TestAuditMasksArgv(t *testing.T) {
	token := "ghp" + "_" + strings.Repeat("Wq7Z", 9)
	logPath := filepath.Join(t.TempDir(), "audit.jsonl")
	p, err := policy.Parse("p.yaml", []byte("version: 1\nredact: {enabled: true}\n"))
	if err != nil {
		t.Fatal(err)
	}
	argv := []string{"sh", "-c", ": curl -H 'Authorization: token " + token + "' https://example.invalid"}
	l, err := launch.Build(context.Background(), &launch.Host{AuditPath: logPath, Server: true}, launch.Options{
		Policy: p, Parent: []string{"PATH=/usr/bin:/bin", "GITHUB_TOKEN=" + token},
		Request: sieve.Request{Commands: [][]string{argv}},
	})
	if err != nil {
		t.Fatal(err)
	}
	run, err := l.Start(context.Background(), launch.Stdio{})
	if err != nil {
		t.Fatal(err)
	}
	if status, err := run.Wait(); status != 0 || err != nil {
		t.Fatalf("the launch: status %d, %v", status, err)
	}
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), token) {
		t.Error("the audit log holds the withheld token from argv")
	}
	if !strings.Contains(string(data), "Authorization: token [MASKED:") {
		t.Errorf("argv is not logged with the token masked: %d bytes", len(data))
	}
}
