package redact

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
)

// genLog returns about size bytes of typical build and test output (go build and
// test, npm, a C compiler, cargo, docker, pip), the same for the same seed.
func genLog(size int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	word := func() string {
		return pick("config", "server", "handler", "parser", "cache", "client", "token", "buffer",
			"router", "store", "index", "worker", "queue", "render", "schema", "session", "auth", "util")
	}
	pkg := func() string {
		return pick("github.com/", "golang.org/x/", "example.com/", "gitlab.com/acme/") + word() + "/" + word()
	}
	hexs := func(n int) string {
		const digits = "0123456789abcdef"
		b := make([]byte, n)
		for i := range b {
			b[i] = digits[rng.IntN(16)]
		}
		return string(b)
	}
	b64s := func(n int) string {
		const digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
		b := make([]byte, n)
		for i := range b {
			b[i] = digits[rng.IntN(64)]
		}
		return string(b)
	}
	dur := func() string { return fmt.Sprintf("%d.%03ds", rng.IntN(20), rng.IntN(1000)) }
	var b bytes.Buffer
	for b.Len() < size {
		switch rng.IntN(24) {
		case 0:
			fmt.Fprintf(&b, "# %s\n", pkg())
		case 1:
			fmt.Fprintf(&b, "./%s.go:%d:%d: undefined: %s%s\n", word(), rng.IntN(900)+1, rng.IntN(80)+1, word(), strings.ToUpper(word()[:1]))
		case 2:
			fmt.Fprintf(&b, "=== RUN   Test%s/%s_%d\n", strings.ToUpper(word()[:1])+word()[1:], word(), rng.IntN(50))
		case 3:
			fmt.Fprintf(&b, "--- %s: Test%s (%s)\n", pick("PASS", "PASS", "PASS", "FAIL", "SKIP"), strings.ToUpper(word()[:1])+word()[1:], dur())
		case 4:
			fmt.Fprintf(&b, "ok  \t%s\t%s\tcoverage: %d.%d%% of statements\n", pkg(), dur(), rng.IntN(100), rng.IntN(10))
		case 5:
			fmt.Fprintf(&b, "go: downloading %s v%d.%d.%d\n", pkg(), rng.IntN(3), rng.IntN(30), rng.IntN(20))
		case 6:
			fmt.Fprintf(&b, "%s h1:%s=\n", pkg(), b64s(43))
		case 7:
			fmt.Fprintf(&b, "npm WARN deprecated %s@%d.%d.%d: this package is no longer supported, use %s instead\n", word(), rng.IntN(9), rng.IntN(20), rng.IntN(20), word())
		case 8:
			fmt.Fprintf(&b, "npm http fetch GET 200 https://registry.npmjs.org/%s/-/%s-%d.%d.%d.tgz %dms (cache miss)\n", word(), word(), rng.IntN(9), rng.IntN(20), rng.IntN(20), rng.IntN(900))
		case 9:
			fmt.Fprintf(&b, "      \"integrity\": \"sha512-%s==\",\n", b64s(86))
		case 10:
			fmt.Fprintf(&b, "added %d packages, and audited %d packages in %ds\n\n%d packages are looking for funding\n  run `npm fund` for details\n", rng.IntN(2000), rng.IntN(2000), rng.IntN(60), rng.IntN(300))
		case 11:
			fmt.Fprintf(&b, "src/%s.c:%d:%d: warning: unused variable '%s' [-Wunused-variable]\n  %d |     int %s = %d;\n      |         ^~~~~\n", word(), rng.IntN(900), rng.IntN(40), word(), rng.IntN(900), word(), rng.IntN(100))
		case 12:
			fmt.Fprintf(&b, "gcc -O2 -g -Wall -Wextra -fPIC -I./include -I/usr/include/%s -c src/%s.c -o build/%s.o\n", word(), word(), word())
		case 13:
			fmt.Fprintf(&b, "   \x1b[1m\x1b[32mCompiling\x1b[0m %s v%d.%d.%d\r\n", word(), rng.IntN(3), rng.IntN(200), rng.IntN(20))
		case 14:
			fmt.Fprintf(&b, "#%d [%d/%d] RUN apt-get update && apt-get install -y %s %s\n#%d sha256:%s %s done\n", rng.IntN(20), rng.IntN(9), 9, word(), word(), rng.IntN(20), hexs(64), dur())
		case 15:
			fmt.Fprintf(&b, "Collecting %s==%d.%d.%d\n  Downloading %s-%d.%d-py3-none-any.whl (%d kB)\n", word(), rng.IntN(5), rng.IntN(30), rng.IntN(10), word(), rng.IntN(5), rng.IntN(30), rng.IntN(900))
		case 16:
			fmt.Fprintf(&b, "[%s] commit %s: %s the %s %s\n", pick("main", "dev", "feature/"+word()), hexs(40), pick("fix", "add", "refactor", "remove"), word(), word())
		case 17:
			fmt.Fprintf(&b, "2024-%02d-%02dT%02d:%02d:%02d.%03dZ INFO  %s: request_id=%s-%s-%s latency=%dms status=%s\n", rng.IntN(12)+1, rng.IntN(28)+1, rng.IntN(24), rng.IntN(60), rng.IntN(60), rng.IntN(1000), word(), hexs(8), hexs(4), hexs(12), rng.IntN(500), pick("200", "200", "404", "500"))
		case 18:
			fmt.Fprintf(&b, "    at %s.%s (/home/dev/project/node_modules/%s/lib/%s.js:%d:%d)\n", word(), word(), word(), word(), rng.IntN(900), rng.IntN(80))
		case 19:
			fmt.Fprintf(&b, "goroutine %d [running]:\n%s.(*%s).%s(0xc%s, 0x%s)\n\t/home/dev/go/src/%s/%s.go:%d +0x%s\n", rng.IntN(100), pkg(), word(), word(), hexs(9), hexs(6), pkg(), word(), rng.IntN(900), hexs(3))
		case 20:
			fmt.Fprintf(&b, "PASS\ncoverage: %d.%d%% of statements\nok  \t%s\t%s\n", rng.IntN(100), rng.IntN(10), pkg(), dur())
		case 21:
			fmt.Fprintf(&b, "webpack %d.%d.%d compiled with %d warnings in %d ms\nasset main.%s.js %d KiB [emitted] [immutable] (name: main)\n", 5, rng.IntN(90), rng.IntN(9), rng.IntN(5), rng.IntN(9000), hexs(20), rng.IntN(900))
		case 22:
			fmt.Fprintf(&b, "  %s %s %s %s %s %s %s %s\n", word(), word(), word(), word(), word(), word(), word(), word())
		default:
			fmt.Fprintf(&b, "make[%d]: Entering directory '/home/dev/src/%s/%s'\n", rng.IntN(3), word(), word())
		}
	}
	return b.Bytes()
}

