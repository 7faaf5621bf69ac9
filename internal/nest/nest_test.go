package nest

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestDetect(t *testing.T) {
	// A process table: pid -> name and parent.
	type entry struct {
		comm string
		ppid int
	}
	table := func(m map[int]entry) Proc {
		return func(pid int) (string, int, bool) {
			e, ok := m[pid]
			return e.comm, e.ppid, ok
		}
	}
	chain := map[int]entry{
		1:   {"systemd", 0},
		10:  {"bash", 1},
		20:  {"envsieve", 10},
		30:  {"claude", 20},
		40:  {"sh", 30},
		50:  {"node", 10},
		60:  {"envsieve-daemon", 1},
		70:  {"bash", 60},
		80:  {"envsieve.test", 10},
		90:  {"envsieve-sh", 10},
		100: {"my envsieve) x", 10}, // a name with spaces and a parenthesis
		110: {"loop", 111},
		111: {"loop", 110},
		120: {"self", 120},
		130: {"envsieve-init", 0}, // pid 1 of an isolated launch, seen from inside
		140: {"bash", 130},
	}
	deep := map[int]entry{}
	for pid := 2; pid < 2+MaxDepth+10; pid++ {
		deep[pid] = entry{"sh", pid - 1}
	}
	deep[2] = entry{"envsieve", 1}
	for _, tc := range []struct {
		name   string
		marker string
		ppid   int
		proc   Proc
		want   string // a part of the reason; "" means not nested
	}{
		{name: "top level", ppid: 10, proc: table(chain)},
		{name: "marker", marker: "1", ppid: 10, proc: table(chain), want: "ENVSIEVE_TREE is set"},
		{name: "marker, any value", marker: "0", ppid: 10, proc: table(chain), want: "ENVSIEVE_TREE is set"},
		{name: "marker without /proc", marker: "1", want: "ENVSIEVE_TREE is set"},
		{name: "parent is the launcher", ppid: 20, proc: table(chain), want: "pid 20, envsieve"},
		{name: "grandchild of the launcher", ppid: 40, proc: table(chain), want: "pid 20, envsieve"},
		{name: "daemon session", ppid: 70, proc: table(chain), want: "pid 60, envsieve-daemon"},
		{name: "drop-in shell", ppid: 90, proc: table(chain), want: "envsieve-sh"},
		{name: "isolated, under envsieve-init", ppid: 140, proc: table(chain), want: "pid 130, envsieve-init"},
		{name: "a sibling tree", ppid: 50, proc: table(chain)},
		{name: "the test binary is not a launcher", ppid: 80, proc: table(chain)},
		{name: "name with a parenthesis", ppid: 100, proc: table(chain)},
		{name: "unreadable parent", ppid: 999, proc: table(chain)},
		{name: "a cycle ends", ppid: 110, proc: table(chain)},
		{name: "its own parent", ppid: 120, proc: table(chain)},
		{name: "no /proc", ppid: 40},
		{name: "beyond the bound", ppid: 2 + MaxDepth + 5, proc: table(deep)},
		{name: "within the bound", ppid: 2 + MaxDepth - 1, proc: table(deep), want: "pid 2, envsieve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := detect(tc.marker, tc.ppid, tc.proc)
			if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("detect = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		in   string
		comm string
		ppid int
		ok   bool
	}{
		{"42 (envsieve) S 7 42 42 0 -1", "envsieve", 7, true},
		{"42 (a (b) c) R 9 1", "a (b) c", 9, true},
		{"42 (x y) S 0", "x y", 0, true},
		{"42 envsieve S 7", "", 0, false},
		{"42 (envsieve) S", "", 0, false},
		{"42 (envsieve) S -3", "", 0, false},
		{"42 (envsieve) S seven", "", 0, false},
		{")(", "", 0, false},
		{"", "", 0, false},
	} {
		comm, ppid, ok := parseStat(tc.in)
		if comm != tc.comm || ppid != tc.ppid || ok != tc.ok {
			t.Errorf("parseStat(%q) = %q, %d, %v; want %q, %d, %v", tc.in, comm, ppid, ok, tc.comm, tc.ppid, tc.ok)
		}
	}
}

// TestReadProc reads this process's own entry, the real /proc format.
func TestReadProc(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("readProc reads /proc, which only Linux has")
	}
	comm, ppid, ok := readProc(os.Getpid())
	if !ok || ppid != os.Getppid() || comm == "" || !strings.HasPrefix("nest.test", comm) {
		t.Errorf("readProc(self) = %q, %d, %v; want nest.test, %d", comm, ppid, ok, os.Getppid())
	}
}
