package cli

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
)

// TestExitCode: the statuses of docs/design.md section 8, and what is printed
// for each.
func TestExitCode(t *testing.T) {
	_, perr := policy.Parse("p.yaml", []byte("version: 1\nbogus: 1\n"))
	if perr == nil {
		t.Fatal("a policy with an unknown key parsed")
	}
	for _, tc := range []struct {
		name   string
		err    error
		code   int
		stderr []string // lines expected on stderr, in order
	}{
		{"success", nil, 0, nil},
		{"the child's status", fmt.Errorf("wrapped: %w", ExitStatus(3)), 3, nil},
		{"not found", &launch.NotFoundError{Name: "nope"}, 127, []string{"envsieve: nope: command not found", "envsieve: hint: the program is looked up in the child's PATH"}},
		{"not executable", fmt.Errorf("start x: %w", launch.ErrNotExecutable), 126, []string{"envsieve: start x:"}},
		{"usage", UsageError{Err: errors.New("--mode: want enforce or audit")}, 125, []string{"envsieve: --mode: want enforce or audit", "envsieve: hint: 'envsieve help'"}},
		{"policy", perr, 125, []string{"envsieve: p.yaml:2:1", "  ", "envsieve: hint: 'envsieve check' validates a policy"}},
		{"other", errors.New("something broke."), 125, []string{"envsieve: something broke\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if got := ExitCode(NewUI(&out, &errb, false), tc.err); got != tc.code {
				t.Errorf("ExitCode = %d, want %d", got, tc.code)
			}
			if out.Len() != 0 {
				t.Errorf("stdout: %q", out.String())
			}
			rest := errb.String()
			for _, want := range tc.stderr {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("stderr lacks %q (in order): %q", want, errb.String())
				}
				rest = rest[i+len(want):]
			}
			if tc.stderr == nil && errb.Len() != 0 {
				t.Errorf("stderr: %q", errb.String())
			}
		})
	}
}

// TestDebugf: debug lines only when asked for, on stderr.
func TestDebugf(t *testing.T) {
	for _, debug := range []bool{false, true} {
		var out, errb bytes.Buffer
		u := NewUI(&out, &errb, debug)
		u.Debugf("policy: %s", "x.yaml")
		if got := strings.Contains(errb.String(), "envsieve: debug: [") && strings.HasSuffix(errb.String(), "] policy: x.yaml\n"); got != debug {
			t.Errorf("debug %v: stderr %q", debug, errb.String())
		}
		if out.Len() != 0 {
			t.Errorf("stdout: %q", out.String())
		}
	}
}