// benchSecrets returns n secrets in the formats agents are handed: provider tokens,
// cloud keys, passwords, hex API keys. The same every time.
func benchSecrets(n int) []Secret {
	rng := rand.New(rand.NewPCG(uint64(n), 42))
	const (
		alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
		upper = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
		hexd  = "0123456789abcdef"
		b64   = alnum + "+/"
		pw    = alnum + "!@#$%^&*-_=+?"
	)
	rnd := func(alphabet string, k int) string {
		b := make([]byte, k)
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return string(b)
	}
	secrets := make([]Secret, n)
	for i := range secrets {
		var v string
		switch i % 10 {
		case 0:
			v = "ghp_" + rnd(alnum, 36)
		case 1:
			v = "sk-proj-" + rnd(alnum, 48)
		case 2:
			v = "sk-ant-api03-" + rnd(alnum+"-_", 95)
		case 3:
			v = "AKIA" + rnd(upper, 16)
		case 4:
			v = rnd(b64, 40) // an AWS secret access key
		case 5:
			v = "xoxb-" + rnd("0123456789", 12) + "-" + rnd(alnum, 24)
		case 6:
			v = rnd(pw, 12+rng.IntN(9)) // a password
		case 7:
			v = rnd(hexd, 32)
		case 8:
			v = "glpat-" + rnd(alnum+"-_", 20)
		default:
			v = "npm_" + rnd(alnum, 36)
		}
		secrets[i] = Secret{Name: fmt.Sprintf("SECRET_%d", i), Value: []byte(v)}
	}
	return secrets
}

// benchData is 4 MiB of build output, made on first use.
var benchData = sync.OnceValue(func() []byte { return genLog(4<<20, 1) })

// noWriterFrom hides the WriterTo of its reader, as a pipe does, so that io.Copy
// reads the data in chunks of its buffer.
type noWriterFrom struct{ r io.Reader }

func (n noWriterFrom) Read(p []byte) (int, error) { return n.r.Read(p) }

// plainDiscard hides io.Discard's ReaderFrom, so both benchmarks copy through the
// same 32 KiB buffer.
type plainDiscard struct{}

func (plainDiscard) Write(p []byte) (int, error) { return len(p), nil }

const benchChunk = 32 << 10 // what a pipe read typically returns

// BenchmarkIOCopy is the baseline: io.Copy of the same data through a 32 KiB buffer.
func BenchmarkIOCopy(b *testing.B) {
	buf := make([]byte, benchChunk)
	data := benchData()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		io.CopyBuffer(plainDiscard{}, noWriterFrom{bytes.NewReader(data)}, buf)
	}
}

