//go:build linux

package launch

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestParseListening(t *testing.T) {
	text := "Num       RefCount Protocol Flags    Type St Inode Path\n" +
		"0000000000000000: 00000002 00000000 00010000 0005 01 1234 /tmp/envsieve-shim-1/s\n" +
		"0000000000000000: 00000003 00000000 00000000 0005 03 1235 /tmp/envsieve-shim-2/s\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 1236 /tmp/with space/s\n" +
		"0000000000000000: 00000002 00000000 00010000 0001 01 1237\n"
	got := parseListening([]byte(text))
	for _, p := range []string{"/tmp/envsieve-shim-1/s", "/tmp/with space/s"} {
		if !got[p] {
			t.Errorf("%s: not listening", p)
		}
	}
	if got["/tmp/envsieve-shim-2/s"] || len(got) != 2 {
		t.Errorf("got %v", got)
	}
}

// FuzzParseListening: a socket's path in /proc/net/unix is any
// process's choice; the parser does not panic.
func FuzzParseListening(f *testing.F) {
	f.Add([]byte("Num RefCount\n0: 2 0 00010000 0005 01 1 /a/s\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseListening(b)
	})
}

// TestSweepSocketDirs: the next launch removes the socket directories a
// killed launcher left behind (the shim's and the ssh agent filter's),
// old and with nothing listening, and keeps a live one, a new one and
// anything else.
func TestSweepSocketDirs(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Minute)
	mk := func(name string, aged bool) string {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		if aged {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
		return p
	}
	deadShim := mk("envsieve-shim-1", true)
	deadSSH := mk("envsieve-ssh-2", true)
	liveSSH := mk("envsieve-ssh-3", false)
	ln, err := net.Listen("unix", filepath.Join(liveSSH, "agent.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := os.Chtimes(liveSSH, old, old); err != nil {
		t.Fatal(err)
	}
	fresh := mk("envsieve-ssh-4", false)
	other := mk("something-else", true)
	sweepSocketDirs(dir)()
	for p, want := range map[string]bool{deadShim: false, deadSSH: false, liveSSH: true, fresh: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}
