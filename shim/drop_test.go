//go:build linux

package shim_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/internal/shimwire"
)

// TestDropListTooLong: the deny-only rules the shim applies in place
// (ENVSIEVE_SHIM_DROP) are applied with no launcher hop when the list fits
// the shim's buffer; a list too long for it leaves the rules unknown, so
// the shim asks the launcher about every program (fail closed), and with
// no launcher the program runs minus every key a rule's deny matches. The
// rule's key never reaches the program either way.
func TestDropListTooLong(t *testing.T) {
	lib := shimtest.Lib(t)
	prog := shimtest.Program(t, "execs", execC)
	// "*": fexecve's program is named by the file behind its descriptor
	// (dash, say), not "sh".
	short := "*\tOLD"
	var long strings.Builder
	long.WriteString(short)
	for long.Len() <= 4096 {
		long.WriteString("\nfiller-program-" + strings.Repeat("x", 40) + "\tFILLER_KEY")
	}
	for _, tc := range []struct {
		name     string
		drop     string
		launcher bool
		asks     int // start requests the launcher gets
	}{
		{"fits: applied in place", short, true, 0},
		{"too long: the launcher is asked", long.String(), true, len(vias)},
		{"too long, no launcher: the denies are applied", long.String(), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			sock := filepath.Join(t.TempDir(), "gone")
			if tc.launcher {
				sock = listen(t, rec).Path
			}
			env := append(baseEnv(lib), shimwire.EnvSock+"="+sock, shimwire.EnvExec+"=1", shimwire.EnvStart+"="+startPath(lib),
				shimwire.EnvRules+"=", shimwire.EnvDrop+"="+tc.drop, shimwire.EnvDeny+"=OLD\nFILLER_KEY", "OLD=denied-by-a-rule")
			got := run(t, env, nil, prog) + "\n"
			rec.mu.Lock()
			asks := len(rec.starts)
			rec.mu.Unlock()
			if asks != tc.asks {
				t.Errorf("the launcher was asked %d times, want %d", asks, tc.asks)
			}
			if strings.Count(got, "=7\n") != len(vias) {
				t.Errorf("a program did not run: %q", got)
			}
			// Asked, this test's launcher declines (it knows no rule), and
			// the caller runs the program with what it has; the real
			// launcher applies the rule's deny itself.
			if tc.asks == 0 && strings.Count(got, ":none\n") != len(vias) {
				t.Errorf("the denied key reached a program: %q", got)
			}
		})
	}
}
