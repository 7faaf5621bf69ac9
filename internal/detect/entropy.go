package detect

import (
	"math"
	"math/bits"
	"strings"
)

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
//
// The runs of v are split at dots as well. A field (runs joined by dots)
// that starts with '/' or '.' is a path, such as macOS's
// /private/tmp/com.apple.launchd.h4JDUkGq7V/Listeners or the path of a URL:
// its runs are split at '/' too, so that each component is judged on its
// own. In other fields a run is judged slashes and all, as base64 has
// slashes.
func highEntropy(v string) bool {
	path, fieldStart := false, true
	for len(v) > 0 {
		if fieldStart {
			path = v[0] == '/' || v[0] == '.'
		}
		n, seen := span(v, base64any)
		switch {
		case n < minRandomLen:
		case path:
			if randomRun(v[:n], base64any&^slash) {
				return true
			}
		case looksRandom(v[:n], seen):
			return true
		}
		if n == len(v) {
			return false
		}
		fieldStart = v[n] != '.' // v[n] is not in base64any: a dot goes on with the field
		v = v[n+1:]
	}
	return false
}

// randomRun reports whether run holds a run of bytes in set that looks
// random.
func randomRun(run string, set class) bool {
	for len(run) > 0 {
		n, seen := span(run, set)
		if n >= minRandomLen && looksRandom(run[:n], seen) {
			return true
		}
		run = run[max(n, 1):]
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

// commonBigrams are about 150 of the most frequent letter pairs of English.
// In a random string about a fifth of the letter pairs are among them; in
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

// wordy reports whether run reads like words rather than noise: it has at
// least six pairs of letters within a word (the second in lower case, so that
// the boundaries of camelCase and of acronyms do not count), and at least six
// in ten of them are common English pairs.
func wordy(run string) bool {
	pairs, common := 0, 0
	for i := 1; i < len(run); i++ {
		a, b := toLower(run[i-1]), run[i]
		if !isLower(a) || !isLower(b) {
			continue
		}
		pairs++
		if bigrams[a-'a']&(1<<(b-'a')) != 0 {
			common++
		}
	}
	return pairs >= 6 && common*10 >= pairs*6
}
