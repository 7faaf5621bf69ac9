package nest

import (
	"strconv"
	"strings"
)

// parseStat parses the comm and ppid fields of a /proc/PID/stat line.
func parseStat(s string) (string, int, bool) {
	lp, rp := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if lp < 0 || rp < lp {
		return "", 0, false
	}
	// After ")": " state ppid ...".
	rest := strings.TrimLeft(s[rp+1:], " ")
	_, rest, ok := strings.Cut(rest, " ")
	if !ok {
		return "", 0, false
	}
	rest = strings.TrimLeft(rest, " ")
	end := strings.IndexByte(rest, ' ')
	if end < 0 {
		end = len(rest)
	}
	ppid, err := strconv.Atoi(strings.TrimRight(rest[:end], "\n"))
	if err != nil || ppid < 0 {
		return "", 0, false
	}
	return s[lp+1 : rp], ppid, true
}
