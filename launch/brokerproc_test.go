package launch

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

// stubBroker is a running broker that only names its variables.
type stubBroker struct{ closed bool }

func (b *stubBroker) ChildEnv() map[string]string {
	return map[string]string{"HTTPS_PROXY": "http://127.0.0.1:1"}
}
func (b *stubBroker) Close() error { b.closed = true; return nil }

// TestServeBroker: the broker's end of the pipe answers what the
// launcher's end (BrokerProcess) reads: one brokerReply, the child's
// variables or why not, then one BrokerEvent a line; and it stops the
// broker when the launcher closes its end. No real value is ever in a
// reply.
func TestServeBroker(t *testing.T) {
	testOnlyKeepDumpable = true
	t.Cleanup(func() { testOnlyKeepDumpable = false })
	real := "s3cr3t-" + strings.Repeat("Zz9", 8)
	for _, tc := range []struct {
		name     string
		in       string
		startErr error
		wantEnv  bool
		wantErr  string
	}{
		{name: "started", in: `{"secrets":{"TOKEN":"` + real + `"}}` + "\n", wantEnv: true},
		{name: "refused", in: `{"secrets":{"TOKEN":"` + real + `"}}` + "\n", startErr: errors.New("no port"), wantErr: "no port"},
		{name: "not a request", in: "{\n", wantErr: "broker: read the request"},
		{name: "nothing", in: "", wantErr: "broker: read the request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &stubBroker{}
			var got BrokerRequest
			start := func(req BrokerRequest, events func(BrokerEvent)) (BrokerRun, error) {
				got = req
				if tc.startErr != nil {
					return nil, tc.startErr
				}
				events(BrokerEvent{Kind: "swap", Secret: "TOKEN", Host: "api.example.com"})
				return b, nil
			}
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() { done <- ServeBroker(strings.NewReader(tc.in), outW, start); outW.Close() }()
			r := bufio.NewReader(outR)
			var lines []string
			for {
				l, err := r.ReadString('\n')
				if l != "" {
					lines = append(lines, l)
				}
				if err != nil {
					break
				}
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			out := strings.Join(lines, "")
			if strings.Contains(out, real) {
				t.Error("a real value is in what the broker answered")
			}
			if len(lines) == 0 {
				t.Fatal("no reply")
			}
			// The event may come before the reply: it is sent as it
			// happens. The reply is the line that decodes as one.
			var rep brokerReply
			var events int
			for _, l := range lines {
				var probe map[string]any
				if err := json.Unmarshal([]byte(l), &probe); err != nil {
					t.Fatalf("line %q is not JSON", l)
				}
				if _, ok := probe["kind"]; ok {
					events++
					continue
				}
				if err := json.Unmarshal([]byte(l), &rep); err != nil {
					t.Fatal(err)
				}
			}
			if tc.wantEnv && (rep.Env["HTTPS_PROXY"] == "" || rep.Error != "" || got.Secrets["TOKEN"] != real || events != 1 || !b.closed) {
				t.Errorf("reply %+v, %d events, closed %v, request reached the broker %v", rep, events, b.closed, got.Secrets["TOKEN"] == real)
			}
			if tc.wantErr != "" && !strings.Contains(rep.Error, tc.wantErr) {
				t.Errorf("reply error %q, want %q", rep.Error, tc.wantErr)
			}
		})
	}
}

// FuzzServeBroker: whatever the pipe brings, the broker's end answers
// exactly one reply line before any other, never panics, and starts the
// broker only for a request that decodes.
func FuzzServeBroker(f *testing.F) {
	f.Add([]byte(`{"secrets":{"A":"b"},"key":"AAAA","uid":1000}` + "\n"))
	f.Add([]byte("{\n"))
	f.Add([]byte(`{"bindings":[null],"env":{"X":"y"}}`))
	f.Add([]byte{})
	testOnlyKeepDumpable = true
	f.Cleanup(func() { testOnlyKeepDumpable = false })
	f.Fuzz(func(t *testing.T, in []byte) {
		var out strings.Builder
		started := false
		start := func(BrokerRequest, func(BrokerEvent)) (BrokerRun, error) {
			started = true
			return &stubBroker{}, nil
		}
		if err := ServeBroker(strings.NewReader(string(in)), &out, start); err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(out.String(), "\n")
		var rep brokerReply
		if err := json.Unmarshal([]byte(first), &rep); err != nil {
			t.Fatalf("the first line %q is not a reply", first)
		}
		if started != (rep.Error == "") {
			t.Fatalf("started %v, reply %+v", started, rep)
		}
	})
}
