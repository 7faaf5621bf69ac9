package redact

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
)

// fuzzOptions picks the minimum length: short ones make short prefilter windows.
func fuzzOptions(rng *rand.Rand) Options {
	return Options{MinLen: []int{0, 4, 5, 7, 12}[rng.IntN(5)]}
}

// fuzzSecrets derives 1 to 4 secrets of 4 to 40 bytes from rng. Some are built to
// overlap: one a substring of another, two sharing a prefix, values over a two-letter
// alphabet.
func fuzzSecrets(rng *rand.Rand) []Secret {
	alphabets := []string{
		"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789",
		"ab",
		"xyz-_",
		"\x00\x01\xff\r\n\t \"\\/<&>%+=é",
	}
	n := 1 + rng.IntN(4)
	secrets := make([]Secret, 0, n)
	for i := range n {
		var v []byte
		switch k := rng.IntN(6); {
		case k == 0 && i > 0: // a substring of an earlier secret, or longer
			prev := secrets[rng.IntN(i)].Value
			lo := rng.IntN(len(prev) / 2)
			v = append([]byte(nil), prev[lo:]...)
			if len(v) < 8 {
				v = append(v, "tail-pad"...)
			}
		case k == 1 && i > 0: // a shared prefix
			prev := secrets[rng.IntN(i)].Value
			v = append(append([]byte(nil), prev[:4+rng.IntN(len(prev)-3)]...), "-more"[:1+rng.IntN(4)]...)
		default:
			a := alphabets[rng.IntN(len(alphabets))]
			v = make([]byte, 4+rng.IntN(36))
			for j := range v {
				v[j] = a[rng.IntN(len(a))]
			}
		}
		secrets = append(secrets, Secret{Name: fmt.Sprintf("S%d", i), Value: v})
	}
	return secrets
}

// randomCuts cuts n bytes at random points, mostly small pieces.
func randomCuts(rng *rand.Rand, n int) []int {
	var cuts []int
	for at := 0; ; {
		switch rng.IntN(4) {
		case 0:
			at += 1 + rng.IntN(3)
		case 1, 2:
			at += 1 + rng.IntN(32)
		default:
			at += 1 + rng.IntN(512)
		}
		if at >= n {
			return cuts
		}
		cuts = append(cuts, at)
	}
}

func addSeeds(f *testing.F) {
	f.Add([]byte(""), uint64(0))
	f.Add([]byte("hello, world\n"), uint64(1))
	f.Add([]byte("line\r\nnext\r\n\x00\x01\xff\xfe binary"), uint64(2))
	f.Add(genLog(2048, 5), uint64(3))
	f.Add(bytes.Repeat([]byte("ab"), 300), uint64(4))
}

// FuzzChunking writes a stream with secrets (in all their forms) inserted at random
// places, in random pieces: the output never shows a pattern and is the same as the
// reference's and as one Write's.
func FuzzChunking(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		if len(data) > 1<<14 {
			data = data[:1<<14]
		}
		rng := rand.New(rand.NewPCG(seed, 17))
		s := mustCompile(t, fuzzSecrets(rng), fuzzOptions(rng))
		if s.Len() == 0 {
			return // no pattern: nothing to check
		}
		var in []byte
		for rest := data; ; {
			k := rng.IntN(len(rest) + 1)
			in = append(in, rest[:k]...)
			rest = rest[k:]
			if len(rest) == 0 && rng.IntN(2) == 0 {
				break
			}
			p := s.pats[rng.IntN(len(s.pats))]
			if rng.IntN(5) == 0 { // a partial pattern
				p = p[:rng.IntN(len(p))]
			}
			in = append(in, p...)
			if len(rest) == 0 && rng.IntN(3) != 0 {
				break
			}
		}
		want := refRedact(s, in)
		checkOutput(t, s, "one write", writeChunks(t, s, in, nil), want)
		for range 4 {
			cuts := randomCuts(rng, len(in))
			checkOutput(t, s, fmt.Sprintf("%d random cuts", len(cuts)), writeChunks(t, s, in, cuts), want)
		}
	})
}

// FuzzPassThrough writes data that holds no pattern in random pieces: after each Write
// the destination has everything but the live partial match, and in the end the
// output is the input byte for byte.
func FuzzPassThrough(f *testing.F) {
	addSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		if len(data) > 1<<14 {
			data = data[:1<<14]
		}
		rng := rand.New(rand.NewPCG(seed, 23))
		s := mustCompile(t, fuzzSecrets(rng), fuzzOptions(rng))
		if findPattern(s, data) >= 0 {
			return // the data holds a pattern: not a pass-through case
		}
		var out bytes.Buffer
		w := newWriter(&out, s)
		prev := 0
		for _, c := range append(randomCuts(rng, len(data)), len(data)) {
			if n, err := w.Write(data[prev:c]); n != c-prev || err != nil {
				t.Fatalf("Write(%d bytes) = %d, %v", c-prev, n, err)
			}
			prev = c
			if held := livePartial(s, data[:c]); out.Len() != c-held {
				t.Fatalf("after %d bytes: %d written, want %d (%d held)", c, out.Len(), c-held, held)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if d := diffAt(out.Bytes(), data); d >= 0 {
			t.Fatalf("output differs from the input at %d of %d", d, len(data))
		}
	})
}
