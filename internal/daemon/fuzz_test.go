//go:build unix

package daemon

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"testing"
	"time"
)

// FuzzProtocol sends arbitrary bytes to a real daemon over its socket: every
// line must get a JSON reply (a result or an error) or the connection must
// close, and the daemon must go on serving. The seeds (here and in
// testdata/fuzz/FuzzProtocol) are valid, truncated, malformed and oversized
// messages. Commands are never run: session ids in the input cannot be
// guessed, so session/exec meets an unknown session at most.
func FuzzProtocol(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"env":["PATH=/bin"]}}`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"env":{"A":"1"},"client_id":"x"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"client_id":"x","profile":"agent"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"session/exec","params":{"session_id":"ses_1","argv":["true"]}}`,
		`{"jsonrpc":"2.0","id":4,"method":"session/env","params":{"session_id":"ses_1"}}`,
		`[{"jsonrpc":"2.0","id":5,"method":"session/close","params":{"session_id":"s"}},{"jsonrpc":"2.0","method":"x"}]`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"env":["PATH=/bin"`,
		`{"jsonrpc":"2.0","id":{"a":1},"method":"initialize"}`,
		`{"jsonrpc":"1.0","id":1,"method":"initialize","params":[]}`,
		"\x00\xff\xfe{}\n\n[]\n",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"env":["` + string(make([]byte, 5000)) + `"]}}`,
		`{"jsonrpc":"2.0","id":9,"method":"session/cancel","params":{"session_id":"s","exec_id":"x"}}`,
	} {
		f.Add([]byte(s))
	}
	ts := startServer(f, Limits{MaxMessageBytes: 4096})
	f.Fuzz(func(t *testing.T, data []byte) {
		nc, err := net.Dial("unix", ts.path)
		if err != nil {
			t.Fatalf("dial: %v (the daemon died?)", err)
		}
		defer nc.Close()
		// Never ask the daemon to shut down: that is not a crash.
		var probe struct {
			Method string `json:"method"`
		}
		if json.Unmarshal(data, &probe) == nil && probe.Method == MethodShutdown {
			return
		}
		for _, b := range data {
			if b == '\n' {
				return // one message per input keeps the check simple
			}
		}
		// Valid JSON may rightly get no reply (a notification, a response):
		// do not wait long for one.
		wait := 5 * time.Second
		if json.Valid(data) {
			wait = time.Second
		}
		_ = nc.SetDeadline(time.Now().Add(wait))
		if _, err := nc.Write(append(data, '\n')); err != nil {
			return
		}
		r := bufio.NewReader(nc)
		line, err := r.ReadBytes('\n')
		if err == nil && !json.Valid(line) {
			t.Fatalf("reply is not JSON: %q", line)
		}
		if err != nil && isTimeout(err) && !blank(data) && !json.Valid(data) {
			t.Fatalf("no reply and no close for input that is not JSON: %q", data)
		}
		// The daemon goes on.
		c, err := Dial(context.Background(), ts.path)
		if err != nil {
			t.Fatalf("dial after input: %v", err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, err := c.Initialize(ctx, "", nil); err != nil {
			t.Fatalf("initialize after input: %v", err)
		}
	})
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

func blank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return false
		}
	}
	return true
}
