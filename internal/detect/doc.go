// Package detect recognises credentials and code-injection hooks in
// environment variables. The engine (sieve) uses it to decide which keys are
// sensitive (docs/design.md section 2, step 4); [Scan] finds, in what the agent
// reads back, the secrets that no policy named (section 4).
//
// There are four detectors, each a pure function of its arguments:
//
//   - [SensitiveName]: the variable's name looks like a credential's, judged
//     word by word (GITHUB_TOKEN, myApiKey, DATABASE_URL), never by substring
//     (GIT_AUTHOR_NAME, KEYBOARD_LAYOUT and PASSENGER_COUNT are not sensitive).
//   - [Value]: the value looks like a credential: a known token format, a
//     JWT, a PEM private key, a URL carrying a password, or a long random
//     string. It reports a [Kind], never any part of the value.
//   - [Injection]: the variable can make a child process run code it did not
//     ask for (LD_PRELOAD, BASH_ENV, NODE_OPTIONS, a bash exported function).
//     This is the code-injection floor that even audit mode removes.
//   - [Scan]: the credential-looking strings in a text (a build log, JSON,
//     source code), by byte offsets and [Kind]: the formats [Value] knows,
//     whole PEM private keys, the passwords in URLs, values that their
//     sensitive names give away, and long random strings, but not hashes,
//     UUIDs, integrity strings or paths, for the redactor to mask.
//
// # Guarantees
//
// The detectors do no I/O, read no environment and no clock, keep no state,
// do not allocate, and are safe for concurrent use. Their cost is linear in
// the length of their input. [Scan] reads about 200 to 300 MB/s of typical
// build output on one core (BenchmarkScan).
//
// # Security
//
// The detectors are heuristics. They are tuned to miss few real credentials
// while leaving ordinary values alone (paths, PATH-like lists, locales,
// UUIDs, git hashes, URLs without a password), and both kinds of error remain
// possible. A credential that a detector misses is still dropped unless an
// allow entry admits it, and no credential the detectors do recognise passes
// through a wildcard. Callers must not print a value that a detector
// flagged; a [Kind] and the variable's name are safe to print.
package detect
