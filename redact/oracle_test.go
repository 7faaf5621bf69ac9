package redact

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// Len is the length of what the buffer holds.
func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// recoverByOracle plays a child that wants a masked value it does not hold.
// Given its first characters (as many as the scan's window, which a plain
// writer may hold whatever they are), for each next one it prints a guess of the
// prefix so far and looks, at once, at whether the guess came out: a
// writer holds back exactly the bytes that could still start the value, so
// the guess that stays held is the right one. It returns what it recovered.
func recoverByOracle(t *testing.T, write func([]byte), out interface{ String() string }, first, alphabet string, n int) string {
	t.Helper()
	known := first
	for len(known) < n {
		found := false
		for _, c := range alphabet {
			guess := "\n" + known + string(c)
			write([]byte(guess))
			// How much of the guess is held back: all of the prefix
			// is, when it starts the value.
			o, k := out.String(), len(guess)
			for k > 0 && !strings.HasSuffix(o, guess[:k]) {
				k--
			}
			if held := len(guess) - k; held > len(known) {
				known += string(c)
				found = true
				break
			}
		}
		if !found {
			break
		}
	}
	return known
}

// TestNoPrefixOracle: what the redactor holds back, and for how long, does
// not depend on whether the bytes so far start a masked value.
func TestNoPrefixOracle(t *testing.T) {
	secret := "k3Y9xQ2mZ7pL4vN8"
	alphabet := "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	s := mustCompile(t, []Secret{{Name: "S", Value: []byte(secret)}}, Options{})
	var out, errOut syncBuffer
	m := NewStreams(&out, &errOut, s, 20*time.Millisecond)
	got := recoverByOracle(t, func(p []byte) { m.Stdout().Write(p) }, &out, secret[:4], alphabet, len(secret))
	if n := commonPrefix(got, secret); n > 4 {
		t.Fatalf("the held bytes told %d characters of the value", n)
	}
	// The control: a plain writer holds back exactly a live partial match,
	// and the same child recovers the whole value.
	var plain syncBuffer
	w := newWriter(&plain, s)
	if got := recoverByOracle(t, func(p []byte) { w.Write(p) }, &plain, secret[:4], alphabet, len(secret)); got != secret {
		t.Fatalf("control: the oracle should recover the value through a plain writer, got %d characters", commonPrefix(got, secret))
	}
	// Held bytes go out after the idle time, whatever they are.
	m.Stdout().Write([]byte("\nprompt> "))
	time.Sleep(100 * time.Millisecond)
	if !strings.HasSuffix(out.String(), "\nprompt> ") {
		t.Errorf("a prompt was not released after the idle time: %q", out.String()[max(0, out.Len()-20):])
	}
	m.Close()
}

func commonPrefix(a, b string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// recorder keeps what each stream got, and everything in arrival order.
type recorder struct {
	all    []byte
	stream [2][]byte
}

type recStream struct {
	r  *recorder
	id int
}

func (s recStream) Write(p []byte) (int, error) {
	s.r.all = append(s.r.all, p...)
	s.r.stream[s.id] = append(s.r.stream[s.id], p...)
	return len(p), nil
}

// TestStreamsSplitValue: a value written half to stdout and half to stderr
// is masked, and each stream gets only its own bytes.
func TestStreamsSplitValue(t *testing.T) {
	secret := "sPl1t-across-streams-V4lue"
	s := mustCompile(t, []Secret{{Name: "S", Value: []byte(secret)}}, Options{})
	var rec recorder
	m := NewStreams(recStream{&rec, 0}, recStream{&rec, 1}, s, 0)
	m.Stdout().Write([]byte("out: " + secret[:10]))
	m.Stderr().Write([]byte(secret[10:] + " :err\n"))
	m.Stdout().Write([]byte("more out\n"))
	m.Close()
	tok := Token(testKey, []byte(secret))
	if got, want := string(rec.stream[0]), "out: "+tok+"more out\n"; got != want {
		t.Errorf("stdout = %q, want %q", got, want)
	}
	if got, want := string(rec.stream[1]), " :err\n"; got != want {
		t.Errorf("stderr = %q, want %q", got, want)
	}
	// The control: two plain Writers, one per stream, let both halves out.
	var out, errOut bytes.Buffer
	wo, we := newWriter(&out, s), newWriter(&errOut, s)
	wo.Write([]byte("out: " + secret[:10]))
	we.Write([]byte(secret[10:] + " :err\n"))
	wo.Close()
	we.Close()
	if out.String()+errOut.String() != "out: "+secret+" :err\n" {
		t.Errorf("control: per-stream writers should miss the split value")
	}
}

// FuzzStreams: written in any chunks to either stream, the output in
// arrival order is exactly what one writer makes of the interleaved input
// (every value masked however it is split between the streams), and each
// stream's bytes, tokens aside, come from its own input in order.
func FuzzStreams(f *testing.F) {
	f.Add([]byte("a k3Y9xQ2mZ7pL4vN8 b"), []byte{3, 130, 7, 140, 2})
	f.Add([]byte("k3Y9xQ2mZ7pL4vN8k3Y9xQ2mZ7pL4vN8"), []byte{129, 1, 129, 1, 129, 1})
	f.Add([]byte("plain text with nothing to hide\n"), []byte{200, 5})
	f.Fuzz(func(t *testing.T, data, plan []byte) {
		secrets := []Secret{{Name: "A", Value: []byte("k3Y9xQ2mZ7pL4vN8")}, {Name: "B", Value: []byte("second-Secret-77")}}
		s := mustCompile(t, secrets, Options{})
		var rec recorder
		m := NewStreams(recStream{&rec, 0}, recStream{&rec, 1}, s, 0)
		var in [2][]byte
		rest := data
		for i := 0; len(rest) > 0; i++ {
			n, id := len(rest), 0
			if i < len(plan) {
				n, id = int(plan[i]&0x7f)+1, int(plan[i]>>7)
			}
			n = min(n, len(rest))
			in[id] = append(in[id], rest[:n]...)
			if id == 0 {
				m.Stdout().Write(rest[:n])
			} else {
				m.Stderr().Write(rest[:n])
			}
			rest = rest[n:]
		}
		m.Close()
		if want := refRedact(s, data); !bytes.Equal(rec.all, want) {
			t.Fatalf("merged output %q, want %q", rec.all, want)
		}
		for id := range 2 {
			plain := rec.stream[id]
			for _, sec := range secrets {
				plain = bytes.ReplaceAll(plain, []byte(Token(testKey, sec.Value)), nil)
			}
			if !subsequence(plain, in[id]) {
				t.Fatalf("stream %d got bytes that are not its own: %q from %q", id, plain, in[id])
			}
		}
	})
}

// subsequence reports whether a is a subsequence of b.
func subsequence(a, b []byte) bool {
	for _, c := range a {
		i := bytes.IndexByte(b, c)
		if i < 0 {
			return false
		}
		b = b[i+1:]
	}
	return true
}
