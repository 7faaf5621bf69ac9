//go:build linux

package shim_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/internal/shimwire"
)

const getenvArgsC = `#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
	for (int i = 1; i < argc; i++) getenv(argv[i]);
	printf("done\n");
	return 0;
}
`

// TestReportsOncePerLaunch: a report the launcher has already had from
// one process of the tree is not sent again by the next (the table of
// known reports beside the socket), for names of every length the shim's
// hash reads differently (under 8 bytes, whole words, a tail); a name the
// launch does not know yet still is. A table in a directory that is not
// the user's private one is ignored: every report is sent.
func TestReportsOncePerLaunch(t *testing.T) {
	lib := shimtest.Lib(t)
	prog := shimtest.Program(t, "getenvargs", getenvArgsC)
	names := []string{"A", "TZ", "HOME7XY", "EIGHT_08", "NINE_0009", "SIXTEEN_16_BYTES", "A_NAME_OF_TWENTY_ONE"}
	for _, tc := range []struct {
		name    string
		private bool
		want    int
	}{
		{"private directory", true, 1},
		{"directory others can read", false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			srv, err := shimwire.Listen(t.TempDir(), rec)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			if _, err := os.Stat(filepath.Join(filepath.Dir(srv.Path), shimwire.KnownName)); err != nil {
				t.Fatalf("no table of known reports: %v", err)
			}
			if !tc.private {
				if err := os.Chmod(filepath.Dir(srv.Path), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			env := append(baseEnv(lib), shimwire.EnvSock+"="+srv.Path)
			if got := run(t, env, nil, append([]string{prog}, names...)...); got != "done" {
				t.Fatalf("got %q", got)
			}
			// The launcher has the first process's reports before the
			// second process starts.
			deadline := time.Now().Add(10 * time.Second)
			for rec.seen(shimwire.OpGetenv, names[len(names)-1]) == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if got := run(t, env, nil, append([]string{prog, "ONLY_THE_SECOND"}, names...)...); got != "done" {
				t.Fatalf("got %q", got)
			}
			if err := srv.Close(); err != nil {
				t.Fatal(err)
			}
			for _, n := range names {
				if got := rec.seen(shimwire.OpGetenv, n); got != tc.want {
					t.Errorf("%s (%d bytes) reported %d times, want %d", n, len(n), got, tc.want)
				}
			}
			if got := rec.seen(shimwire.OpGetenv, "ONLY_THE_SECOND"); got != 1 {
				t.Errorf("a name the launch did not know was reported %d times, want 1", got)
			}
			if len(rec.refused) > 0 {
				t.Errorf("refused: %s", strings.Join(rec.refused, "; "))
			}
		})
	}
}
