package shimwire_test

import (
	"bytes"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/shimwire"
)

func msg(typ byte, fields ...string) []byte {
	b := []byte{shimwire.Version, typ}
	for _, f := range fields {
		b = append(append(b, f...), 0)
	}
	return b
}

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want any // nil: an error
	}{
		{"getenv", msg('A', "12", "g", "HOME"), &shimwire.Access{PID: 12, Op: 'g', Name: "HOME"}},
		{"clearenv", msg('A', "12", "C", ""), &shimwire.Access{PID: 12, Op: 'C'}},
		{"start", msg('S', "7", "40"), &shimwire.StartHead{PID: 7, Len: 40}},
		{"files", msg('F', "012"), &shimwire.Files{Stdio: "012"}},
		{"files 1 2", msg('F', "12"), &shimwire.Files{Stdio: "12"}},
		{"files none", msg('F', ""), &shimwire.Files{}},
		{"kill", msg('K', "15"), &shimwire.Kill{Signal: 15}},
		{"notice", msg('N', "7", "/bin/x", "timeout"), &shimwire.Notice{PID: 7, Path: "/bin/x", Reason: "timeout"}},
		{"short", []byte{shimwire.Version, 'A'}, nil},
		{"version 2", append([]byte{2}, msg('A', "1", "g", "X")[1:]...), nil},
		{"version 2 start, stdio with the request", append([]byte{2}, msg('S', "7", "012", "40")[1:]...), nil},
		{"version 1", append([]byte{1}, msg('A', "1", "g", "X")[1:]...), nil},
		{"version 1 exec", append([]byte{1}, msg('X', "7", "/usr/bin/gh", "gh")[1:]...), nil},
		{"exec of version 1", msg('X', "7", "/usr/bin/gh", "gh"), nil},
		{"start with stdio (version 2's)", msg('S', "7", "012", "4"), nil},
		{"start empty", msg('S', "7", "0"), nil},
		{"start too large", msg('S', "7", strconv.Itoa(shimwire.MaxStart+1)), nil},
		{"start short", msg('S', "7"), nil},
		{"start length text", msg('S', "7", "x"), nil},
		{"files out of order", msg('F', "210"), nil},
		{"files twice", msg('F', "00"), nil},
		{"files 3", msg('F', "3"), nil},
		{"files with a pid", msg('F', "7", "012"), nil},
		{"files unterminated", msg('F', "012")[:5], nil},
		{"kill zero", msg('K', "0"), nil},
		{"kill big", msg('K', "65"), nil},
		{"kill text", msg('K', "TERM"), nil},
		{"continued alone", msg('C', "x"), nil},
		{"unterminated", msg('A', "1", "g", "X")[:7], nil},
		{"bad pid", msg('A', "-1", "g", "X"), nil},
		{"pid text", msg('A', "x", "g", "X"), nil},
		{"bad op", msg('A', "1", "q", "X"), nil},
		{"long op", msg('A', "1", "gg", "X"), nil},
		{"invalid name", msg('A', "1", "g", "A-B"), nil},
		{"clearenv with name", msg('A', "1", "C", "X"), nil},
		{"extra field", msg('A', "1", "g", "X", "Y"), nil},
		{"notice without reason", msg('N', "1", "/bin/x", ""), nil},
		{"unknown type", msg('Z', "1", "x"), nil},
		{"reply from a peer", msg('R', "1", "+A=B"), nil},
		{"too large", msg('N', "1", "/x", strings.Repeat("a", shimwire.MaxMsg)), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := shimwire.Parse(tt.in)
			checkParsed(t, got, err, tt.want, tt.want == nil)
		})
	}
}

