package redact

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/envsieve/envsieve/internal/detect"
)

// unknownSecrets are credential-looking strings nobody named, assembled at
// run time so no real-looking token sits in the source in one piece.
func unknownSecrets() map[string]string {
	return map[string]string{
		"github token":   "ghp" + "_" + strings.Repeat("aB3dE5gH7j", 3) + "K9mN1p",
		"aws key id":     "AKIA" + "QWERTYUIOPASDFGH",
		"random api key": "x9" + "Qm4Lr8Vt2Zp6Nc1Kw5Hy3Bs7Fd0Gj",
		"jwt":            "eyJhbGciOiJIUzI1NiJ9" + "." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0" + "." + "dBjftJeZ4CVPmB92K27uhbUJU1p1r_wW1gFWFOEjXk",
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func detectAll(t testing.TB, chunks ...[]byte) string {
	t.Helper()
	var out syncBuffer
	d := NewDetector(&out, []byte("0123456789abcdef0123456789abcdef"), detect.ScanOptions{}, 0)
	for _, c := range chunks {
		if n, err := d.Write(c); err != nil || n != len(c) {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// TestDetectorEverySplit: an unknown secret inside text, split at every byte
// boundary across two writes, never reaches the output, and the output is
// the same as for one write.
func TestDetectorEverySplit(t *testing.T) {
	for name, secret := range unknownSecrets() {
		t.Run(name, func(t *testing.T) {
			text := []byte("export X=" + secret + "\nnext line ok\n")
			whole := detectAll(t, text)
			if strings.Contains(whole, secret) || !strings.Contains(whole, "[MASKED:") {
				t.Fatalf("one write: not masked: %q", strings.ReplaceAll(whole, secret, "<secret>"))
			}
			for i := 0; i <= len(text); i++ {
				got := detectAll(t, text[:i], text[i:])
				if got != whole {
					t.Fatalf("split at %d: output differs from one write", i)
				}
			}
		})
	}
}

// TestDetectorPassThrough: text with nothing credential-like (git SHAs,
// UUIDs, integrity hashes, paths) passes byte for byte.
func TestDetectorPassThrough(t *testing.T) {
	text := genLog(1<<16, 7)
	if got := detectAll(t, text); got != string(text) {
		i := 0
		for i < len(got) && i < len(text) && got[i] == text[i] {
			i++
		}
		t.Fatalf("output differs from the input at byte %d: %q", i, got[i:min(len(got), i+80)])
	}
}

// TestDetectorIdleFlush: a run left at the end of a write comes out after the
// idle time, without another write; a run that is a secret comes out masked.
func TestDetectorIdleFlush(t *testing.T) {
	var out syncBuffer
	d := NewDetector(&out, []byte("0123456789abcdef0123456789abcdef"), detect.ScanOptions{}, 20*time.Millisecond)
	d.Write([]byte("prompt> partial"))
	if got := out.String(); got != "prompt> " {
		t.Fatalf("before the idle time: %q", got)
	}
	deadline := time.Now().Add(5 * time.Second)
	for out.String() != "prompt> partial" && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := out.String(); got != "prompt> partial" {
		t.Fatalf("after the idle time: %q", got)
	}
	secret := unknownSecrets()["github token"]
	d.Write([]byte(" " + secret))
	deadline = time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "[MASKED:") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if got := out.String(); strings.Contains(got, secret) || !strings.Contains(got, "[MASKED:") {
		t.Fatalf("idle flush of a secret: %q", strings.ReplaceAll(got, secret, "<secret>"))
	}
	d.Close()
}

// FuzzDetectorChunking: for any text and any split into writes, the output is
// the output of one write, and a planted unknown secret never gets through.
func FuzzDetectorChunking(f *testing.F) {
	f.Add([]byte("hello world\n"), uint8(3), uint8(0))
	f.Add(genLog(2000, 1), uint8(7), uint8(2))
	f.Fuzz(func(t *testing.T, text []byte, step, which uint8) {
		if len(text) > 4096 || step == 0 {
			return
		}
		secrets := []string{}
		for _, s := range unknownSecrets() {
			secrets = append(secrets, s)
		}
		secret := secrets[int(which)%len(secrets)]
		at := len(text) / 2
		planted := append(append(append([]byte{}, text[:at]...), []byte(" "+secret+" ")...), text[at:]...)
		whole := detectAll(t, planted)
		var chunks [][]byte
		for i := 0; i < len(planted); i += int(step) {
			chunks = append(chunks, planted[i:min(len(planted), i+int(step))])
		}
		if got := detectAll(t, chunks...); got != whole {
			t.Fatalf("chunked output differs from one write")
		}
		if strings.Contains(whole, secret) {
			t.Fatalf("a planted secret got through")
		}
	})
}

// BenchmarkDetector: the unknown-secret stage over typical build output with
// no secret in it. Target: at least 200 MB/s.
func BenchmarkDetector(b *testing.B) {
	data := genLog(4<<20, 1)
	d := NewDetector(plainDiscard{}, []byte("0123456789abcdef0123456789abcdef"), detect.ScanOptions{}, 0)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < len(data); i += 32 << 10 {
			d.Write(data[i:min(len(data), i+32<<10)])
		}
		d.Flush()
	}
}

// BenchmarkWriterAndDetector: the launcher's whole filter, 100 known secrets
// then the unknown-secret stage, over typical build output. Target: at least
// 200 MB/s.
func BenchmarkWriterAndDetector(b *testing.B) {
	data := genLog(4<<20, 1)
	key := []byte("0123456789abcdef0123456789abcdef")
	set, err := Compile(key, benchSecrets(100), Options{})
	if err != nil {
		b.Fatal(err)
	}
	d := NewDetector(plainDiscard{}, key, detect.ScanOptions{}, 0)
	w := newWriter(d, set)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		for i := 0; i < len(data); i += 32 << 10 {
			w.Write(data[i:min(len(data), i+32<<10)])
		}
		w.Flush()
		d.Flush()
	}
}

// TestDetectorPassesOddBytes: CRLF, bare CR, NUL, invalid UTF-8, binary bytes
// and a 1 MiB line with nothing credential-like pass byte for byte, however
// they are split into writes.
func TestDetectorPassesOddBytes(t *testing.T) {
	long := bytes.Repeat([]byte("word another-word 1234 "), (1<<20)/23)
	cases := map[string][]byte{
		"crlf":         []byte("line one\r\nline two\r\n\r\n\rbare cr\n"),
		"nul":          []byte("a\x00b\x00\x00c d\n"),
		"invalid utf8": []byte("\xff\xfe\xc3(\xe2\x82 ok \xf0\x28\x8c\x28\n"),
		"binary":       {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 0x0d, 'I', 'H', 'D', 'R', 0xde, 0xad, 0xbe, 0xef},
		"long line":    long,
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			if got := detectAll(t, in); got != string(in) {
				t.Fatalf("one write: output differs from the input")
			}
			var chunks [][]byte
			for i := 0; i < len(in); i += 7 {
				chunks = append(chunks, in[i:min(len(in), i+7)])
			}
			if got := detectAll(t, chunks...); got != string(in) {
				t.Fatalf("7-byte writes: output differs from the input")
			}
		})
	}
}
