package redact

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

func tok(v string) string { return Token(testKey, []byte(v)) }

// TestOverlaps covers the choices for overlapping, nested and adjacent secrets, at the
// edges of the stream, each cut at every byte.
func TestOverlaps(t *testing.T) {
	const (
		long    = "secretvalue-1234"
		inner   = "value-1234"
		shortP  = "prefix-12345"
		longP   = "prefix-12345-6789"
		overA   = "abcdefgh-1234"
		overB   = "gh-1234-wxyz!"
		other   = "another-secret-99"
		chainC  = "1234-wxyz!-more?"
		partial = "secretval"
	)
	secrets := []Secret{
		{"LONG", []byte(long)}, {"INNER", []byte(inner)},
		{"SHORTP", []byte(shortP)}, {"LONGP", []byte(longP)},
		{"OVERA", []byte(overA)}, {"OVERB", []byte(overB)}, {"CHAINC", []byte(chainC)},
		{"OTHER", []byte(other)},
	}
	for _, tc := range []struct {
		name, in, want string
	}{
		{"substring/outer", "x " + long + " y", "x " + tok(long) + " y"},
		{"substring/inner-alone", "x " + inner + " y", "x " + tok(inner) + " y"},
		{"shared-prefix/longest", "[" + longP + "]", "[" + tok(longP) + "]"},
		{"shared-prefix/shorter", "[" + shortP + "]", "[" + tok(shortP) + "]"},
		{"shared-prefix/shorter-then-more", "[" + shortP + "-67]", "[" + tok(shortP) + "-67]"},
		{"shared-prefix/shorter-at-end", shortP + "-678", tok(shortP) + "-678"},
		{"overlap/union", "<abcdefgh-1234-wxyz!>", "<" + tok(overA) + ">"},
		{"overlap/chain", "<abcdefgh-1234-wxyz!-more?>", "<" + tok(overA) + ">"},
		{"adjacent/two", other + long, tok(other) + tok(long)},
		{"adjacent/same-twice", other + other, tok(other) + tok(other)},
		{"start-and-end", long + " middle " + other, tok(long) + " middle " + tok(other)},
		{"only-secret", other, tok(other)},
		{"partial-prefix-at-end", "tail: " + partial, "tail: " + partial},
		{"partial-prefix-only", partial, partial},
		{"prefix-then-mismatch", partial + "X " + other, partial + "X " + tok(other)},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustCompile(t, secrets, Options{})
			in := []byte(tc.in)
			if ref := refRedact(s, in); string(ref) != tc.want {
				t.Fatalf("reference disagrees with the table: %s", excerpt(s, ref, diffAt(ref, []byte(tc.want))))
			}
			for k := 0; k <= len(in); k++ {
				for j := k; j <= len(in); j++ {
					got := writeChunks(t, s, in, []int{k, j})
					checkOutput(t, s, fmt.Sprintf("cuts at %d,%d", k, j), got, []byte(tc.want))
				}
			}
		})
	}
}

