package main

import (
	"bufio"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// pingLatencies runs `envsieve run ARGS -- envping`, asks it for n answers,
// and returns, for each, the time from the child's write to the line's
// arrival here.
func pingLatencies(t *testing.T, n int, secret bool, args ...string) []time.Duration {
	t.Helper()
	bindir := filepath.Dir(binary(t, "envping"))
	cmd := exec.Command(binary(t, "envsieve"), append(append([]string{"run"}, args...), "--", "envping")...)
	cmd.Env = []string{"PATH=" + bindir + ":/usr/bin:/bin", "HOME=" + t.TempDir(), "ENVSIEVE_AUDIT=" + suiteAudit}
	if secret {
		cmd.Env = append(cmd.Env, "GITHUB_TOKEN=ghp_"+strings.Repeat("Zq9X", 9))
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	var lat []time.Duration
	for i := 0; i < n; i++ {
		fmt.Fprintln(stdin, "ping")
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		arrived := time.Now().UnixNano()
		sent, err := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
		if err != nil {
			t.Fatalf("answer %d: %q", i, line)
		}
		lat = append(lat, time.Duration(arrived-sent))
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(lat)
	return lat
}

// TestRedactLatency: what the redacting launcher holds back goes out once
// the child has been quiet for the idle time (20 ms), whatever the bytes
// are: a hold that depended on them (the old zero-wait release of bytes
// that cannot start a secret) told a child which of its guesses starts one
// (redact.TestNoPrefixOracle). The resident, redacting launcher is compared
// with envsieve exec'ing in place (no launcher between child and reader).
func TestRedactLatency(t *testing.T) {
	const n = 200
	direct := pingLatencies(t, n, false)
	redacted := pingLatencies(t, n, true, "--secret", "GITHUB_TOKEN")
	med := func(d []time.Duration) time.Duration { return d[len(d)/2] }
	p90 := func(d []time.Duration) time.Duration { return d[len(d)*9/10] }
	t.Logf("write-to-read latency over %d lines: exec in place median %s p90 %s; resident redacting median %s p90 %s",
		n, med(direct), p90(direct), med(redacted), p90(redacted))
	// The idle release, plus a pipe hop; the bound is loose for a loaded
	// CI machine. An interactive line stays well under what a person notices.
	if med(redacted) > detectorIdle+30*time.Millisecond {
		t.Errorf("median latency through the redacting launcher is %s: output is held past the idle time", med(redacted))
	}
}
