//go:build linux

package shim_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/shimtest"
	"github.com/envsieve/envsieve/internal/shimwire"
)

// TestStartGivenUp: a launcher that decides only after its caller gave up
// waiting (a stopped or slow launcher; the caller ran the program itself,
// or failed closed) starts nothing. Given up before "granted": the caller's
// descriptors never come, and asking for them fails. Given up after it sent
// them: Gone says so before the start.
func TestStartGivenUp(t *testing.T) {
	for _, tt := range []struct {
		name string
		// replies: the caller sends its descriptors on "granted"
		replies bool
	}{
		{"before granted", false},
		{"after its descriptors", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			decide := make(chan struct{})
			var asked, started atomic.Bool
			var askErr error
			done := make(chan struct{})
			rec := &recorder{start: func(r *shimwire.StartRequest) (shimwire.Process, string) {
				defer close(done)
				if tt.replies {
					if askErr = r.AskStdio(); askErr != nil {
						return nil, "ask"
					}
					asked.Store(true)
				}
				<-decide // the launcher stopped, until its caller gave up
				if !tt.replies {
					if askErr = r.AskStdio(); askErr != nil {
						return nil, "the caller gave up waiting"
					}
					asked.Store(true)
				}
				if r.Gone() {
					return nil, "the caller gave up waiting"
				}
				started.Store(true)
				return startWith(r, nil)
			}}
			srv := listen(t, rec)
			c := dialServer(t, srv)
			startMsg(t, c, "12", "/bin/true", []string{"true"}, nil)
			if tt.replies {
				buf := make([]byte, 64)
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				n, err := c.Read(buf)
				if err != nil || string(buf[:n]) != string(shimwire.Granted()) {
					t.Fatalf("read %q, %v; want granted", buf[:n], err)
				}
				if err := sendFiles(c, "12"); err != nil {
					t.Fatal(err)
				}
				deadline := time.Now().Add(5 * time.Second)
				for !asked.Load() && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
			}
			c.Close() // the caller gives up
			close(decide)
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("the handler did not return")
			}
			if started.Load() {
				t.Fatal("a request its caller gave up on was started")
			}
			if tt.replies != asked.Load() {
				t.Errorf("the descriptors came: %v, want %v (ask: %v)", asked.Load(), tt.replies, askErr)
			}
		})
	}
}

// TestStartHeld: the launcher took the caller's descriptors ("granted",
// then the caller's reply) and then answers nothing, as a launcher stopped
// between its decision and the start. The caller, through envsieve-start
// and through the shim in a forked child, fails closed at the bound (exit
// 125, saying why): it does not run the program itself, which the
// launcher might yet start as well; and once the launcher runs again, the
// caller is gone and nothing starts. It waits out the shim's 10 s bound.
func TestStartHeld(t *testing.T) {
	t.Parallel()
	lib := shimtest.Lib(t)
	release := make(chan struct{})
	results := make(chan string, 2)
	rec := &recorder{start: func(r *shimwire.StartRequest) (shimwire.Process, string) {
		if r.Argv[0] != "touch" {
			return nil, "no rule"
		}
		if err := r.AskStdio(); err != nil {
			results <- "ask: " + err.Error()
			return nil, err.Error()
		}
		<-release // stopped, with the descriptors
		if r.Gone() {
			results <- "gone"
			return nil, "the caller gave up waiting"
		}
		results <- "started"
		return startWith(r, nil)
	}}
	srv := listen(t, rec)
	marker := filepath.Join(t.TempDir(), "ran")
	env := append(baseEnv(lib), shimwire.EnvSock+"="+srv.Path, shimwire.EnvExec+"=1", shimwire.EnvStart+"="+startPath(lib))
	// A forked child of sh (the shim's own request), and sh replaced by
	// the program (envsieve-start), at once.
	script := `(touch ` + marker + `.here; echo here=$?) & ` +
		`(sh -c 'exec touch ` + marker + `.start'; echo start=$?) & wait`
	cmd := exec.Command("sh", "-c", script)
	cmd.Env = env
	// Output to a file: the launcher holds the callers' descriptors until
	// it runs again (here, the end of the test), so a pipe would not end
	// with them (docs/shim.md).
	outFile, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer outFile.Close()
	cmd.Stdout, cmd.Stderr = outFile, outFile
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- cmd.Wait() }()
	select {
	case err = <-ended:
	case <-time.After(40 * time.Second):
		cmd.Process.Kill()
		<-ended
		t.Fatal("the callers did not end")
	}
	took := time.Since(began)
	out, _ := os.ReadFile(outFile.Name())
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{"here=125", "start=125", "did not start the program in time"} {
		if !strings.Contains(text, want) {
			t.Errorf("want %q in:\n%s", want, text)
		}
	}
	if took < 9*time.Second || took > 16*time.Second {
		t.Errorf("took %v, want the bound of 10 s", took)
	}
	for _, f := range []string{marker + ".here", marker + ".start"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("the program ran in the caller's place: %s", filepath.Base(f))
		}
	}
	// The launcher runs again: both callers are gone, nothing starts.
	close(release)
	for i := 0; i < 2; i++ {
		select {
		case got := <-results:
			if got != "gone" {
				t.Errorf("after the launcher ran again: %s, want gone", got)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the handler did not return")
		}
	}
}