// TestHoldBack checks that only the live partial match is held back, after every write.
func TestHoldBack(t *testing.T) {
	secret := "sk-live-0123456789abcdef"
	s := mustCompile(t, []Secret{{"K", []byte(secret)}}, Options{})
	for _, tc := range []struct {
		name   string
		writes []string
		held   []int // bytes held after each write
	}{
		{"no-match", []string{"hello world\n", "bye"}, []int{0, 0}},
		{"prefix-held", []string{"key: sk-li", "ve-0"}, []int{5, 9}},
		{"prefix-broken", []string{"key: sk-li", "x and more"}, []int{5, 0}},
		{"prefix-restarts", []string{"sk-sk-live-01"}, []int{10}},
		{"token-then-text", []string{"a " + secret, " b"}, []int{0, 0}},
		{"byte-by-byte", strings.Split("xsk-live", ""), []int{0, 1, 2, 3, 4, 5, 6, 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			w := newWriter(&out, s)
			var all []byte
			for i, in := range tc.writes {
				if n, err := w.Write([]byte(in)); n != len(in) || err != nil {
					t.Fatalf("write %d: got %d, %v", i, n, err)
				}
				all = append(all, in...)
				want := refRedact(s, all)
				want = want[:len(want)-tc.held[i]]
				if d := diffAt(out.Bytes(), want); d >= 0 {
					t.Fatalf("after write %d: output %s, want %d bytes with %d held", i, excerpt(s, out.Bytes(), d), len(want), tc.held[i])
				}
				if got := livePartial(s, all); got != tc.held[i] && !strings.Contains(string(all), secret) {
					t.Fatalf("after write %d: table says %d held, the longest partial match is %d", i, tc.held[i], got)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			checkOutput(t, s, "closed", out.Bytes(), refRedact(s, all))
		})
	}
}

// TestPassThrough checks that data without secrets comes out unchanged, whatever it is
// and however it is cut.
func TestPassThrough(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	random := make([]byte, 1<<16)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	longLine := bytes.Repeat([]byte("abcdefghijklmnopqrstuvwxyz0123456789 "), 1<<15) // 1.2 MB, no newline
	secrets := []Secret{{"A", []byte("ghp_abcdefghijklmnopqrstuvwxyz0123456789")}, {"B", []byte("hunter2-hunter2")}}
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"binary", random},
		{"nul", bytes.Repeat([]byte{0}, 1000)},
		{"crlf", []byte("line one\r\nline two\r\n\r\n\rbare cr\n")},
		{"invalid-utf8", []byte("\xff\xfe\xc3(\xe2\x82 ok \xf0\x28\x8c\x28")},
		{"long-line", longLine},
		{"near-miss", []byte("ghp_abcdefghijklmnopqrstuvwxyz012345678 hunter2-hunter hunter2-hunter3")},
		{"log", genLog(1<<16, 7)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustCompile(t, secrets, Options{})
			if j := findPattern(s, tc.in); j >= 0 {
				t.Fatalf("test input holds a pattern at %d", j)
			}
			for _, size := range []int{1, 3, 7, 64, 4096, len(tc.in)} {
				var cuts []int
				for c := size; c < len(tc.in); c += size {
					cuts = append(cuts, c)
				}
				if len(cuts) > 20000 {
					cuts = cuts[:20000]
				}
				got := writeChunks(t, s, tc.in, cuts)
				if d := diffAt(got, tc.in); d >= 0 {
					t.Fatalf("chunks of %d: output differs from input at %d", size, d)
				}
			}
		})
	}
}

// TestEmptySet checks that a Set without patterns passes everything through.
func TestEmptySet(t *testing.T) {
	s := mustCompile(t, []Secret{{"SHORT", []byte("short")}}, Options{})
	if s.Len() != 0 {
		t.Fatalf("Len = %d, want 0", s.Len())
	}
	if got := s.Skipped(); len(got) != 1 || got[0] != "SHORT" {
		t.Fatalf("Skipped = %q, want [SHORT]", got)
	}
	in := []byte("short short\x00\xff")
	if got := writeChunks(t, s, in, []int{3}); !bytes.Equal(got, in) {
		t.Fatalf("empty set changed the output")
	}
}

