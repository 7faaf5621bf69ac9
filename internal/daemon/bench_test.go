//go:build unix

package daemon

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// benchEnv is a realistic client snapshot: about 60 variables, a few of them
// credentials that the policy withholds (and redaction masks).
func benchEnv() []string {
	env := clientEnv("/bench-bin",
		"LANG=en_US.UTF-8", "TERM=xterm-256color", "SHELL=/bin/bash", "USER=dev", "LOGNAME=dev",
		"VIRTUAL_ENV=/work/.venv", "MYAPP_MODE=dev", "EDITOR=vim", "PAGER=less",
		"GITHUB_TOKEN="+"ghp"+"_"+"Zq9XZq9XZq9XZq9XZq9XZq9XZq9XZq9XZq9X",
		"AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY",
		"DATABASE_URL=postgres://app:hunter2hunter2@db:5432/app")
	for i := range 45 {
		env = append(env, "FILLER_"+string(rune('A'+i%26))+string(rune('A'+i/26))+"=some ordinary value")
	}
	return env
}

// BenchmarkDaemonExecTrue measures the round trip of session/exec running
// /bin/true over a real socket, one exec at a time: the client's request,
// the two-layer build, redaction set-up, fork and exec, wait, and the reply.
// It reports the median and the 99th percentile.
func BenchmarkDaemonExecTrue(b *testing.B) {
	ts := startServer(b, Limits{})
	c := dial(b, ts.path)
	id := mustInit(b, c, "", benchEnv())
	sid := mustSession(b, c, id, "agent", "")
	ctx := context.Background()
	p := ExecParams{SessionID: sid, Argv: []string{"/bin/true"}}
	for range 20 { // warm up
		if _, err := c.Exec(ctx, p, nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		res, err := c.Exec(ctx, p, nil, nil)
		lat = append(lat, time.Since(t0))
		if err != nil || res.ExitCode != 0 {
			b.Fatal(err, res)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
}

// BenchmarkDaemonExec50Clients measures throughput: 50 clients, each on its
// own connection and session, running /bin/true back to back. It reports
// execs per second.
func BenchmarkDaemonExec50Clients(b *testing.B) {
	const clients = 50
	ts := startServer(b, Limits{})
	ctx := context.Background()
	type cs struct {
		c   *Client
		sid string
	}
	var all []cs
	for range clients {
		c := dial(b, ts.path)
		id := mustInit(b, c, "", benchEnv())
		all = append(all, cs{c, mustSession(b, c, id, "agent", "")})
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	t0 := time.Now()
	for _, x := range all {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := ExecParams{SessionID: x.sid, Argv: []string{"/bin/true"}}
			for next.Add(1) <= int64(b.N) {
				if res, err := x.c.Exec(ctx, p, nil, nil); err != nil || res.ExitCode != 0 {
					b.Error(err, res)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(t0).Seconds(), "execs/s")
}
