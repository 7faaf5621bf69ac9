package detect

import "strings"

// Sensitive reports whether a variable is a credential: its name looks like
// a credential's ([SensitiveName]) or its value does ([ValueFor]). It is
// the one answer to "is this sensitive?" for the guard, redaction and
// explain. Code-injection variables ([Injection]) are a separate question.
func Sensitive(name, value string) bool {
	if _, ok := SensitiveName(name); ok {
		return true
	}
	_, ok := ValueFor(name, value)
	return ok
}

// ValueFor is [Value] with the variable's name as context: a whole value
// of 32 or more hex digits, with dashes between groups allowed (a UUID, a
// Mailgun key), is a credential ("hex-secret") unless the name says it is
// an identifier (a word such as SHA, HASH, COMMIT, REV, REF, ID, UUID,
// DIGEST, SUM, TRACE, SPAN, RUN, BUILD, JOB, PIPELINE, VERSION, SESSION,
// MACHINE, INSTANCE, REQUEST or NONCE, or one that ends in ID or starts
// with TRACE). Datadog, Twilio and Mailgun issue such keys, Heroku UUIDs;
// git and trace ids look the same, so the name decides.
func ValueFor(name, value string) (Kind, bool) {
	if k, ok := Value(value); ok {
		return k, true
	}
	if len(value) >= 32 && hexRun(value) && !identifierName(name) {
		return "hex-secret", true
	}
	return "", false
}

// hexRun reports whether v is 32 or more hex digits in groups joined by
// single dashes.
func hexRun(v string) bool {
	n := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f'):
			n++
		case c == '-' && i > 0 && i < len(v)-1 && v[i-1] != '-':
		default:
			return false
		}
	}
	return n >= 32
}

// identifierWords name an identifier rather than a secret.
var identifierWords = []string{
	"SHA", "HASH", "COMMIT", "REV", "REVISION", "REF", "ID", "IDS", "UUID", "GUID",
	"DIGEST", "SUM", "CHECKSUM", "ETAG", "TRACE", "SPAN", "RUN", "BUILD", "JOB",
	"PIPELINE", "VERSION", "SESSION", "MACHINE", "INSTANCE", "REQUEST", "NONCE",
	"CORRELATION", "SERIAL", "INVOCATION", "TRACKING",
}

func identifierName(name string) bool {
	for start, end := nextWord(name, 0); start < end; start, end = nextWord(name, end) {
		w := name[start:end]
		if equalsAny(w, identifierWords) || hasSuffixFold(w, "ID") || hasSuffixFold(w, "IDS") ||
			(len(w) >= 5 && strings.EqualFold(w[:5], "TRACE")) {
			return true
		}
	}
	return false
}
