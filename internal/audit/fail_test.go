package audit

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fullAfter is a writer that takes n writes, then fails with ENOSPC until
// it is freed.
type fullAfter struct {
	mu    sync.Mutex
	n     int
	freed bool
	buf   bytes.Buffer
}

func (f *fullAfter) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n <= 0 && !f.freed {
		return 0, syscall.ENOSPC
	}
	f.n--
	return f.buf.Write(p)
}

// TestWriteFailure: a write to the log that fails is never silent. By
// default (on_error: fail) the function given to OnFail is called once,
// with an error naming the file, and Err reports it; with WarnOnError the
// failure is said once on stderr and the exit event counts the events
// lost; with neither, it is said on stderr.
func TestWriteFailure(t *testing.T) {
	for _, tc := range []struct {
		name      string
		warn      bool
		onFail    bool
		wantSaid  int // lines on stderr
		wantFails int // calls of onFail
	}{
		{"fail", false, true, 0, 1},
		{"warn", true, true, 1, 0},
		{"no handler", false, false, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &fullAfter{n: 2}
			var stderr bytes.Buffer
			a := newLog(w, nil, "/var/log/envsieve/audit.jsonl", &stderr, "0123456789ab")
			if tc.warn {
				a.WarnOnError()
			}
			fails := make(chan error, 8)
			if tc.onFail {
				a.OnFail(func(err error) { fails <- err })
			}
			a.Exec("/bin/a")
			a.Exec("/bin/b")
			if a.Err() != nil || a.Lost() != 0 {
				t.Fatalf("before the disk is full: %v, %d lost", a.Err(), a.Lost())
			}
			for i := 0; i < 5; i++ {
				a.Grant(1, "/usr/bin/gh", "gh", "gh", []string{"GITHUB_TOKEN"}, nil)
			}
			err := a.Err()
			if err == nil || !strings.Contains(err.Error(), "/var/log/envsieve/audit.jsonl") || !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("Err = %v, want the file named and ENOSPC", err)
			}
			if a.Lost() != 5 {
				t.Errorf("lost %d, want 5", a.Lost())
			}
			got := 0
			for done := false; !done; {
				select {
				case ferr := <-fails:
					got++
					if ferr.Error() != err.Error() {
						t.Errorf("onFail got %v, want %v", ferr, err)
					}
				case <-time.After(100 * time.Millisecond):
					done = true
				}
			}
			if got != tc.wantFails {
				t.Errorf("onFail called %d times, want %d", got, tc.wantFails)
			}
			if n := strings.Count(stderr.String(), "\n"); n != tc.wantSaid || (n > 0 && !strings.Contains(stderr.String(), "/var/log/envsieve/audit.jsonl")) {
				t.Errorf("stderr: %q, want %d lines naming the file", stderr.String(), tc.wantSaid)
			}
			// Space again: the exit event carries the count, on a line of
			// its own after a torn one.
			w.mu.Lock()
			w.freed = true
			w.buf.WriteString(`{"msg":"torn`)
			w.mu.Unlock()
			a.guardTorn()
			a.Exit(0, nil)
			lines := strings.Split(strings.TrimSpace(w.buf.String()), "\n")
			var ev map[string]any
			if err := json.Unmarshal([]byte(lines[len(lines)-1]), &ev); err != nil {
				t.Fatal(err)
			}
			if ev["msg"] != "exit" || ev["audit_lost"] != float64(5) {
				t.Errorf("exit event %v, want audit_lost 5", ev)
			}
		})
	}
}

// TestOnFailLate: a write that failed before OnFail was given is
// reported the moment it is.
func TestOnFailLate(t *testing.T) {
	a := newLog(&fullAfter{}, nil, "/x/audit.jsonl", &bytes.Buffer{}, "0123456789ab")
	a.Exec("/bin/a")
	fails := make(chan error, 1)
	a.OnFail(func(err error) { fails <- err })
	select {
	case err := <-fails:
		if !strings.Contains(err.Error(), "/x/audit.jsonl") {
			t.Errorf("got %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("an earlier failure was not reported")
	}
}

// TestDevFull: a file that opens but cannot be written (/dev/full) fails
// at the first event, naming the file.
func TestDevFull(t *testing.T) {
	a, err := Open("/dev/full", "")
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	a.w.stderr = &bytes.Buffer{}
	a.Exec("/bin/true")
	if err := a.Err(); err == nil || !strings.Contains(err.Error(), "/dev/full") || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("Err = %v, want /dev/full named and ENOSPC", err)
	}
}

// guardTorn marks the last write as torn, as a write that ran out of
// space half-way leaves it.
func (a *Log) guardTorn() {
	a.w.mu.Lock()
	a.w.torn = true
	a.w.mu.Unlock()
}

// TestWarnTo: WarnTo says the failure once, on the writer it is given
// (a daemon command's client), not on the log's stderr: at the first
// failed write, or at once for one that failed before it was given.
func TestWarnTo(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before bool // a write failed before WarnTo
	}{
		{"fails after", false},
		{"failed before", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stderr, client bytes.Buffer
			a := newLog(&fullAfter{n: 1}, nil, "/x/audit.jsonl", &stderr, "0123456789ab")
			a.WarnOnError()
			a.Exec("/bin/a")
			if tc.before {
				a.Exec("/bin/b")
			}
			stderr.Reset()
			a.WarnTo(&client)
			for i := 0; i < 3; i++ {
				a.Exec("/bin/c")
			}
			if n := strings.Count(client.String(), "\n"); n != 1 || !strings.Contains(client.String(), "/x/audit.jsonl") || !strings.Contains(client.String(), "on_error: warn") {
				t.Errorf("client told %q, want one line naming the file", client.String())
			}
			if stderr.Len() != 0 {
				t.Errorf("the log's stderr got %q after WarnTo", stderr.String())
			}
		})
	}
}