func TestCompile(t *testing.T) {
	for _, tc := range []struct {
		name     string
		key      []byte
		secrets  []Secret
		opt      Options
		wantErr  bool
		skipped  []string
		wantPats int // -1: do not check
	}{
		{name: "short-key", key: []byte("short"), wantErr: true},
		{name: "nil-key", key: nil, wantErr: true},
		{name: "min-len-too-small", key: testKey, opt: Options{MinLen: 3}, wantErr: true},
		{name: "no-secrets", key: testKey, wantPats: 0},
		{name: "default-min", key: testKey, secrets: []Secret{{"A", []byte("1234567")}, {"B", []byte("12345678")}, {"C", nil}},
			skipped: []string{"A", "C"}, wantPats: -1},
		{name: "custom-min", key: testKey, secrets: []Secret{{"A", []byte("abcd")}, {"B", []byte("abcdefghijkl")}},
			opt: Options{MinLen: 10}, skipped: []string{"A"}, wantPats: -1},
		{name: "duplicates", key: testKey, secrets: []Secret{{"A", plainSecret}, {"B", plainSecret}}, wantPats: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Compile(tc.key, tc.secrets, tc.opt)
			if tc.wantErr {
				if err == nil {
					t.Fatal("Compile succeeded, want an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			if got := s.Skipped(); strings.Join(got, ",") != strings.Join(tc.skipped, ",") {
				t.Fatalf("Skipped = %q, want %q", got, tc.skipped)
			}
			if tc.wantPats >= 0 && s.Len() != tc.wantPats {
				t.Fatalf("Len = %d, want %d", s.Len(), tc.wantPats)
			}
			minLen := tc.opt.MinLen
			if minLen == 0 {
				minLen = defaultMinLen
			}
			for i, p := range s.pats {
				if len(p) < minLen {
					t.Fatalf("pattern %d has %d bytes, below MinLen %d", i, len(p), minLen)
				}
			}
		})
	}
	if _, err := Compile(nil, nil, Options{}); !errors.Is(err, errKey) {
		t.Fatalf("Compile(nil key) = %v, want errKey", err)
	}
}

func TestToken(t *testing.T) {
	a := Token(testKey, []byte("value-one"))
	if len(a) != len("[MASKED:xxxxxxxx]") || !strings.HasPrefix(a, "[MASKED:") || !strings.HasSuffix(a, "]") {
		t.Fatalf("Token format: %q", a)
	}
	if fp := Fingerprint(testKey, []byte("value-one")); a != "[MASKED:"+fp+"]" || strings.ToLower(fp) != fp {
		t.Fatalf("Token %q does not hold the lower-case Fingerprint %q", a, fp)
	}
	if b := Token(testKey, []byte("value-two")); a == b {
		t.Fatalf("two values, one token")
	}
	if b := Token([]byte("another-key-another-key-32-bytes"), []byte("value-one")); a == b {
		t.Fatalf("two keys, one token")
	}
	// Fixed vector: HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog")
	// = f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8.
	if fp := Fingerprint([]byte("key"), []byte("The quick brown fox jumps over the lazy dog")); fp != "f7bc83f4" {
		t.Fatalf("Fingerprint vector = %s", fp)
	}
	// The audit log's fingerprint: 64 bits, the same HMAC.
	if fp := AuditFingerprint([]byte("key"), []byte("The quick brown fox jumps over the lazy dog")); fp != "f7bc83f430538424" {
		t.Fatalf("AuditFingerprint vector = %s", fp)
	}
}

// failWriter accepts limit bytes, then fails.
type failWriter struct {
	buf   bytes.Buffer
	limit int
	short bool // fail with a short count and no error
}

var errDst = errors.New("destination broke")

func (f *failWriter) Write(p []byte) (int, error) {
	room := f.limit - f.buf.Len()
	if len(p) <= room {
		return f.buf.Write(p)
	}
	f.buf.Write(p[:room])
	if f.short {
		return room, nil
	}
	return room, errDst
}

// TestWriterContract checks io.Writer's rules: len(p) on success, the destination's
// error returned with n < len(p), and the error kept.
func TestWriterContract(t *testing.T) {
	secret := []byte("sk-contract-secret-0001")
	s := mustCompile(t, []Secret{{"K", secret}}, Options{})
	empty := mustCompile(t, nil, Options{})

	t.Run("returns-len", func(t *testing.T) {
		w := newWriter(io.Discard, s)
		for _, in := range []string{"", "a", "sk-con", "tract-secret-0001 and text", strings.Repeat("x", 100000)} {
			if n, err := w.Write([]byte(in)); n != len(in) || err != nil {
				t.Fatalf("Write(%d bytes) = %d, %v", len(in), n, err)
			}
		}
	})
	for _, tc := range []struct {
		name  string
		set   *Set
		limit int
		short bool
		in    string
		want  error
	}{
		{"error-direct", s, 1000, false, strings.Repeat("plain text ", 500), errDst},
		{"error-buffered", s, 5, false, "0123456789", errDst},
		{"error-token", s, 3, false, "ab sk-contract-secret-0001 cd", errDst},
		{"short-write", s, 1000, true, strings.Repeat("plain text ", 500), io.ErrShortWrite},
		{"error-pass-through", empty, 10, false, "0123456789abc", errDst},
		{"short-pass-through", empty, 10, true, "0123456789abc", io.ErrShortWrite},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := &failWriter{limit: tc.limit, short: tc.short}
			w := newWriter(dst, tc.set)
			n, err := w.Write([]byte(tc.in))
			if !errors.Is(err, tc.want) {
				t.Fatalf("Write error = %v, want %v", err, tc.want)
			}
			if n >= len(tc.in) || n < 0 {
				t.Fatalf("Write = %d with an error, want 0 <= n < %d", n, len(tc.in))
			}
			if n > dst.buf.Len() {
				t.Fatalf("Write = %d, but the destination took only %d bytes", n, dst.buf.Len())
			}
			if _, err := w.Write([]byte("more")); !errors.Is(err, tc.want) {
				t.Fatalf("second Write error = %v, want the first one", err)
			}
			if tc.set.Len() > 0 {
				if err := w.Flush(); !errors.Is(err, tc.want) {
					t.Fatalf("Flush error = %v, want the first one", err)
				}
			}
			if bytes.Contains(dst.buf.Bytes(), secret) {
				t.Fatalf("the secret reached the destination")
			}
		})
	}
	t.Run("closed", func(t *testing.T) {
		w := newWriter(io.Discard, s)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatalf("second Close = %v", err)
		}
		if _, err := w.Write([]byte("x")); !errors.Is(err, errClosed) {
			t.Fatalf("Write after Close = %v, want errClosed", err)
		}
	})
	t.Run("flush-mid-stream", func(t *testing.T) {
		var out bytes.Buffer
		w := newWriter(&out, s)
		w.Write([]byte("go sk-contract"))
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if out.String() != "go sk-contract" {
			t.Fatalf("Flush wrote %d bytes, want the 14 written", out.Len())
		}
		w.Write([]byte(" then " + string(secret)))
		w.Close()
		if want := "go sk-contract then " + Token(testKey, secret); out.String() != want {
			t.Fatalf("after Flush: %s", excerpt(s, out.Bytes(), diffAt(out.Bytes(), []byte(want))))
		}
	})
	t.Run("nil", func(t *testing.T) {
		for _, f := range []func(){func() { newWriter(nil, s) }, func() { newWriter(io.Discard, nil) }} {
			func() {
				defer func() {
					if recover() == nil {
						t.Fatal("newWriter with nil did not panic")
					}
				}()
				f()
			}()
		}
	})
}

