package detect

// sensitiveWords mark a name as a credential's when they are one of its
// words (API_KEY) or end one of its words (APIKEY, OAUTH, ACCESSTOKEN,
// DBPASS), also in the plural (API_KEYS, AWS_SECRETS). A word that only
// starts with one is not sensitive: KEYBOARD, PASSENGER, AUTHOR, TOKENIZERS.
var sensitiveWords = []string{
	// docs/design.md section 2, step 4.
	"KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASS", "PW",
	"CREDENTIAL", "CREDENTIALS", "CREDS", "PRIVATE", "COOKIE", "DSN", "AUTH",
	// Added: they name a secret as plainly (GPG_PASSPHRASE, the CGI
	// variable HTTP_AUTHORIZATION, GH_PAT for a personal access token,
	// MYSQL_PWD) and end few other words. The shell's own PWD and OLDPWD,
	// the working directory, are exceptions: see SensitiveName.
	"PASSPHRASE", "AUTHORIZATION", "PAT", "PWD",
	// Added with the guard's review: a bearer credential (BEARER), a web
	// session (JSESSIONID), a Wi-Fi pre-shared key (WIFI_PSK), a MAC key
	// (WEBHOOK_HMAC), a salt of a signer (SIGNING_SALT), a phone's
	// PASSCODE and a wallet's MNEMONIC.
	"BEARER", "SESSIONID", "PSK", "HMAC", "SALT", "PASSCODE", "MNEMONIC",
}

// seedQualifiers make SEED a credential's word when the name also has one:
// OTP_SEED, TOTP_SEED, WALLET_SEED, SEED_PHRASE. Alone, SEED is a random
// generator's (RANDOM_SEED, PYTHONHASHSEED).
var seedQualifiers = []string{"OTP", "TOTP", "HOTP", "MFA", "WALLET", "PHRASE", "RECOVERY", "BIP"}

// ordinaryWords end in a sensitive word but are ordinary English: a
// PROXY_BYPASS list, a terminal's HOTKEY, a CHAOS_MONKEY switch, a
// COMPAT_MODE. ASKPASS is deliberately not here: SSH_ASKPASS and GIT_ASKPASS
// name programs that hand out passwords, a capability worth an exact allow
// entry.
// GOPRIVATE is the Go toolchain's list of private module paths.
var ordinaryWords = []string{"BYPASS", "COMPASS", "COMPAT", "HOTKEY", "MONKEY", "GOPRIVATE"}

// stores are words that, when a later word of the name is URL or URI, make
// a compound name that by convention holds a connection string, password
// included: DATABASE_URL, DB_URL, REDIS_URL, MONGODB_URI,
// SQLALCHEMY_DATABASE_URI, CELERY_BROKER_URL, SLACK_WEBHOOK_URL. Like
// sensitive words they also count at the end of a longer word (JAWSDB_URL,
// COUCHDB_URL). The name alone decides, so that a policy that admits
// DATABASE_URL through a wildcard today does not silently start leaking the
// day its value gains a password; [Value] catches a password in any URL
// whatever the variable's name.
var stores = []string{
	"DATABASE", "DB", "POSTGRES", "POSTGRESQL", "MYSQL", "MONGO", "REDIS",
	"AMQP", "RABBITMQ", "BROKER", "WEBHOOK",
}

