package detect

import (
	"math"
	"math/bits"
	"strings"
)

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

	alnum     = upper | lower | digit
	base64url = alnum | dash | under
	base64any = base64url | plus | slash // both base64 alphabets
	hexDash   = digit | hexUpper | hexLower | dash
)

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
	t['-'], t['_'], t['.'], t['+'], t['/'] = dash, under, dot, plus, slash
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

const (
	// minRandomLen is the shortest run that the entropy detector judges.
	// Shorter runs carry too little information to tell a random string from
	// an identifier.
	minRandomLen = 20

	// minEntropyRatio is the least entropy, as a share of the most that the
	// run's length and alphabet allow, of a random run. Of random runs of 20
	// to 200 base64 characters, fewer than one in a thousand fall below it.
	minEntropyRatio = 0.75
)

// highEntropy reports whether v holds a run of base64 characters that looks
// random. See [Value] for what is not judged.
func highEntropy(v string) bool {
	for len(v) > 0 {
		n, seen := span(v, base64any)
		if n >= minRandomLen && looksRandom(v[:n], seen) {
			return true
		}
		v = v[max(n, 1):]
	}
	return false
}

func looksRandom(run string, seen class) bool {
	if seen&alnum != alnum {
		return false // a random run mixes cases and digits
	}
	if n, _ := span(run, hexDash); n == len(run) {
		return false // hashes, UUIDs: identifiers
	}
	if run[0] == '/' {
		return false // a path
	}
	for _, p := range notSecrets {
		if strings.HasPrefix(run, p) {
			return false
		}
	}
	if wordy(run) {
		return false
	}
	// The run mixes all three classes, so its alphabet is the 62 letters and
	// digits and the symbols it holds.
	alphabet := 62 + bits.OnesCount16(uint16(seen&(dash|under|plus|slash)))
	return entropy(run) >= minEntropyRatio*math.Log2(float64(min(len(run), alphabet)))
}

// notSecrets start runs that look random but are public: subresource
// integrity hashes, and the wire form of SSH public keys (ssh-rsa and
// ssh-dss, ssh-ed25519, ecdsa-sha2-*).
var notSecrets = []string{
	"sha1-", "sha256-", "sha384-", "sha512-",
	"AAAAB3NzaC1", "AAAAC3NzaC1", "AAAAE2VjZHNh",
}

// entropy returns the Shannon entropy of s in bits per byte. s is ASCII.
func entropy(s string) float64 {
	var counts [128]int
	for i := 0; i < len(s); i++ {
		counts[s[i]&127]++
	}
	n := float64(len(s))
	h := 0.0
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			h -= p * math.Log2(p)
		}
	}
	return h
}

// commonBigrams are the 150 most frequent letter pairs of English text. In a
// random string about a fifth of the letter pairs are among them; in
// identifiers made of words (GitHubActionsRunner2024,
// feature/ABC-1234-add-login-flow) most are.
const commonBigrams = "th he in er an re on at en nd ti es or te of ed is it al ar " +
	"st to nt ng se ha as ou io le ve co me de hi ri ro ic ne ea ra ce li ch " +
	"ll be ma si om ur ca el ta la ns di fo ho pe ec pr no ct us ac ot il tr ly " +
	"nc et ut ss so rs un lo wa ge ie wh ee wi em ad ol rt po we na ul ni ts mo " +
	"ow pa im mi ai sh ir su id os iv ia am fi ci vi pl ig tu ev ld ry mp fe bl " +
	"ab gh ty op wo sa ay ex ke fr oo av ag if ap gr od bo sp rd do uc bu ei ov " +
	"by rm ep tt oc fa ef cu rn"

// bigrams[a] has bit b set when the letters 'a'+a, 'a'+b are a common pair.
var bigrams = func() (t [26]uint32) {
	for _, p := range strings.Fields(commonBigrams) {
		t[p[0]-'a'] |= 1 << (p[1] - 'a')
	}
	return t
}()

// wordy reports whether run reads like words rather than noise: at least six
// in ten of its pairs of letters within a word (the second in lower case, so
// that the boundaries of camelCase and of acronyms do not count) are common
// English pairs.
func wordy(run string) bool {
	pairs, common := 0, 0
	for i := 1; i < len(run); i++ {
		a, b := run[i-1]|0x20, run[i] // a in lower case, if a letter
		if !isLower(a) || !isLower(b) {
			continue
		}
		pairs++
		if bigrams[a-'a']&(1<<(b-'a')) != 0 {
			common++
		}
	}
	return pairs >= 4 && common*10 >= pairs*6
}
