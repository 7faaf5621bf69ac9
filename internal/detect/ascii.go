package detect

// A class is a set of kinds of byte.
type class uint16

const (
	upper    class = 1 << iota // A-Z
	lower                      // a-z
	digit                      // 0-9
	hexUpper                   // A-F
	hexLower                   // a-f
	dash                       // -
	under                      // _
	dot                        // .
	plus                       // +
	slash                      // /
	equals                     // =

	alnum     = upper | lower | digit
	base64url = alnum | dash | under
	base64any = base64url | plus | slash // both base64 alphabets
	hexDash   = digit | hexUpper | hexLower | dash
	token     = base64any | dot | equals // what [Scan] takes for one token
)

// classes[c] is the class of the byte c: none for bytes outside the sets above.
var classes = func() (t [256]class) {
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = upper
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = lower
	}
	for c := '0'; c <= '9'; c++ {
		t[c] = digit
	}
	for c := 'A'; c <= 'F'; c++ {
		t[c] |= hexUpper
		t[c+'a'-'A'] |= hexLower
	}
	t['-'], t['_'], t['.'], t['+'], t['/'], t['='] = dash, under, dot, plus, slash, equals
	return t
}()

// span returns the length of the run of bytes in set at the start of s, and
// the union of their classes.
func span(s string, set class) (n int, seen class) {
	for n < len(s) && classes[s[n]]&set != 0 {
		seen |= classes[s[n]]
		n++
	}
	return n, seen
}

// equalFold reports whether s and t are equal, ignoring the case of ASCII
// letters only: names are ASCII, and Unicode folding (the Kelvin sign is a
// k) has no business here. It compares from the end, where words differ
// first.
func equalFold(s, t string) bool {
	if len(s) != len(t) {
		return false
	}
	for i := len(s) - 1; i >= 0; i-- {
		if toUpper(s[i]) != toUpper(t[i]) {
			return false
		}
	}
	return true
}

func hasSuffixFold(s, suffix string) bool {
	return len(s) >= len(suffix) && equalFold(s[len(s)-len(suffix):], suffix)
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && equalFold(s[:len(prefix)], prefix)
}

func toLower(c byte) byte {
	if isUpper(c) {
		return c - 'A' + 'a'
	}
	return c
}

func toUpper(c byte) byte {
	if isLower(c) {
		return c - 'a' + 'A'
	}
	return c
}

func isUpper(c byte) bool { return 'A' <= c && c <= 'Z' }
func isLower(c byte) bool { return 'a' <= c && c <= 'z' }
func isDigit(c byte) bool { return '0' <= c && c <= '9' }
func isAlnum(c byte) bool { return classes[c]&alnum != 0 }