// checkParsed fails t unless a parser gave want, or, when fails is set, an
// ErrMessage.
func checkParsed(t *testing.T, got any, err error, want any, fails bool) {
	t.Helper()
	if fails {
		if err == nil || !errors.Is(err, shimwire.ErrMessage) {
			t.Fatalf("got %+v, %v; want an ErrMessage", got, err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestParseStart(t *testing.T) {
	body := func(fields ...string) []byte {
		var b []byte
		for _, f := range fields {
			b = append(append(b, f...), 0)
		}
		return b
	}
	tests := []struct {
		name string
		in   []byte
		want *shimwire.Start // nil: an error
	}{
		{"argv and env", body("/usr/bin/gh", "2", "gh", "pr", "HOME=/h", "A=b=c"),
			&shimwire.Start{Path: "/usr/bin/gh", Argv: []string{"gh", "pr"}, Env: []string{"HOME=/h", "A=b=c"}}},
		{"no env", body("gh", "1", "gh"), &shimwire.Start{Path: "gh", Argv: []string{"gh"}, Env: []string{}}},
		{"empty arg", body("/x", "2", "x", ""), &shimwire.Start{Path: "/x", Argv: []string{"x", ""}, Env: []string{}}},
		{"odd names pass to the engine", body("/x", "1", "x", "BASH_FUNC_f%%=() { :; }"),
			&shimwire.Start{Path: "/x", Argv: []string{"x"}, Env: []string{"BASH_FUNC_f%%=() { :; }"}}},
		{"empty", nil, nil},
		{"unterminated", []byte("/x\x001\x00x"), nil},
		{"no path", body("", "1", "x"), nil},
		{"argc zero", body("/x", "0", "x"), nil},
		{"argc past the end", body("/x", "3", "x", "y"), nil},
		{"argc text", body("/x", "one", "x"), nil},
		{"env without a name", body("/x", "1", "x", "=v"), nil},
		{"env without =", body("/x", "1", "x", "NOEQ"), nil},
		{"too large", append(body("/x", "1", "x"), make([]byte, shimwire.MaxStart)...), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := shimwire.ParseStart(tt.in)
			checkParsed(t, got, err, tt.want, tt.want == nil)
		})
	}
}

// TestAnswers: what the launcher sends back to the tree has no room for a
// value: "granted, send the descriptors", "begun", "declined" with a
// bounded reason, the exit.
func TestAnswers(t *testing.T) {
	for _, tt := range []struct {
		got  []byte
		want []byte
	}{
		{shimwire.Granted(), msg('G', "")},
		{shimwire.Begun(true), msg('B', "g")},
		{shimwire.Begun(false), msg('B', "o")},
		{shimwire.Declined("no rule"), msg('D', "no rule")},
		{shimwire.Declined("a\x00b"), msg('D', "a b")},
		{shimwire.Ended(3, 0), msg('E', "x3")},
		{shimwire.Ended(256+4, 0), msg('E', "x4")},
		{shimwire.Ended(0, 15), msg('E', "s15")},
	} {
		if !bytes.Equal(tt.got, tt.want) {
			t.Errorf("got %q, want %q", tt.got, tt.want)
		}
	}
	if n := len(shimwire.Declined(strings.Repeat("r", 1000))); n > 300 {
		t.Errorf("a declined answer of %d bytes", n)
	}
}

// FuzzParse: whatever a process of the tree writes to the socket, Parse
// neither panics nor accepts what it cannot re-encode faithfully.
func FuzzParse(f *testing.F) {
	f.Add(msg('A', "12", "g", "HOME"))
	f.Add(msg('S', "7", "40"))
	f.Add(msg('F', "012"))
	f.Add(msg('F', ""))
	f.Add(msg('K', "15"))
	f.Add(msg('N', "7", "/bin/x", "timeout"))
	f.Add([]byte{1, 'X', 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := shimwire.Parse(b)
		if err != nil {
			return
		}
		var re []byte
		switch m := m.(type) {
		case *shimwire.Access:
			if m.PID < 0 || (m.Op != shimwire.OpClearenv && m.Name == "") {
				t.Fatalf("accepted %+v", m)
			}
			re = msg('A', itoa(m.PID), string(m.Op), m.Name)
		case *shimwire.StartHead:
			if m.Len < 1 || m.Len > shimwire.MaxStart {
				t.Fatalf("accepted %+v", m)
			}
			re = msg('S', itoa(m.PID), itoa(m.Len))
		case *shimwire.Files:
			if len(m.Stdio) > 3 || strings.Trim(m.Stdio, "012") != "" {
				t.Fatalf("accepted %+v", m)
			}
			re = msg('F', m.Stdio)
			if !bytes.Equal(re, b) {
				t.Fatalf("files re-encode as %q, not %q", re, b)
			}
		case *shimwire.Kill:
			if m.Signal < 1 || m.Signal > 64 {
				t.Fatalf("accepted %+v", m)
			}
			re = msg('K', itoa(m.Signal))
		case *shimwire.Notice:
			if m.Reason == "" {
				t.Fatalf("accepted %+v", m)
			}
			re = msg('N', itoa(m.PID), m.Path, m.Reason)
		default:
			t.Fatalf("Parse returned %T", m)
		}
		if len(re) > len(b) {
			t.Fatalf("re-encoding grew: %q -> %q", b, re)
		}
	})
}

// FuzzParseStart: whatever body a process of the tree sends, ParseStart
// neither panics nor returns a request without a path and argv, and what it
// returns re-encodes to the same bytes, so that nothing the launcher acts on
// differs from what was sent.
func FuzzParseStart(f *testing.F) {
	f.Add([]byte("/usr/bin/gh\x002\x00gh\x00pr\x00HOME=/h\x00"))
	f.Add([]byte("gh\x001\x00gh\x00"))
	f.Add([]byte("\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := shimwire.ParseStart(b)
		if err != nil {
			return
		}
		if st.Path == "" || len(st.Argv) == 0 {
			t.Fatalf("accepted %+v", st)
		}
		var re []byte
		for _, f := range append(append([]string{st.Path, itoa(len(st.Argv))}, st.Argv...), st.Env...) {
			re = append(append(re, f...), 0)
		}
		// argc may be written with leading zeros or a sign; the rest is
		// byte for byte.
		if len(re) > len(b) {
			t.Fatalf("re-encoding grew: %q -> %q", b, re)
		}
		for _, kv := range st.Env {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				t.Fatalf("an entry without a name: %q", kv)
			}
		}
	})
}

func itoa(n int) string { return strconv.Itoa(n) }
