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
	fields := strings.Fields(s[rp+1:])
	if len(fields) < 2 {
		return "", 0, false
	}
	ppid, err := strconv.Atoi(fields[1])
	if err != nil || ppid < 0 {
		return "", 0, false
	}
	return s[lp+1 : rp], ppid, true
}