// SensitiveName reports whether an environment variable's name looks like it
// holds a credential, judged by word and not by substring. It returns the
// word that matched, a part of name.
//
// The name is split into words at every byte that is not an ASCII letter or
// digit ('_' in practice), where a lower-case letter is followed by an
// upper-case one (myApiKey is my, Api, Key), and between letters and digits
// (OAUTH2 is OAUTH, 2; so AUTH0_DOMAIN is sensitive, as is all of Auth0's
// configuration). Words are compared without regard to the case of ASCII
// letters. A name is sensitive when
//
//   - one of its words is or ends in KEY, SECRET, TOKEN, PASSWORD, PASSWD,
//     PASS, PW, CREDENTIAL(S), CREDS, PRIVATE, COOKIE, DSN, AUTH, PASSPHRASE,
//     AUTHORIZATION, PAT, PWD, BEARER, SESSIONID, PSK, HMAC, SALT,
//     PASSCODE or MNEMONIC, also followed by a plural S, unless the word
//     is an ordinary one such as BYPASS or HOTKEY, or the name is PWD or
//     OLDPWD (the working directory); or
//   - it is a compound that holds a connection string: a word that is or
//     ends in DATABASE, DB, POSTGRES(QL), MYSQL, MONGO, REDIS, AMQP,
//     RABBITMQ, BROKER or WEBHOOK, followed somewhere later by the word URL
//     or URI (then word is the run of name from one to the other);
//     CONNECTION followed by STRING(S); or a last word that is or ends in
//     WEBHOOK (SLACK_WEBHOOK); or
//   - a word that is or ends in SEED together with OTP, TOTP, HOTP, MFA,
//     WALLET, PHRASE, RECOVERY or BIP (OTP_SEED, SEED_PHRASE), but not
//     RANDOM_SEED or PYTHONHASHSEED.
func SensitiveName(name string) (word string, ok bool) {
	if !mayBeSensitive(name) {
		return "", false
	}
	if equalFold(name, "PWD") || equalFold(name, "OLDPWD") {
		return "", false
	}
	store := -1 // where the first store word starts
	conn := -1  // where the previous word starts, if it is CONNECTION
	seed, qualified := "", false
	last := ""
	for start, end := nextWord(name, 0); start < end; start, end = nextWord(name, end) {
		w := name[start:end]
		if hasSuffixFold(w, "SEED") {
			seed = w
		} else if equalsAny(w, seedQualifiers) {
			qualified = true
		}
		switch {
		case sensitiveWord(w):
			return w, true
		case seed != "" && qualified:
			return seed, true
		case store >= 0 && (equalFold(w, "URL") || equalFold(w, "URI")):
			return name[store:end], true
		case conn >= 0 && (equalFold(w, "STRING") || equalFold(w, "STRINGS")):
			return name[conn:end], true
		}
		conn = -1
		if equalFold(w, "CONNECTION") {
			conn = start
		}
		if store < 0 && endsInAny(w, &storesByLast) {
			store = start
		}
		last = w
	}
	if hasSuffixFold(last, "WEBHOOK") {
		return last, true
	}
	return "", false
}

// sensitiveWord reports whether w is, or ends in, a sensitive word, also in
// the plural.
func sensitiveWord(w string) bool {
	if endsInAny(w, &sensitiveByLast) {
		return !equalsAny(w, ordinaryWords)
	}
	if n := len(w); n > 1 && (w[n-1] == 'S' || w[n-1] == 's') {
		w = w[:n-1]
		return endsInAny(w, &sensitiveByLast) && !equalsAny(w, ordinaryWords)
	}
	return false
}

// byLast indexes a word list by its words' last (upper-case) letter, so
// that a suffix test compares only the words that can match.
type byLast [256][]string

// nextWord returns the bounds of the first word of name at or after i; start
// equals end when there is none.
func nextWord(name string, i int) (start, end int) {
	for i < len(name) && !isAlnum(name[i]) {
		i++
	}
	if i == len(name) {
		return i, i
	}
	start = i
	for i++; i < len(name) && sameWord(name[i-1], name[i]); i++ {
	}
	return start, i
}

// sameWord reports whether c continues the word whose previous byte is p.
func sameWord(p, c byte) bool {
	return isAlnum(c) &&
		!(isLower(p) && isUpper(c)) &&
		isDigit(p) == isDigit(c)
}

// endsInAny reports whether w ends in one of the upper-case words of list.
func endsInAny(w string, t *byLast) bool {
	if w == "" {
		return false
	}
	for _, s := range t[toUpper(w[len(w)-1])] {
		if hasSuffixFold(w, s) {
			return true
		}
	}
	return false
}

func equalsAny(w string, list []string) bool {
	for _, s := range list {
		if equalFold(w, s) {
			return true
		}
	}
	return false
}

// mayBeSensitive is a quick test that SensitiveName needs: a sensitive
// name holds, in either case, a sensitive word, URL or URI (after a store
// word), STRING (after CONNECTION) or WEBHOOK. Most names hold none of
// them and skip the splitting into words.
func mayBeSensitive(name string) bool {
	for i := 1; i < len(name); i++ {
		if p := uint16(name[i-1]) | uint16(name[i])<<8; needlePairs[p>>6]&(1<<(p&63)) == 0 {
			continue
		}
		i := i - 1
		for _, w := range needles[toUpper(name[i])-'A'] {
			if hasPrefixFold(name[i:], w) {
				return true
			}
		}
	}
	return false
}

// needles and needlePairs, the words mayBeSensitive looks for by first
// letter and their first two bytes, are in tables_gen.go.