// FuzzStartExchange: whatever a caller replies to "granted" (any packet,
// with none to three descriptors), the launcher gets the caller's
// descriptors only for an 'F' packet that names exactly the descriptors
// it carries, in order; anything else fails the ask, so nothing starts,
// and the connection closes without an answer. The server neither panics
// nor hangs.
func FuzzStartExchange(f *testing.F) {
	f.Add([]byte{shimwire.Version, 'F', '0', '1', '2', 0}, uint8(3))
	f.Add([]byte{shimwire.Version, 'F', 0}, uint8(0))
	f.Add([]byte{shimwire.Version, 'F', '1', '2', 0}, uint8(1))
	f.Add([]byte{2, 'F', '0', 0}, uint8(1))
	f.Add([]byte{shimwire.Version, 'K', '1', '5', 0}, uint8(0))
	f.Add([]byte{shimwire.Version, 'S', '1', 0, '9', 0}, uint8(2))
	f.Add([]byte{}, uint8(0))
	rec := &recorder{start: func(r *shimwire.StartRequest) (shimwire.Process, string) {
		if err := r.AskStdio(); err != nil {
			return nil, "refused"
		}
		var got []byte
		for i, f := range r.Stdio {
			if f != nil {
				got = append(got, byte('0'+i))
			}
		}
		return nil, "stdio " + string(got)
	}}
	srv, err := shimwire.Listen(f.TempDir(), rec)
	if err != nil {
		f.Fatal(err)
	}
	defer srv.Close()
	f.Fuzz(func(t *testing.T, reply []byte, nfds uint8) {
		if len(reply) > 64 {
			return
		}
		nfds %= 4
		c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: srv.Path, Net: "unixpacket"})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		startMsg(t, c, "", "/bin/true", []string{"true"}, nil)
		buf := make([]byte, 512)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		n, err := c.Read(buf)
		if err != nil || string(buf[:n]) != string(shimwire.Granted()) {
			t.Fatalf("read %q, %v; want granted", buf[:n], err)
		}
		var oob []byte
		if nfds > 0 {
			fds := []int{0, 1, 2}[:nfds]
			oob = syscall.UnixRights(fds...)
		}
		if _, _, err := c.WriteMsgUnix(reply, oob, nil); err != nil {
			t.Fatal(err)
		}
		// A broken exchange gets no answer: the caller finds the
		// connection closed and runs the program as without a launcher
		// (minus what the rules deny), not as declined. An empty packet
		// reads as the caller gone.
		var want []string
		if m, err := shimwire.Parse(reply); err == nil {
			if files, ok := m.(*shimwire.Files); ok && len(files.Stdio) == int(nfds) {
				want = []string{string(shimwire.Declined("stdio " + files.Stdio))}
			}
		}
		if got := answers(t, c); !slices.Equal(got, want) {
			t.Fatalf("reply %q with %d descriptors: answered %q, want %q", reply, nfds, got, want)
		}
	})
}
