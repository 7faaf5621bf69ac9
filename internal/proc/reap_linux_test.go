//go:build linux

package proc

import (
	"strconv"
	"strings"
	"testing"
)

func TestStatParent(t *testing.T) {
	for _, tc := range []struct {
		stat string
		want int
		ok   bool
	}{
		{"123 (sh) S 45 123 123 0 -1", 45, true},
		// comm is the process's choice: it may look like more fields.
		{"123 (a) S 9 (b) R 77 1) S 45 123", 45, true},
		{"123 (sp ace) S 46 1", 46, true},
		{"123 (sh) S", 0, false},
		{"no paren", 0, false},
		{"1 (x) S notanumber", 0, false},
	} {
		got, ok := statParent([]byte(tc.stat))
		if got != tc.want || ok != tc.ok {
			t.Errorf("%q: got %d %v, want %d %v", tc.stat, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzProcParse: the /proc/PID/stat line the reaper reads holds a name
// any process chooses (comm); the parser does not panic, and a parent
// found is a number that was in the line.
func FuzzProcParse(f *testing.F) {
	f.Add([]byte("123 (sh) S 45 123 123 0 -1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if pp, ok := statParent(b); ok && !strings.Contains(string(b), strconv.Itoa(pp)) {
			t.Errorf("%q: parent %d is not in the line", b, pp)
		}
	})
}