// BenchmarkWriter: io.Copy of the same data into a writer, for sets of 1, 100 and 1000
// secrets that do not occur in it.
func BenchmarkWriter(b *testing.B) {
	for _, n := range []int{0, 1, 100, 1000} {
		s := mustCompile(b, benchSecrets(n), Options{})
		if j := findPattern(s, benchData()[:1<<18]); j >= 0 {
			b.Fatalf("the benchmark data holds a pattern at %d", j)
		}
		b.Run(fmt.Sprintf("secrets=%d/patterns=%d", n, s.Len()), func(b *testing.B) {
			buf := make([]byte, benchChunk)
			w := newWriter(plainDiscard{}, s)
			data := benchData()
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				io.CopyBuffer(w, noWriterFrom{bytes.NewReader(data)}, buf)
			}
		})
	}
}

// BenchmarkWriterOneWrite: the whole data in one Write, the scan alone.
func BenchmarkWriterOneWrite(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		s := mustCompile(b, benchSecrets(n), Options{})
		b.Run(fmt.Sprintf("secrets=%d", n), func(b *testing.B) {
			w := newWriter(plainDiscard{}, s)
			data := benchData()
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				w.Write(data)
			}
		})
	}
}

// BenchmarkWriterSmallWrites: many tiny writes, as from a program writing byte by byte
// or in small records, with 100 secrets.
func BenchmarkWriterSmallWrites(b *testing.B) {
	s := mustCompile(b, benchSecrets(100), Options{})
	data := benchData()[:256<<10]
	for _, size := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			w := newWriter(plainDiscard{}, s)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				for i := 0; i < len(data); i += size {
					w.Write(data[i:min(i+size, len(data))])
				}
			}
		})
	}
}

// BenchmarkWriterWithSecrets: the same data with a secret (in one of its forms) every
// 4 KiB or so, 100 secrets.
func BenchmarkWriterWithSecrets(b *testing.B) {
	secrets := benchSecrets(100)
	s := mustCompile(b, secrets, Options{})
	rng := rand.New(rand.NewPCG(9, 9))
	var data []byte
	clean := benchData()
	for at := 0; at < len(clean); {
		next := min(at+rng.IntN(8<<10), len(clean))
		data = append(data, clean[at:next]...)
		at = next
		data = append(data, s.pats[rng.IntN(len(s.pats))]...)
	}
	buf := make([]byte, benchChunk)
	w := newWriter(plainDiscard{}, s)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		io.CopyBuffer(w, noWriterFrom{bytes.NewReader(data)}, buf)
	}
}

// BenchmarkWriterHostile: output made to keep the automaton busy, 100 secrets: the
// first 16 bytes of a pattern over and over (every position a candidate), and whole
// secrets back to back (a token every few dozen bytes).
func BenchmarkWriterHostile(b *testing.B) {
	s := mustCompile(b, benchSecrets(100), Options{})
	var prefixes, whole []byte
	for i := 0; len(prefixes) < 1<<20; i++ {
		p := s.pats[i%len(s.pats)]
		prefixes = append(prefixes, p[:min(16, len(p)-1)]...)
		whole = append(whole, p...)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{{"prefixes", prefixes}, {"secrets", whole}} {
		b.Run(tc.name, func(b *testing.B) {
			buf := make([]byte, benchChunk)
			w := newWriter(plainDiscard{}, s)
			b.SetBytes(int64(len(tc.data)))
			b.ReportAllocs()
			for b.Loop() {
				io.CopyBuffer(w, noWriterFrom{bytes.NewReader(tc.data)}, buf)
			}
		})
	}
}

// BenchmarkCompile: building the Set, once per launch.
func BenchmarkCompile(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		secrets := benchSecrets(n)
		b.Run(fmt.Sprintf("secrets=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Compile(testKey, secrets, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPipe measures the launcher's real path: a child's output arrives through an
// OS pipe and is copied to the destination, plainly or through a writer (100 secrets).
func BenchmarkPipe(b *testing.B) {
	data := benchData()
	s := mustCompile(b, benchSecrets(100), Options{})
	for _, redacted := range []bool{false, true} {
		b.Run(fmt.Sprintf("redact=%v", redacted), func(b *testing.B) {
			var dst io.Writer = plainDiscard{}
			if redacted {
				dst = newWriter(plainDiscard{}, s)
			}
			buf := make([]byte, 64<<10)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			for b.Loop() {
				r, w, err := os.Pipe()
				if err != nil {
					b.Fatal(err)
				}
				go func() {
					for at := 0; at < len(data); at += 64 << 10 {
						w.Write(data[at:min(at+64<<10, len(data))])
					}
					w.Close()
				}()
				if _, err := io.CopyBuffer(dst, noWriterFrom{r}, buf); err != nil {
					b.Fatal(err)
				}
				r.Close()
			}
		})
	}
}
