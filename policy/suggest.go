package policy

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// DidYouMean returns the known name closest to name, as " (did you mean
// "X"?)", or "" when none is close: an edit distance, ignoring case, of at
// most a third of name's length (and at least 1), or known starts with name
// (at least 3 characters). Ties go to the first in known. Names longer than
// maxSuggestLen are not compared.
func DidYouMean(name string, known []string) string {
	if s := closest(name, known); s != "" {
		return fmt.Sprintf(" (did you mean %q?)", s)
	}
	return ""
}

// maxSuggestLen bounds the names compared, so that a long mistake costs
// no more than a short one.
const maxSuggestLen = 128

func closest(name string, known []string) string {
	if name == "" || len(name) > maxSuggestLen || !utf8.ValidString(name) {
		return ""
	}
	lower := strings.ToLower(name)
	limit := max(1, utf8.RuneCountInString(name)/3)
	best, bestD := "", limit+1
	for _, k := range known {
		if k == name || len(k) > maxSuggestLen || !utf8.ValidString(k) {
			continue
		}
		lk := strings.ToLower(k)
		d := distance(lower, lk)
		if d == 0 {
			d = 1 // differs in case only: the closest there is
		}
		if len(lower) >= 3 && strings.HasPrefix(lk, lower) && d > limit {
			d = limit
		}
		if d < bestD {
			best, bestD = k, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b, by rune.
func distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
