package detect

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// The tests build every credential from a prefix and a pseudo-random tail,
// so that the values have the shape of real ones while no real-looking
// secret sits in the source in one piece. Failure messages name the case and
// the kinds, never the value.

const (
	base62Chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b64URLChars = base62Chars + "-_"
	b64StdChars = base62Chars + "+/"
	hexChars    = "0123456789abcdef"
	base32Chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	bech32Chars = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"
	digitChars  = "0123456789"
)

// faker draws fake secrets from a fixed pseudo-random sequence.
type faker struct{ r *rand.Rand }

func newFaker() faker { return faker{rand.New(rand.NewPCG(1, 2))} }

// str returns n bytes from alphabet.
func (f faker) str(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[f.r.IntN(len(alphabet))]
	}
	return string(b)
}

// bytes returns n random bytes.
func (f faker) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(f.r.Uint32())
	}
	return b
}

// sshKey returns the wire form of an SSH public key of the given type.
func (f faker) sshKey(typ string, n int) string {
	b := []byte{0, 0, 0, byte(len(typ))}
	b = append(b, typ...)
	b = append(b, 0, 0, 0, byte(n))
	b = append(b, f.bytes(n)...)
	return base64.StdEncoding.EncodeToString(b)
}

// pem returns a PEM block with the given label and a random body.
func (f faker) pem(label, newline string) string {
	body := base64.StdEncoding.EncodeToString(f.bytes(300))
	var b strings.Builder
	b.WriteString("-----BEGIN " + label + "-----" + newline)
	for len(body) > 64 {
		b.WriteString(body[:64] + newline)
		body = body[64:]
	}
	b.WriteString(body + newline + "-----END " + label + "-----" + newline)
	return b.String()
}

