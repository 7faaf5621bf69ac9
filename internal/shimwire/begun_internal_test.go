package shimwire

import "testing"

// TestBegunAt: "begun" carries the program's pid as a second field only
// when the caller can see it (pid > 0); else it is version 3's "g"/"o".
func TestBegunAt(t *testing.T) {
	for _, tc := range []struct {
		joined bool
		pid    int
		want   string
	}{
		{true, 0, "\x03Bg\x00"},
		{false, 0, "\x03Bo\x00"},
		{true, 4242, "\x03Bg\x004242\x00"},
		{false, -1, "\x03Bo\x00"},
	} {
		if got := string(begunAt(tc.joined, tc.pid)); got != tc.want || got[0] != Version {
			t.Errorf("begunAt(%v, %d) = %q, want %q", tc.joined, tc.pid, got, tc.want)
		}
		if tc.pid <= 0 && string(Begun(tc.joined)) != tc.want {
			t.Errorf("Begun(%v) = %q, want %q", tc.joined, Begun(tc.joined), tc.want)
		}
	}
}