// TestNoAllocs checks that Write does not allocate once the buffers have grown.
func TestNoAllocs(t *testing.T) {
	s := mustCompile(t, benchSecrets(100), Options{})
	data := genLog(1<<16, 1)
	data = append(data, benchSecrets(1)[0].Value...)
	w := newWriter(io.Discard, s)
	for _, size := range []int{1, 16, 4096} {
		w.Write(data) // grow
		allocs := testing.AllocsPerRun(5, func() {
			for i := 0; i < len(data); i += size {
				w.Write(data[i:min(i+size, len(data))])
			}
		})
		if allocs != 0 {
			t.Errorf("chunks of %d: %.1f allocations per pass", size, allocs)
		}
	}
}

// TestConcurrent runs many Writers on one Set at once (meaningful under -race).
func TestConcurrent(t *testing.T) {
	secrets := benchSecrets(20)
	s := mustCompile(t, secrets, Options{})
	in := genLog(1<<15, 3)
	for i, sec := range secrets {
		at := (i * 1543) % len(in)
		in = append(in[:at], append(append([]byte(nil), sec.Value...), in[at:]...)...)
	}
	want := refRedact(s, in)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			w := newWriter(&out, s)
			for i := 0; i < len(in); i += g*37 + 1 {
				w.Write(in[i:min(i+g*37+1, len(in))])
			}
			w.Close()
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("writer %d: output differs at %d", g, diffAt(out.Bytes(), want))
			}
		}()
	}
	wg.Wait()
}

// TestNoLeakInFormatting checks that fmt and slog never print a value or a pattern.
func TestNoLeakInFormatting(t *testing.T) {
	sec := Secret{Name: "K", Value: []byte("sk-format-secret-42")}
	s := mustCompile(t, []Secret{sec}, Options{})
	w := newWriter(io.Discard, s)
	w.Write([]byte("x sk-format-sec"))
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("m", "secret", sec)
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("m", "secret", sec)
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		for _, v := range []any{sec, &sec, s, w} {
			out := fmt.Sprintf(verb, v)
			if strings.Contains(out, "sk-format") || strings.Contains(out, "736b2d") || strings.Contains(out, "format-sec") {
				t.Errorf("%s of %T shows the secret", verb, v)
			}
		}
	}
	if strings.Contains(logged.String(), "sk-format") || strings.Contains(logged.String(), "c2stZm9y") {
		t.Errorf("slog shows the secret")
	}
}

// TestAgainstReference runs 100 secrets over build output with a pattern inserted every
// few hundred bytes, cut in many ways, against the reference.
func TestAgainstReference(t *testing.T) {
	s := mustCompile(t, benchSecrets(100), Options{})
	rng := rand.New(rand.NewPCG(6, 6))
	clean := genLog(1<<18, 11)
	var in []byte
	for at := 0; at < len(clean); {
		next := min(at+rng.IntN(1024), len(clean))
		in = append(in, clean[at:next]...)
		at = next
		p := s.pats[rng.IntN(len(s.pats))]
		if rng.IntN(4) == 0 {
			p = p[:rng.IntN(len(p))] // a prefix only
		}
		in = append(in, p...)
	}
	want := refRedact(s, in)
	for _, size := range []int{1, 2, 5, 13, 100, 4096, 32 << 10} {
		t.Run(fmt.Sprintf("chunks=%d", size), func(t *testing.T) {
			var cuts []int
			for c := size; c < len(in); c += size {
				cuts = append(cuts, c)
			}
			checkOutput(t, s, "fixed chunks", writeChunks(t, s, in, cuts), want)
		})
	}
	t.Run("random", func(t *testing.T) {
		checkOutput(t, s, "random chunks", writeChunks(t, s, in, randomCuts(rng, len(in))), want)
	})
}