func b64url(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

type valueCase struct {
	name  string
	value string
	want  Kind // "" when the value is not a credential
}

func valueCases() []valueCase {
	f, rnd := newFaker(), newFaker()
	jwtHeader := b64url(`{"alg":"HS256","typ":"JWT"}`)
	jwtPayload := b64url(`{"sub":"1234567890","name":"test","iat":1516239022}`)
	jwt := jwtHeader + "." + jwtPayload + "." + f.str(b64URLChars, 43)
	ghp := "ghp_" + f.str(base62Chars, 36)
	glpat := "glpat-" + f.str(b64URLChars, 20)
	pw := f.str(base62Chars, 16)

	return []valueCase{
		// Known token formats.
		{name: "github classic", value: ghp, want: "github-token"},
		{name: "github oauth", value: "gho_" + f.str(base62Chars, 36), want: "github-token"},
		{name: "github user-to-server", value: "ghu_" + f.str(base62Chars, 36), want: "github-token"},
		{name: "github server-to-server", value: "ghs_" + f.str(base62Chars, 36), want: "github-token"},
		{name: "github refresh", value: "ghr_" + f.str(base62Chars, 36), want: "github-token"},
		{name: "github fine-grained", value: "github_pat_" + f.str(base62Chars, 22) + "_" + f.str(base62Chars, 59), want: "github-token"},
		{name: "gitlab", value: glpat, want: "gitlab-token"},
		{name: "openai legacy", value: "sk-" + f.str(base62Chars, 48), want: "openai-api-key"},
		{name: "openai project", value: "sk-proj-" + f.str(b64URLChars, 156), want: "openai-api-key"},
		{name: "anthropic", value: "sk-ant-api03-" + f.str(b64URLChars, 93) + "AA", want: "anthropic-api-key"},
		{name: "slack bot", value: "xoxb-" + f.str(digitChars, 12) + "-" + f.str(digitChars, 13) + "-" + f.str(base62Chars, 24), want: "slack-token"},
		{name: "slack user", value: "xoxp-" + f.str(digitChars, 12) + "-" + f.str(digitChars, 12) + "-" + f.str(digitChars, 13) + "-" + f.str(hexChars, 32), want: "slack-token"},
		{name: "slack app", value: "xoxa-" + f.str(digitChars, 12) + "-" + f.str(base62Chars, 24), want: "slack-token"},
		{name: "slack refresh", value: "xoxr-" + f.str(digitChars, 12) + "-" + f.str(base62Chars, 24), want: "slack-token"},
		{name: "slack legacy", value: "xoxs-" + f.str(digitChars, 12) + "-" + f.str(base62Chars, 24), want: "slack-token"},
		{name: "slack rotating", value: "xoxe.xoxp-1-" + f.str(b64URLChars, 140), want: "slack-token"},
		{name: "slack app-level", value: "xapp-1-" + f.str(base32Chars, 11) + "-" + f.str(digitChars, 13) + "-" + f.str(hexChars, 64), want: "slack-token"},
		{name: "aws long-term key id", value: "AKIA" + f.str(base32Chars, 16), want: "aws-access-key-id"},
		{name: "aws temporary key id", value: "ASIA" + f.str(base32Chars, 16), want: "aws-access-key-id"},
		{name: "google", value: "AIza" + f.str(b64URLChars, 35), want: "google-api-key"},
		{name: "npm", value: "npm_" + f.str(base62Chars, 36), want: "npm-token"},
		{name: "hugging face", value: "hf_" + f.str(base62Chars, 34), want: "huggingface-token"},
		{name: "stripe live", value: "sk_live_" + f.str(base62Chars, 24), want: "stripe-key"},
		{name: "stripe test", value: "sk_test_" + f.str(base62Chars, 99), want: "stripe-key"},
		{name: "stripe restricted", value: "rk_live_" + f.str(base62Chars, 24), want: "stripe-key"},
		{name: "stripe webhook secret", value: "whsec_" + f.str(base62Chars, 32), want: "stripe-key"},
		{name: "sendgrid", value: "SG." + f.str(b64URLChars, 22) + "." + f.str(b64URLChars, 43), want: "sendgrid-key"},
		{name: "twilio", value: "SK" + f.str(hexChars, 32), want: "twilio-key"},
		{name: "pypi", value: "pypi-AgEIcHlwaS5vcmc" + f.str(b64URLChars, 140), want: "pypi-token"},
		{name: "digitalocean", value: "dop_v1_" + f.str(hexChars, 64), want: "digitalocean-token"},
		{name: "age", value: "AGE-SECRET-KEY-1" + f.str(bech32Chars, 58), want: "age-secret-key"},

		// Tokens inside longer values.
		{name: "bearer header", value: "Authorization: Bearer " + ghp, want: "github-token"},
		{name: "flag", value: "--token=" + ghp + " --verbose", want: "github-token"},
		{name: "quoted", value: `"` + glpat + `"`, want: "gitlab-token"},
		{name: "token in url", value: "https://oauth2:" + glpat + "@gitlab.com/group/repo.git", want: "gitlab-token"},
		{name: "npmrc line", value: "//registry.npmjs.org/:_authToken=npm_" + f.str(base62Chars, 36), want: "npm-token"},
		{name: "aws key id in a list", value: "id=AKIA" + f.str(base32Chars, 16) + ",region=eu-west-1", want: "aws-access-key-id"},

		// JWTs.
		{name: "jwt", value: jwt, want: "jwt"},
		{name: "jwt bearer", value: "Bearer " + jwt, want: "jwt"},
		{name: "jwt unsigned", value: jwtHeader + "." + jwtPayload + ".", want: "jwt"},

		// PEM private keys.
		{name: "pem pkcs8", value: f.pem("PRIVATE KEY", "\n"), want: "pem-private-key"},
		{name: "pem rsa", value: f.pem("RSA PRIVATE KEY", "\n"), want: "pem-private-key"},
		{name: "pem ec", value: f.pem("EC PRIVATE KEY", "\n"), want: "pem-private-key"},
		{name: "pem openssh", value: f.pem("OPENSSH PRIVATE KEY", "\n"), want: "pem-private-key"},
		{name: "pem encrypted", value: f.pem("ENCRYPTED PRIVATE KEY", "\n"), want: "pem-private-key"},
		{name: "pem pgp", value: f.pem("PGP PRIVATE KEY BLOCK", "\n"), want: "pem-private-key"},
		{name: "pem escaped newlines", value: f.pem("RSA PRIVATE KEY", `\n`), want: "pem-private-key"},
		{name: "pem key after certificate", value: f.pem("CERTIFICATE", "\n") + f.pem("PRIVATE KEY", "\n"), want: "pem-private-key"},
		{name: "pem header only", value: "-----BEGIN PRIVATE KEY-----", want: "pem-private-key"},

		// URLs carrying a secret.
		{name: "url password", value: "postgres://app:" + pw + "@db.internal:5432/app", want: "url-password"},
		{name: "url empty user", value: "redis://:" + pw + "@cache.internal:6379/0", want: "url-password"},
		{name: "proxy with password", value: "http://alice:" + pw + "@proxy.corp:3128", want: "url-password"},
		{name: "url password with at", value: "mysql://root:" + pw + "@x@db:3306/app", want: "url-password"},
		{name: "url password scheme with digit", value: "s3://minio:" + pw + "@minio.internal:9000/bucket", want: "url-password"},
		{name: "url password in a list", value: "https://pypi.org/simple https://u:" + pw + "@pypi.corp/simple", want: "url-password"},
		{name: "url password query", value: "postgres://db.internal/app?sslmode=require&password=" + pw, want: "url-query-secret"},
		{name: "url access token query", value: "https://api.example.com/v1/items?access_token=" + pw, want: "url-query-secret"},
		{name: "url api key query", value: "https://api.example.com/v1?format=json&api_key=" + pw, want: "url-query-secret"},
		{name: "url presigned", value: "https://bucket.s3.amazonaws.com/o?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" + pw + "%2F20240101", want: "url-query-secret"},
		{name: "url sas signature", value: "https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=" + pw, want: "url-query-secret"},
		{name: "url pwd query", value: "https://example.com/login?user=x&pwd=" + pw, want: "url-query-secret"},
		{name: "slack webhook", value: "https://hooks.slack.com/services/T" + f.str(base32Chars, 8) + "/B" + f.str(base32Chars, 8) + "/" + f.str(base62Chars, 24), want: "webhook-url"},
		{name: "discord webhook", value: "https://discord.com/api/webhooks/" + f.str(digitChars, 18) + "/" + f.str(b64URLChars, 68), want: "webhook-url"},
		{name: "teams webhook", value: "https://contoso.webhook.office.com/webhookb2/" + f.str(hexChars, 32), want: "webhook-url"},

		// Random strings. The entropy detector misses a few in a hundred
		// (TestValueRandom), so these come from their own generator: cases
		// added elsewhere must not change them.
		{name: "aws secret access key", value: rnd.str(b64StdChars, 40), want: "high-entropy"},
		{name: "base62 32", value: rnd.str(base62Chars, 32), want: "high-entropy"},
		{name: "base62 24", value: rnd.str(base62Chars, 24), want: "high-entropy"},
		{name: "base64 of 32 bytes", value: base64.StdEncoding.EncodeToString(rnd.bytes(32)), want: "high-entropy"},
		{name: "base64url of 48 bytes", value: base64.RawURLEncoding.EncodeToString(rnd.bytes(48)), want: "high-entropy"},
		{name: "azure connection string", value: "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + base64.StdEncoding.EncodeToString(rnd.bytes(64)) + ";EndpointSuffix=core.windows.net", want: "field-secret"},
		{name: "random in a flag", value: "--api-key " + rnd.str(base62Chars, 40), want: "high-entropy"},
		{name: "base64 of a long random password", value: base64.StdEncoding.EncodeToString([]byte(rnd.str(base62Chars, 24))), want: "high-entropy"},

		// Ordinary values.
		{name: "empty"},
		{name: "path list", value: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/snap/bin"},
		{name: "path list home", value: "/home/alice/.local/bin:/home/alice/go/bin:/home/alice/.nvm/versions/node/v20.11.0/bin:/usr/bin"},
		{name: "path list nix", value: "/nix/store/" + f.str("0123456789abcdfghijklmnpqrsvwxyz", 32) + "-bash-5.2-p26/bin:/run/current-system/sw/bin"},
		{name: "home", value: "/home/alice"},
		{name: "home macos", value: "/Users/Alice"},
		{name: "tmpdir macos", value: "/var/folders/2w/" + f.str("abcdefghijklmnopqrstuvwxyz0123456789", 28) + "gn/T/"},
		{name: "ssh auth sock", value: "/tmp/ssh-XXXXabcd/agent.123"},
		{name: "ssh auth sock random", value: "/tmp/ssh-" + f.str(base62Chars, 12) + "/agent.48211"},
		{name: "ssh auth sock macos", value: "/private/tmp/com.apple.launchd." + f.str(base62Chars, 10) + "/Listeners"},
		{name: "xdg runtime dir", value: "/run/user/1000"},
		{name: "xdg data dirs", value: "/usr/share/ubuntu:/usr/local/share/:/usr/share/:/var/lib/snapd/desktop"},
		{name: "java home", value: "/Library/Java/JavaVirtualMachines/temurin-17.jdk/Contents/Home"},
		{name: "path with spaces", value: "/Applications/Visual Studio Code.app/Contents/Resources/app/extensions/git/dist/askpass.sh"},
		{name: "path with spaces and version", value: "/Users/alice/Library/Application Support/JetBrains/IntelliJIdea2023.3/options"},
		{name: "relative path", value: "node_modules/.bin:src/main/java"},
		{name: "ls colors", value: "rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:do=01;35:bd=40;33;01:cd=40;33;01:or=40;31;01:mi=00:su=37;41:sg=30;43:ca=30;41:tw=30;42:ow=34;42:st=37;44:ex=01;32:*.tar=01;31:*.tgz=01;31:*.zip=01;31:*.jpg=01;35:*.png=01;35:"},
		{name: "bsd lscolors", value: "Gxfxcxdxbxegedabagacad"},
		{name: "uuid", value: "6ba7b810-9dad-11d1-80b4-00c04fd430c8"},
		{name: "term session id", value: "w0t0p0:6BA7B810-9DAD-11D1-80B4-00C04FD430C8"},
		{name: "windows terminal profile", value: "{61c54bbd-c2c6-5271-96e7-009a87ff44bf}"},
		{name: "git sha", value: f.str(hexChars, 40)},
		{name: "sha256", value: f.str(hexChars, 64)},
		{name: "mixed case hex", value: strings.ToUpper(f.str(hexChars, 20)) + f.str(hexChars, 20)},
		{name: "docker digest", value: "ghcr.io/envsieve/envsieve@sha256:" + f.str(hexChars, 64)},
		{name: "subresource integrity", value: "sha512-" + base64.StdEncoding.EncodeToString(f.bytes(64))},
		{name: "ssh ed25519 public key", value: "ssh-ed25519 " + f.sshKey("ssh-ed25519", 32) + " alice@laptop"},
		{name: "ssh rsa public key", value: "ssh-rsa " + f.sshKey("ssh-rsa", 200)},
		{name: "known hosts", value: "github.com ecdsa-sha2-nistp256 " + f.sshKey("ecdsa-sha2-nistp256", 65)},
		{name: "certificate", value: f.pem("CERTIFICATE", "\n")},
		{name: "public key", value: f.pem("PUBLIC KEY", "\n")},
		{name: "version", value: "1.26.8"},
		{name: "version v", value: "v20.11.0"},
		{name: "version pre-release", value: "1.2.3-rc.1+build.5"},
		{name: "version beta", value: "3.5.0beta17"},
		{name: "locale", value: "en_US.UTF-8"},
		{name: "locale c", value: "C.UTF-8"},
		{name: "locale modifier", value: "de_DE@euro"},
		{name: "term", value: "xterm-256color"},
		{name: "colorterm", value: "truecolor"},
		{name: "proxy", value: "https://proxy.corp:3128"},
		{name: "proxy with user", value: "http://alice@proxy.corp:3128"},
		{name: "proxy empty password", value: "http://alice:@proxy.corp:3128"},
		{name: "no proxy", value: "localhost,127.0.0.1,.corp.example.com,10.0.0.0/8"},
		{name: "repo url", value: "https://github.com/envsieve/envsieve.git"},
		{name: "ssh url", value: "ssh://git@github.com:22/envsieve/envsieve.git"},
		{name: "scp url", value: "git@github.com:envsieve/envsieve.git"},
		{name: "at sign in path", value: "http://localhost:8080/@alice:smith"},
		{name: "npm scope", value: "https://registry.npmjs.org/@scope%2fpkg"},
		{name: "harmless query", value: "https://example.com/search?q=token&page=2&key="},
		{name: "url without scheme", value: "://user:pass@host"},
		{name: "slack page", value: "https://hooks.slack.com/"},
		{name: "discord page", value: "https://discord.com/channels/123"},
		{name: "email", value: "alice.smith+git@example.com"},
		{name: "name", value: "Alice Smith"},
		{name: "ssh command", value: "ssh -i ~/.ssh/id_ed25519"},
		{name: "ssh command options", value: "ssh -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=/dev/null -i /home/alice/.ssh/deploy_key_2024"},
		{name: "base64 of a short word", value: base64.StdEncoding.EncodeToString([]byte("hello"))},
		{name: "base64 of a short phrase", value: base64.StdEncoding.EncodeToString([]byte("hello world"))},
		{name: "word password", value: "password"},
		{name: "word secret", value: "secret"},
		{name: "digits", value: "1234567890123456789012345678901234567890"},
		{name: "prompt", value: `\[\e[1;32m\]\u@\h\[\e[0m\]:\[\e[1;34m\]\w\[\e[0m\]\$ `},
		{name: "exported function", value: "() {  echo hi\n}"},
		{name: "goflags", value: "-mod=mod -trimpath"},
		{name: "dbus", value: "unix:path=/run/user/1000/bus"},
		{name: "display", value: ":0"},
		{name: "lessopen", value: "| /usr/bin/lesspipe %s"},
		{name: "user agent", value: "npm/10.2.4 node/v20.11.0 darwin arm64 workspaces/false"},
		{name: "branch", value: "feature/ABC-1234-add-new-login-flow"},
		{name: "branch fix", value: "fix/JIRA-4411-Handle-null-pointer-in-parser"},
		{name: "pod name", value: "my-app-deployment-5d8f7b9c4d-x2k4p"},
		{name: "camel identifier", value: "GitHubActionsRunner2024"},
		{name: "camel identifier long", value: "ThisIsAVeryLongCamelCaseIdentifier2"},
		{name: "device", value: "iPhone14ProMaxSimulator"},
		{name: "toolbox", value: "JetBrains-Toolbox-2-1-3-18901"},
		{name: "base36 id", value: f.str("abcdefghijklmnopqrstuvwxyz0123456789", 30)},

		// Near misses of the token formats.
		{name: "ghp short", value: "ghp_test"},
		{name: "ghp words", value: "ghp_is_a_prefix_of_github_personal_access_tokens"},
		{name: "ghp inside a word", value: "xghp_" + f.str("abcdefghijklmnopqrstuvwxyz", 36)},
		{name: "sk words", value: "sk-some-long-hyphenated-name-for-a-thing"},
		{name: "sk learn", value: "sk-learn"},
		{name: "akia short", value: "AKIAEXAMPLE"},
		{name: "akia too long", value: "AKIA" + f.str("ABCDEFGHIJKLMNOPQRSTUVWXYZ", 20)},
		{name: "hf words", value: "hf_hub_cache_directory_for_transformers"},
		{name: "stripe publishable", value: "pk_live_" + f.str("abcdefghijklmnopqrstuvwxyz", 24)},
		{name: "sendgrid words", value: "SG.example.com"},
		{name: "twilio account sid", value: "AC" + f.str(hexChars, 32)},
		// Not JWTs, but base64 of JSON is as random as any key.
		{name: "jwt-like header only", value: jwtHeader, want: "high-entropy"},
		{name: "jwt-like two parts", value: jwtHeader + "." + jwtPayload, want: "high-entropy"},
		{name: "jwt short header", value: "eyJhbGci.e30.x"},
		{name: "pem begin only", value: "-----BEGIN"},
		{name: "pem unterminated", value: "-----BEGIN PRIVATE KEY"},
	}
}

func TestValue(t *testing.T) {
	for _, tt := range valueCases() {
		t.Run(tt.name, func(t *testing.T) {
			kind, ok := Value(tt.value)
			if kind != tt.want || ok != (tt.want != "") {
				// Never print the value: it may be shaped like a secret.
				t.Errorf("Value(%s) = %q, %v, want %q, %v", tt.name, kind, ok, tt.want, tt.want != "")
			}
		})
	}
}

// randomMissBounds are the most random strings, per alphabet and length, that
// the entropy detector may miss; Value and Scan are held to the same bounds.
var randomMissBounds = []struct {
	alphabet string
	n        int
	maxMiss  float64
}{
	{base62Chars, 20, 0.08},
	{base62Chars, 32, 0.03},
	{b64StdChars, 40, 0.02},
	{b64URLChars, 64, 0.01},
}

// TestValueRandom checks the entropy detector on many random strings, and
// the rate at which it misses them.
func TestValueRandom(t *testing.T) {
	f := newFaker()
	for _, tt := range randomMissBounds {
		const runs = 2000
		missed := 0
		for range runs {
			if _, ok := Value(f.str(tt.alphabet, tt.n)); !ok {
				missed++
			}
		}
		if rate := float64(missed) / runs; rate > tt.maxMiss {
			t.Errorf("Value missed %.1f%% of random strings of %d bytes from %d characters, want at most %.1f%%", 100*rate, tt.n, len(tt.alphabet), 100*tt.maxMiss)
		} else {
			t.Logf("missed %.1f%% of random strings of %d bytes from %d characters", 100*rate, tt.n, len(tt.alphabet))
		}
	}
}

// TestValueOrdinaryShapes checks values of the safe base set whose shape is
// fixed but whose content is random, over many draws: one lucky draw proves
// little.
func TestValueOrdinaryShapes(t *testing.T) {
	const lowerDigits = "abcdefghijklmnopqrstuvwxyz0123456789"
	f := newFaker()
	shapes := []struct {
		name string
		make func() string
	}{
		{"macos ssh auth sock", func() string {
			return "/private/tmp/com.apple.launchd." + f.str(base62Chars, 10) + "/Listeners"
		}},
		{"macos display", func() string {
			return "/private/tmp/com.apple.launchd." + f.str(base62Chars, 10) + "/org.xquartz:0"
		}},
		{"openssh agent dir", func() string {
			return "/tmp/ssh-" + f.str(base62Chars, 12) + "/agent." + f.str(digitChars, 5)
		}},
		{"openssh agent socket", func() string {
			return "/home/alice/.ssh/agent/s." + f.str(base62Chars, 10) + ".agent." + f.str(base62Chars, 10)
		}},
		{"macos tmpdir", func() string {
			return "/var/folders/" + f.str(lowerDigits, 2) + "/" + f.str(lowerDigits, 28) + "gn/T/"
		}},
		{"vscode socket", func() string {
			return "/run/user/1000/vscode-git-" + f.str(hexChars, 10) + ".sock"
		}},
		{"tmux", func() string {
			return "/tmp/tmux-1000/default," + f.str(digitChars, 6) + ",0"
		}},
		{"iterm session", func() string {
			return "w0t0p0:" + strings.ToUpper(f.str(hexChars, 8)+"-"+f.str(hexChars, 4)+"-"+f.str(hexChars, 4)+"-"+f.str(hexChars, 4)+"-"+f.str(hexChars, 12))
		}},
	}
	for _, shape := range shapes {
		t.Run(shape.name, func(t *testing.T) {
			for range 1000 {
				if kind, ok := Value(shape.make()); ok {
					t.Fatalf("Value(%s) = %q, want not a credential", shape.name, kind)
				}
			}
		})
	}
}

// TestValueLinearTime feeds Value long values built to make a careless
// detector rescan the rest of the value at every step.
func TestValueLinearTime(t *testing.T) {
	// 128 KiB, the longest string the kernel passes to a program. Linear
	// work on it takes a few milliseconds (tens under the race detector);
	// quadratic work takes seconds. The bound is generous for a loaded CI
	// machine, and a run is retried twice before the test fails.
	const n = 128 << 10
	const bound = 250 * time.Millisecond
	for _, unit := range []string{
		"sk-", "sk-ant-", "glpat-", "xoxb-", "SG.", "github_pat_", "hf_",
		"eyJ-", "eyJ.", "eyJa.", "a://", "a://b?", "a://b?c=&",
		"-----BEGIN ", "-----BEGIN -----", "a/", "A1b/", "ab", "Ab1",
	} {
		value := strings.Repeat(unit, n/len(unit))
		var took time.Duration
		for range 3 {
			start := time.Now()
			Value(value)
			if took = time.Since(start); took < bound {
				break
			}
		}
		if took >= bound {
			t.Errorf("Value(%q repeated to %d bytes) took %v, want < %v", unit, len(value), took, bound)
		}
	}
}

func TestValueDoesNotAllocate(t *testing.T) {
	for _, tt := range valueCases() {
		if n := testing.AllocsPerRun(10, func() { Value(tt.value) }); n != 0 {
			t.Errorf("Value(%s) allocates %v times, want 0", tt.name, n)
		}
	}
}

func FuzzValue(f *testing.F) {
	for _, tt := range valueCases() {
		f.Add(tt.value)
	}
	known := map[Kind]bool{}
	for _, r := range tokenRules {
		known[r.kind] = true
	}
	for _, k := range []Kind{"jwt", "pem-private-key", "url-password", "url-query-secret", "webhook-url", "field-secret", "high-entropy"} {
		known[k] = true
	}
	f.Fuzz(func(t *testing.T, value string) {
		kind, ok := Value(value)
		if ok != (kind != "") || ok && !known[kind] {
			t.Fatalf("Value = %q, %v: want a known kind exactly when ok", kind, ok)
		}

		// Hex digits are identifiers, and lower-case words are words,
		// whatever their arrangement.
		hex := []byte(value)
		words := []byte(value)
		for i, c := range []byte(value) {
			hex[i] = hexChars[c%16]
			words[i] = "abcdefghijklmnopqrstuvwxyz "[c%27]
		}
		if kind, ok := Value(string(hex)); ok {
			t.Fatalf("Value(hex digits) = %q, want not a credential", kind)
		}
		if kind, ok := Value(string(words)); ok {
			t.Fatalf("Value(lower-case words) = %q, want not a credential", kind)
		}
	})
}

// typicalValues are values of the kind that fill an environment.
var typicalValues = []string{
	"/usr/local/bin:/usr/bin:/bin",
	"/home/alice",
	"en_US.UTF-8",
	"xterm-256color",
	"/tmp/ssh-XXXXabcd/agent.123",
	"6ba7b810-9dad-11d1-80b4-00c04fd430c8",
	"https://proxy.corp:3128",
	"ssh -i ~/.ssh/id_ed25519",
	"alice.smith@example.com",
	"/run/user/1000",
}

func BenchmarkValue(b *testing.B) {
	b.Run("typical", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, v := range typicalValues {
				Value(v)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(typicalValues)), "ns/value")
	})
	f := newFaker()
	for _, bm := range []struct{ name, value string }{
		{"innocent 30 bytes", "/home/alice/.config/envsieve/x"},
		{"path list", "/home/alice/.local/bin:/home/alice/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		{"identifier", "GitHubActionsRunner2024"},
		{"github token", "ghp_" + f.str(base62Chars, 36)},
		{"random 40", f.str(b64StdChars, 40)},
		{"pem private key", f.pem("PRIVATE KEY", "\n")},
		{"certificate", f.pem("CERTIFICATE", "\n")},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bm.value)))
			for b.Loop() {
				Value(bm.value)
			}
		})
	}
}
