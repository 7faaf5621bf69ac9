// Package redact masks known secret values in a stream, such as the stdout and stderr
// of a process started for an AI coding agent, before the agent reads them.
//
// [Compile] turns a list of secrets and the per-install HMAC key into an immutable
// [Set]; [NewStreams] wraps a child's stdout and stderr destinations so that every
// occurrence of a secret, raw or encoded, is replaced by a token that names the
// secret without revealing it:
//
//	set, err := redact.Compile(key, []redact.Secret{{Name: "GITHUB_TOKEN", Value: tok}}, redact.Options{})
//	if err != nil { ... }
//	for _, name := range set.Skipped() {
//		fmt.Fprintf(os.Stderr, "envsieve: %s is too short to be masked\n", name)
//	}
//	m := redact.NewStreams(os.Stdout, os.Stderr, set, 50*time.Millisecond)
//	cmd.Stdout, cmd.Stderr = m.Stdout(), m.Stderr()
//	...
//	err = m.Close() // writes what was held back; does not close os.Stdout
//
// Underneath, one writer (unexported) masks the patterns of one stream; what follows
// says what it guarantees, and [Streams] keeps every guarantee.
//
// # What is masked
//
// For each secret value v at least [Options.MinLen] bytes long (default 8), the
// patterns are v itself and these encodings of it:
//
//   - raw: v; and, if v holds a "\n" not preceded by "\r", v with "\r\n" line ends, as a
//     terminal (the child's pty) writes it.
//   - base64, standard and URL alphabets, for v starting at byte offset 0, 1 and 2
//     (modulo 3) of the encoded data: the inner run of characters whose 6 bits all come
//     from v (the characters before and after also carry bits of the neighbouring
//     bytes, so they cannot be predicted); and, for v at the end of the encoded data,
//     the inner run followed by the last partial character, with and without "="
//     padding. So base64 of "user:"+v (HTTP basic auth), of a JSON document holding v,
//     and so on, is caught whatever precedes v.
//   - URL: [net/url.QueryEscape] and [net/url.PathEscape] of v, as Go writes them
//     (upper-case hex), and the same with lower-case %xx.
//   - JSON string bodies: as encoding/json writes v inside a string, both with its
//     default HTML-safe escapes (\u003c, \u003e, \u0026) and with
//     SetEscapeHTML(false); control characters as \n, \r, \t, \b, \f or \u00XX;
//     invalid UTF-8 as \ufffd. Also the ASCII-only variant, every non-ASCII character as
//     \uXXXX (Python's json.dumps), and the variant with "/" written "\/" (PHP).
//   - hex: lower and upper case.
//   - every byte escaped: \xNN (C, shell, Python and JavaScript literals), \u00NN
//     (JSON and JavaScript) and %NN (a URL encoder that escapes every byte), each
//     with lower- and upper-case hex digits.
//
// If v has leading or trailing white space (a value read from a file often ends in a
// newline), the same forms of the trimmed value are patterns too. Duplicate patterns are
// searched once, and a form shorter than MinLen is dropped. A value shorter than MinLen
// is not masked at all: [Set.Skipped] names it, so that callers can say so.
//
// # Replacement
//
// Every occurrence of a pattern is replaced by [Token](key, v), "[MASKED:xxxxxxxx]",
// where xxxxxxxx is [Fingerprint](key, v), the first 8 hex digits of
// HMAC-SHA256(key, v): the same secret gives the same token whatever encoding matched.
//
// Overlapping occurrences are merged: the bytes covered by the union of occurrences
// that overlap (share at least one byte), directly or through a chain, are replaced by
// one token, that of the leftmost occurrence, and of the longest one among those that
// start there (leftmost-longest). So no byte of any occurrence is ever left visible,
// even when one secret is a substring of another or two share a prefix. Occurrences
// that only touch (one ends where the next begins) get a token each.
//
// # Streaming
//
// A writer holds an Aho-Corasick automaton state, so a pattern split across any
// number of writes is found. Write forwards at once every byte that cannot be part of a
// match; it holds back only the bytes of a live partial match, at most the longest
// suffix of the input that is a proper prefix of a pattern (less where those bytes are
// already known to be masked). writer.Flush and writer.Close declare the end of the
// stream and write what was held, unchanged: it can no longer become a secret.
//
// That makes a plain writer a prefix oracle to a writer that watches the output: the
// bytes held are exactly those that start a secret. For a child's output use
// [Streams]: stdout and stderr matched as one stream, and a hold that does not depend
// on the bytes (the longest pattern's length, released after an idle time).
//
// When no pattern occurs, the output is the input byte for byte: binary data, NUL
// bytes, CR LF, invalid UTF-8 and lines of any length pass through untouched, and
// nothing is ever split or joined on lines. Write returns len(p) (bytes consumed, not
// bytes written), or the destination's error, which then sticks.
//
// The Set is immutable and shared; each writer owns its state and buffers, is used by
// one goroutine at a time, and allocates nothing per Write once its buffers have grown.
// A Set with no pattern makes its Writers plain pass-throughs.
//
// # Speed
//
// Most output holds no secret, so the automaton only runs where a pattern may start.
// Every pattern is at least win bytes long (win: the shortest pattern, at most 16), so
// a prefilter samples one 4-byte gram every win-3 bytes: every pattern occurrence
// contains one of the samples within its first win bytes. A sample is looked up in a
// Bloom filter of the grams found there (two bits in one 64-bit word); a hit gives the
// offsets at which that gram occurs in pattern prefixes, each candidate start is
// checked against a Bloom filter of the patterns' first 8 bytes, and only then does
// the automaton run, from the candidate, until the bytes it reads can no longer start
// a match. No filter has false negatives, so the result is exactly that of the
// automaton alone. The automaton has dense transition rows for the root and its
// children and sorted sparse ones elsewhere. The cost is linear in the input whatever
// the input, hostile or not.
//
// BenchmarkWriter, BenchmarkPipe and the others in this package measure the speed on
// generated build and test output, with 1 to 1000 secrets.
//
// # Security
//
//   - Only the listed encodings are caught. Among those not: base64 wrapped over
//     several lines (PEM, MIME), stacked encodings (the URL escape of a base64 form),
//     URL escapers that leave a different set of characters unescaped than Go does
//     (JavaScript's encodeURIComponent, Python's quote; this only matters for values
//     holding such characters), compression, a value printed in pieces or with its
//     case changed, and secrets not given to [Compile] (detecting unknown secrets is
//     not this package's work).
//   - In a base64 stream, the one or two characters on each side of the masked run mix
//     bits of the secret with bits of its neighbours: up to 4 bits of the first and of
//     the last byte of the value stay visible there.
//   - The tail of the stream that is a proper prefix of a pattern is written in clear
//     by Flush and Close, as are the parts of a secret written before and after a
//     Flush. A child that prints half a secret and exits shows that half.
//   - Values shorter than MinLen are not masked; report [Set.Skipped] to the user.
//   - The token is a 32-bit keyed fingerprint: it lets a reader tell secrets apart and
//     match them with the audit log, and says nothing about the value without the key.
//     With the key, a low-entropy value can be guessed offline: keep the key (a
//     per-install 32-byte random value) away from the child and the agent.
//   - The Set holds the patterns in memory for its lifetime; Go cannot promise to
//     erase them. [Secret], [Set] and writer print no pattern or held byte with fmt
//     or log/slog, but the writer's destination receives everything that is not a
//     match, by design.
package redact
