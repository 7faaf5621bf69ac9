//go:build unix

package daemon

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestDaemonLoad runs many clients, each with several sessions, each running
// commands at once, and checks that every command sees exactly its own
// session's environment: nothing crosses between clients or sessions. Each
// session's snapshot differs (the client registers a new one before each
// session/new), so a session that used its client's current snapshot, or
// another's, would be caught. The child is /usr/bin/env, a tiny program.
//
// The full size is 200 clients x 5 sessions x 20 execs; with -short it is
// 40 x 5 x 5.
func TestDaemonLoad(t *testing.T) {
	clients, sessions, execs := 200, 5, 20
	if testing.Short() {
		clients, execs = 40, 5
	}
	ts := startServer(t, Limits{MaxExecs: clients * sessions, MaxExecsPerClient: sessions,
		MaxSessions: clients * sessions, MaxClients: clients})
	start := time.Now()
	var total atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, clients*sessions)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := loadClient(ts.path, i, sessions, execs, &total); err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	n := 0
	for err := range errs {
		if n++; n <= 10 {
			t.Error(err)
		}
	}
	want := int64(clients * sessions * execs)
	if total.Load() != want {
		t.Errorf("%d execs checked, want %d", total.Load(), want)
	}
	el := time.Since(start)
	t.Logf("%d clients x %d sessions x %d execs: %d execs in %s (%.0f/s)", clients, sessions, execs, want, el.Round(time.Millisecond), float64(want)/el.Seconds())
}

func loadClient(path string, i, sessions, execs int, total *atomic.Int64) error {
	ctx := context.Background()
	c, err := Dial(ctx, path)
	if err != nil {
		return err
	}
	defer c.Close()
	id := fmt.Sprintf("load_%03d", i)
	sids := make([]string, sessions)
	wants := make([]map[string]string, sessions)
	for j := range sessions {
		snap := []string{
			fmt.Sprintf("PATH=/c%d/s%d:/usr/bin:/bin", i, j),
			fmt.Sprintf("HOME=/home/c%d", i),
			fmt.Sprintf("MYAPP_CLIENT=c%d", i),
			fmt.Sprintf("MYAPP_SESSION=c%d-s%d", i, j),
			"OTHER=dropped",
		}
		if _, err := c.Initialize(ctx, id, snap); err != nil {
			return err
		}
		if sids[j], err = c.NewSession(ctx, id, "agent", ""); err != nil {
			return err
		}
		wants[j] = map[string]string{
			"PATH": fmt.Sprintf("/c%d/s%d:/usr/bin:/bin", i, j), "HOME": fmt.Sprintf("/home/c%d", i),
			"LANG": "C.UTF-8", "MYAPP_CLIENT": fmt.Sprintf("c%d", i), "MYAPP_SESSION": fmt.Sprintf("c%d-s%d", i, j),
			// The marker of an envsieve tree (package internal/nest).
			"ENVSIEVE_TREE": "1",
		}
	}
	// The client's entry now holds the last snapshot; earlier sessions
	// must still see their own.
	var wg sync.WaitGroup
	errs := make(chan error, sessions)
	for j := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := range execs {
				var out strings.Builder
				res, err := c.Exec(ctx, ExecParams{SessionID: sids[j], Argv: []string{"env"}}, &out, nil)
				if err != nil {
					errs <- fmt.Errorf("client %d session %d exec %d: %w", i, j, k, err)
					return
				}
				got := parseEnv(out.String())
				if res.ExitCode != 0 || !maps.Equal(got, wants[j]) {
					errs <- fmt.Errorf("client %d session %d exec %d: exit %d, env keys %v, want %v", i, j, k, res.ExitCode, keys(got), wants[j])
					return
				}
				total.Add(1)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

func keys(m map[string]string) []string {
	k := make([]string, 0, len(m))
	for key, v := range m {
		k = append(k, key+"="+v)
	}
	sort.Strings(k)
	return k
}

// TestValidID checks validID against the pattern it stands for.
func TestValidID(t *testing.T) {
	re := regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)
	ids := []string{"", "a", "A-z_0.9:x", strings.Repeat("x", 64), strings.Repeat("x", 65), "a b", "a/b", "é", "a\n", "id\x00", "-", "::", "ab$"}
	for c := 0; c < 256; c++ {
		ids = append(ids, string(rune(c)), "x"+string([]byte{byte(c)}))
	}
	for _, id := range ids {
		if got, want := validID(id), re.MatchString(id); got != want {
			t.Errorf("validID(%q) = %v, want %v", id, got, want)
		}
	}
}
