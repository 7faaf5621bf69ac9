//go:build linux

package proc

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// TestChildrenOf: the kernel's per-thread lists (taskChildren) find the
// children this process started from its threads: one started from a
// thread that is still running (not the main one), and one from a thread
// that has ended since (its child went to another thread), as the scan of
// every process in /proc does; and a child reaped is no longer listed.
func TestChildrenOf(t *testing.T) {
	var kids []*exec.Cmd
	release := make(chan struct{})
	t.Cleanup(func() {
		close(release)
		for _, c := range kids {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
	})
	// start starts a child from a goroutine locked to its thread, and
	// returns that thread's id; the thread ends at once (end), or stays
	// until the test ends.
	start := func(end bool) int {
		type started struct {
			c   *exec.Cmd
			tid int
		}
		done := make(chan started)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			c := exec.Command("/bin/sleep", "30")
			c.Env = []string{}
			if err := c.Start(); err != nil {
				t.Error(err)
				c = nil
			}
			done <- started{c, unix.Gettid()}
			if !end {
				<-release
			}
		}()
		s := <-done
		if s.c == nil {
			t.FailNow()
		}
		kids = append(kids, s.c)
		return s.tid
	}
	self := os.Getpid()
	// A child of a live thread other than the main one: the main thread,
	// once locked, stays locked, so the next start runs elsewhere.
	for live := start(false); live == self; live = start(false) {
	}
	ended := start(true)
	for ended == self { // the main thread never ends
		ended = start(true)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, err := os.Stat("/proc/self/task/" + strconv.Itoa(ended)); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d, locked and left, did not end", ended)
		}
		time.Sleep(time.Millisecond)
	}
	var want []int
	for _, c := range kids {
		want = append(want, c.Process.Pid)
	}
	slices.Sort(want)
	sorted := func(v []int) []int { v = slices.Clone(v); slices.Sort(v); return v }
	if got := sorted(scanChildren(self)); !slices.Equal(got, want) {
		t.Fatalf("the scan of /proc: %v, want %v", got, want)
	}
	_, err := os.Stat("/proc/thread-self/children")
	got, ok := taskChildren(self)
	if ok != (err == nil) {
		t.Fatalf("taskChildren ok %v, but /proc/thread-self/children: %v", ok, err)
	}
	if ok && !slices.Equal(sorted(got), want) {
		t.Fatalf("taskChildren: %v, want %v", got, want)
	}
	if got := sorted(childrenOf(self)); !slices.Equal(got, want) {
		t.Fatalf("childrenOf: %v, want %v", got, want)
	}
	_ = kids[0].Process.Kill()
	_ = kids[0].Wait()
	left := slices.DeleteFunc(slices.Clone(want), func(p int) bool { return p == kids[0].Process.Pid })
	if got := sorted(childrenOf(self)); !slices.Equal(got, left) {
		t.Fatalf("childrenOf after one was reaped: %v, want %v", got, left)
	}
}
