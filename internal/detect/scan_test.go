package detect

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// As in value_test.go, every credential is built from a prefix and a
// pseudo-random tail, and failure messages name the case, the kinds and the
// offsets, never any part of the text.

// scanAll returns the findings of Scan on text with the options.
func scanAll(text string, opt ScanOptions) []Finding {
	var fs []Finding
	Scan([]byte(text), opt, func(f Finding) bool {
		fs = append(fs, f)
		return true
	})
	return fs
}

// describe shows findings by offsets and kinds only.
func describe(fs []Finding) string {
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s[%d:%d]", f.Kind, f.Start, f.End)
	}
	return "[" + b.String() + "]"
}

// A secret is a credential in a scanCase: the text holds it once.
type secret struct {
	kind  Kind
	value string
}

type scanCase struct {
	name string
	text string
	want []secret // in order
}

func scanCases() []scanCase {
	f := newFaker()
	ghp := "ghp_" + f.str(base62Chars, 36)
	slack := "xoxe.xoxp-1-" + f.str(base62Chars+"-", 140)
	glpat := "glpat-" + f.str(b64URLChars, 20)
	jwt := b64url(`{"alg":"HS256","typ":"JWT"}`) + "." + b64url(`{"sub":"1234567890","iat":1516239022}`) + "." + f.str(b64URLChars, 43)
	pw := f.str(base62Chars, 16)
	aws := "AKIA" + f.str(base32Chars, 16)
	awsSecret := f.str(b64StdChars, 40)
	random := base64.StdEncoding.EncodeToString(f.bytes(30))
	padded := base64.StdEncoding.EncodeToString(f.bytes(31)) // ends in '='
	key := f.pem("RSA PRIVATE KEY", "\n")
	key = key[:len(key)-1] // the block ends at its last dash
	escapedKey := f.pem("PRIVATE KEY", `\n`)
	escapedKey = escapedKey[:len(escapedKey)-2]
	cert := f.pem("CERTIFICATE", "\n")
	hex32 := f.str(hexChars, 32)
	uuid := f.str(hexChars, 8) + "-" + f.str(hexChars, 4) + "-" + f.str(hexChars, 4) + "-" + f.str(hexChars, 4) + "-" + f.str(hexChars, 12)
	lowerDigits := f.str("abcdefghijklmnopqrstuvwxyz0123456789", 24)
	slackPath := "T" + f.str(base32Chars, 8) + "/B" + f.str(base32Chars, 8) + "/" + f.str(base62Chars, 24)

	return []scanCase{
		// Known formats in their usual surroundings.
		{name: "export", text: "export GITHUB_TOKEN=" + ghp + "\n", want: []secret{{"github-token", ghp}}},
		{name: "json", text: `{"token": "` + ghp + `", "user": "alice"}`, want: []secret{{"github-token", ghp}}},
		{name: "yaml", text: "auth:\n  gitlab: " + glpat + "\n  user: alice\n", want: []secret{{"gitlab-token", glpat}}},
		{name: "header", text: "> Authorization: Bearer " + jwt + "\r\n> Accept: */*\r\n", want: []secret{{"jwt", jwt}}},
		{name: "flag", text: "$ gh api --token=" + ghp + " /user", want: []secret{{"github-token", ghp}}},
		{name: "two tokens", text: "A=" + ghp + " B=" + glpat, want: []secret{{"github-token", ghp}, {"gitlab-token", glpat}}},
		{name: "aws pair", text: "aws_access_key_id = " + aws + "\naws_secret_access_key = " + awsSecret + "\n", want: []secret{{"aws-access-key-id", aws}, {"high-entropy", awsSecret}}},
		{name: "token in url", text: "remote: https://oauth2:" + glpat + "@gitlab.com/group/repo.git", want: []secret{{"gitlab-token", glpat}}},
		{name: "slack rotating", text: "SLACK=" + slack + ";", want: []secret{{"slack-token", slack}}},
		{name: "go source", text: "\tclient := github.NewClient(\"" + ghp + "\")\n", want: []secret{{"github-token", ghp}}},
		{name: "text at both ends", text: ghp, want: []secret{{"github-token", ghp}}},

		// PEM blocks.
		{name: "pem", text: "$ cat id_rsa\n" + key + "\n$ ls\n", want: []secret{{"pem-private-key", key}}},
		{name: "pem escaped", text: `{"private_key": "` + escapedKey + `\n", "client_email": "x@example.iam.gserviceaccount.com"}`, want: []secret{{"pem-private-key", escapedKey}}},
		{name: "pem after certificate", text: cert + key + "\n", want: []secret{{"pem-private-key", key}}},
		{name: "certificate", text: "$ cat cert.pem\n" + cert, want: nil},
		{name: "pem without end", text: "key:\n" + strings.Split(key, "-----END")[0] + "next: value\n", want: []secret{{"pem-private-key", strings.TrimSuffix(strings.Split(key, "-----END")[0], "\n")}}},
		{name: "pem header alone", text: `if strings.HasPrefix(s, "-----BEGIN PRIVATE KEY-----") {`, want: []secret{{"pem-private-key", "-----BEGIN PRIVATE KEY-----"}}},

		// URLs.
		{name: "url password", text: "DATABASE_URL=postgres://app:" + pw + "@db.internal:5432/app?sslmode=disable", want: []secret{{"url-password", pw}}},
		{name: "url empty user", text: "connecting to redis://:" + pw + "@cache:6379/0 ...", want: []secret{{"url-password", pw}}},
		{name: "url query secret", text: "GET https://api.example.com/v1/items?page=2&access_token=" + pw + "&sort=asc HTTP/1.1", want: []secret{{"url-query-secret", pw}}},
		{name: "slack webhook", text: "curl -X POST https://hooks.slack.com/services/" + slackPath + " -d @msg.json", want: []secret{{"webhook-url", slackPath}}},

		// Unknown secrets.
		{name: "random", text: "API_KEY=" + random + "\n", want: []secret{{"high-entropy", random}}},
		{name: "random with padding", text: `secret: "` + padded + `"`, want: []secret{{"high-entropy", padded}}},
		{name: "random in a flag", text: "./deploy --key " + random + " --verbose", want: []secret{{"high-entropy", random}}},
		{name: "hex under a sensitive name", text: "export TWILIO_AUTH_TOKEN=" + hex32 + "\n", want: []secret{{"named-secret", hex32}}},
		{name: "hex in json", text: `{"auth_token": "` + hex32 + `"}`, want: []secret{{"named-secret", hex32}}},
		{name: "uuid under a sensitive name", text: "HEROKU_API_KEY=" + uuid, want: []secret{{"named-secret", uuid}}},
		{name: "lower case under a sensitive name", text: "password: " + lowerDigits + "\n", want: []secret{{"named-secret", lowerDigits}}},
		{name: "random under a sensitive name", text: "--api-key=" + random + " -v", want: []secret{{"high-entropy", random}}},
		{name: "known token under a sensitive name", text: "token: " + ghp, want: []secret{{"github-token", ghp}}},
		{name: "azure connection string", text: "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + padded + ";EndpointSuffix=core.windows.net", want: []secret{{"high-entropy", padded}}},
	}
}

func TestScan(t *testing.T) {
	for _, tt := range scanCases() {
		t.Run(tt.name, func(t *testing.T) {
			var want []Finding
			for _, s := range tt.want {
				i := strings.Index(tt.text, s.value)
				if i < 0 {
					t.Fatalf("bad case: secret %s not in the text", s.kind)
				}
				want = append(want, Finding{Start: i, End: i + len(s.value), Kind: s.kind})
			}
			got := scanAll(tt.text, ScanOptions{})
			if describe(got) != describe(want) {
				t.Errorf("Scan(%s) = %s, want %s", tt.name, describe(got), describe(want))
			}
		})
	}
}

// ordinaryTexts are what an agent needs to read: none of them holds a
// credential.
func ordinaryTexts() []struct{ name, text string } {
	f := newFaker()
	hex := func(n int) string { return f.str(hexChars, n) }
	uuid := func() string { return hex(8) + "-" + hex(4) + "-" + hex(4) + "-" + hex(4) + "-" + hex(12) }
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(f.bytes(n)) }
	return []struct{ name, text string }{
		{"git log", "commit " + hex(40) + "\nMerge: " + hex(7) + " " + hex(7) + "\nAuthor: Alice Smith <alice@example.com>\nDate:   Mon Jan 15 10:23:45 2024 +0100\n\n    Fix the parser (#123)\n"},
		{"git log oneline", hex(7) + " (HEAD -> main, origin/main) Add the scanner\n" + hex(7) + " Merge pull request #42 from alice/feature-x\n"},
		{"git diff", "diff --git a/internal/detect/scan.go b/internal/detect/scan.go\nindex " + hex(7) + ".." + hex(7) + " 100644\n--- a/internal/detect/scan.go\n+++ b/internal/detect/scan.go\n@@ -1,7 +1,9 @@ package detect\n"},
		{"git push", "To github.com:envsieve/envsieve.git\n   " + hex(7) + ".." + hex(7) + "  main -> main\n"},
		{"go download", "go: downloading golang.org/x/sys v0.0.0-20231108232855-" + hex(12) + "\ngo: downloading github.com/rogpeppe/go-internal v1.16.0\n"},
		{"go.sum", "github.com/creack/pty v1.1.24 h1:" + b64(32) + "\ngithub.com/creack/pty v1.1.24/go.mod h1:" + b64(32) + "\n"},
		{"go.mod", "require (\n\tgolang.org/x/exp v0.0.0-20231108232855-" + hex(12) + " // indirect\n\tgithub.com/spf13/cobra v1.10.2\n)\n"},
		{"go test", "=== RUN   TestScan/url_password\n--- PASS: TestScan/url_password (0.00s)\nok  \tgithub.com/envsieve/envsieve/internal/detect\t0.069s\tcoverage: 91.3% of statements\n"},
		{"go vet", "/root/go/pkg/mod/golang.org/x/tools@v0.17.0/go/analysis/passes/printf/printf.go:123:4: fmt.Sprintf format %d has arg of wrong type\n"},
		{"go build -x", "WORK=/tmp/go-build3729402717\nmkdir -p $WORK/b001/\n/usr/local/go/pkg/tool/linux_amd64/compile -o $WORK/b001/_pkg_.a -trimpath \"$WORK/b001=>\" -p main -lang=go1.26 -complete -buildid " + f.str(b64URLChars, 20) + "/" + f.str(b64URLChars, 20) + " -goversion go1.26.8\n"},
		{"npm install", "npm warn deprecated inflight@1.0.6: This module is not supported, and leaks memory.\n\nadded 1423 packages, and audited 1424 packages in 32s\n\n214 packages are looking for funding\n  run `npm fund` for details\n"},
		{"package-lock", `    "node_modules/lodash": {` + "\n" + `      "version": "4.17.21",` + "\n" + `      "resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz",` + "\n" + `      "integrity": "sha512-` + b64(64) + `",` + "\n"},
		{"yarn.lock", "lodash@^4.17.21:\n  version \"4.17.21\"\n  integrity sha512-" + b64(64) + "\n"},
		{"docker pull", "20-alpine: Pulling from library/node\n" + hex(12) + ": Pull complete\nDigest: sha256:" + hex(64) + "\nStatus: Downloaded newer image for node:20-alpine\ndocker.io/library/node:20-alpine\n"},
		{"docker image digest", "ghcr.io/envsieve/envsieve@sha256:" + hex(64)},
		{"docker build", "#7 sha256:" + hex(64) + " 1.05MB / 3.40MB 0.3s\n#8 [2/6] RUN npm ci --omit=dev\n#8 DONE 12.4s\n"},
		{"pytest", "tests/test_auth.py::TestClient::test_token_refresh PASSED                 [ 42%]\n============ 12 passed, 1 skipped in 3.21s ============\n"},
		{"makefile", "echo \"Building envsieve $(VERSION)\"\ngo build -ldflags \"-X main.version=v1.4.2-3-g" + hex(7) + "\" -o bin/envsieve ./cmd/envsieve\n"},
		{"json config", `{"name": "envsieve", "version": "1.2.3", "port": 8080, "logLevel": "debug", "id": "` + uuid() + `"}`},
		{"log with ids", "2024-01-15T10:23:45.123Z INFO request_id=" + uuid() + " trace_id=" + hex(32) + " span_id=" + hex(16) + " status=200\n"},
		{"uuid upper case", strings.ToUpper(uuid())},
		{"css", "a { color: #1e90ff; background: #FAFAFA; border-color: #c0ffee }"},
		{"long words", "Pneumonoultramicroscopicsilicovolcanoconiosis internationalization antidisestablishmentarianism"},
		{"semver", "v1.2.3-beta.1+exp.sha.5114f85 2.0.0-rc.1 1.26.8"},
		{"paths", "/home/alice/projects/envsieve/internal/detect/scan_test.go:123:45\nnode_modules/@babel/core/lib/transformation/normalize-opts.js\nsrc/main/java/com/example/service/UserAccountService2Impl.java\n"},
		{"windows path", `C:\Users\Alice\AppData\Local\Temp\go-build3729402717\b001\exe\main.exe`},
		{"base64 of english", base64.StdEncoding.EncodeToString([]byte("Please find the release notes attached below")) + " " + base64.StdEncoding.EncodeToString([]byte("Hello, World! This is only a test."))},
		{"urls", "https://github.com/envsieve/envsieve/pull/123#issuecomment-1876543210\nhttps://registry.npmjs.org/@types%2fnode/-/node-20.11.5.tgz\ngit@github.com:envsieve/envsieve.git\nhttps://proxy.golang.org/golang.org/x/sys/@v/v0.49.0.zip\n"},
		{"url with user", "https://alice@github.com/envsieve/envsieve.git"},
		{"url empty password", "http://alice:@proxy.corp:3128"},
		{"url placeholder passwords", "postgres://app:${DB_PASSWORD}@db:5432/app\nGet \"http://user:***@example.com\"\nredis://:[MASKED:0a1b2c3d]@cache:6379\nredis://:[HIDDEN:0a1b2c3d]@cache:6379\nmysql://root:<password>@localhost/db\n"},
		{"public keys by name", `PublicKey: "04` + hex(128) + `", peer_public_key = "` + hex(64) + `"`},
		{"ssh public key", "ssh-ed25519 " + f.sshKey("ssh-ed25519", 32) + " alice@laptop"},
		{"known hosts", "github.com ecdsa-sha2-nistp256 " + f.sshKey("ecdsa-sha2-nistp256", 65)},
		{"certificate", f.pem("CERTIFICATE", "\n")},
		{"public key", f.pem("PUBLIC KEY", "\n")},
		{"cargo", "   Compiling serde v1.0.195\n    Finished `release` profile [optimized] target(s) in 1m 02s\n"},
		{"kubectl", "pod/my-app-deployment-5d8f7b9c4d-x2k4p created\n"},
		{"identifiers", "GitHubActionsRunner2024 ThisIsAVeryLongCamelCaseIdentifier2 iPhone14ProMaxSimulator"},
		{"near misses", "ghp_is_a_prefix_of_github_personal_access_tokens sk-some-long-hyphenated-name-for-a-thing AKIAEXAMPLE"},
		{"hex under names that are not sensitive", `{"private_key_id": "` + hex(40) + `", "request_id": "` + hex(32) + `", "commit_sha": "` + hex(40) + `"}`},
		{"names without secrets", "secretKeyRef: db-credentials-2024\ntoken: 00000000000000000000000000000000\npassword: ${DB_PASSWORD}\napi_key: <your-api-key-here>\nKEY_FILE=/etc/keys/server-2024.key\nprivate_key: /home/alice/.ssh/id_ed25519\n"},
		{"cache keys", "Cache restored from key: Linux-node-modules-" + hex(64) + "\n    key: macOS-go-" + hex(64) + "\nrelease_2024-01-15_" + hex(8) + "\n"},
		{"data url", `.icon { background: url("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA` + b64(120) + `"); }`},
		{"csp nonce", "content-security-policy: script-src 'self' 'nonce-" + b64(16) + "'"},
		{"pem in go source", "const begin = \"-----BEGIN \"\nend := strings.Index(v, \"-----\")\n"},
	}
}

func TestScanOrdinary(t *testing.T) {
	for _, tt := range ordinaryTexts() {
		t.Run(tt.name, func(t *testing.T) {
			if got := scanAll(tt.text, ScanOptions{}); len(got) > 0 {
				t.Errorf("Scan(%s) = %s, want nothing", tt.name, describe(got))
			}
		})
	}
}

// TestScanAgreesWithValue checks that Scan finds something in a value
// exactly when Value does.
func TestScanAgreesWithValue(t *testing.T) {
	for _, tt := range valueCases() {
		t.Run(tt.name, func(t *testing.T) {
			got := scanAll(tt.value, ScanOptions{})
			if (len(got) > 0) != (tt.want != "") {
				t.Errorf("Scan(%s) = %s, Value says %q", tt.name, describe(got), tt.want)
			}
		})
	}
}

// TestScanRandom checks the entropy detector inside text, and the rate at
// which it misses random strings there.
func TestScanRandom(t *testing.T) {
	f := newFaker()
	for _, tt := range randomMissBounds {
		const runs = 2000
		missed, partial := 0, 0
		for i := range runs {
			s := f.str(tt.alphabet, tt.n)
			text := []string{"key=", "  secret: '", `{"k":"`, "--api-key ", "X-Api-Key: "}[i%5] + s + []string{"\n", "'\n", `"}`, " --verbose", "\r\n"}[i%5]
			got := scanAll(text, ScanOptions{})
			start := strings.Index(text, s)
			switch {
			case len(got) == 1 && got[0].Start == start && got[0].End == start+len(s):
			case len(got) == 0 || got[len(got)-1].End <= start:
				missed++
			default:
				// Part of it: as bad as missing it, and worth knowing.
				missed++
				partial++
			}
		}
		if rate := float64(missed) / runs; rate > tt.maxMiss {
			t.Errorf("Scan missed %.1f%% of random strings of %d bytes from %d characters (%d found in part), want at most %.1f%%", 100*rate, tt.n, len(tt.alphabet), partial, 100*tt.maxMiss)
		} else {
			t.Logf("missed %.1f%% of random strings of %d bytes from %d characters (%d found in part)", 100*rate, tt.n, len(tt.alphabet), partial)
		}
	}
}

func TestScanOptions(t *testing.T) {
	f := newFaker()
	ghp := "ghp_" + f.str(base62Chars, 36)
	r16, r40 := f.str(base62Chars, 16), f.str(base62Chars, 40)
	text := "a=" + ghp + " b=" + r16 + " c=" + r40
	for _, tt := range []struct {
		name string
		opt  ScanOptions
		want []Kind
	}{
		{"defaults", ScanOptions{}, []Kind{"github-token", "high-entropy"}},
		{"no entropy", ScanOptions{NoEntropy: true}, []Kind{"github-token"}},
		{"short runs", ScanOptions{MinLen: 12}, []Kind{"github-token", "high-entropy", "high-entropy"}},
		{"impossible entropy", ScanOptions{MinEntropy: 1.01}, []Kind{"github-token"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []Kind
			for _, f := range scanAll(text, tt.opt) {
				got = append(got, f.Kind)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("Scan with %+v found %v, want %v", tt.opt, got, tt.want)
			}
		})
	}
}

func TestScanStops(t *testing.T) {
	f := newFaker()
	for _, tt := range []struct {
		name string
		text string
		opt  ScanOptions
	}{
		{"two tokens", "a=ghp_" + f.str(base62Chars, 36) + " b=glpat-" + f.str(b64URLChars, 20), ScanOptions{}},
		// Found by FuzzScan: a PEM header cut short by a random run.
		{"pem after a run", "0aA-----BEGIN PRIVATE KEY----- x0A", ScanOptions{MinLen: 2}},
	} {
		calls := 0
		Scan([]byte(tt.text), tt.opt, func(Finding) bool {
			calls++
			return false
		})
		if calls != 1 {
			t.Errorf("Scan(%s) called fn %d times, the first returning false, want 1", tt.name, calls)
		}
	}
}

func TestScanDoesNotAllocate(t *testing.T) {
	for _, tt := range scanCases() {
		text := []byte(tt.text)
		n := 0
		if allocs := testing.AllocsPerRun(10, func() {
			Scan(text, ScanOptions{}, func(Finding) bool { n++; return true })
		}); allocs != 0 {
			t.Errorf("Scan(%s) allocates %v times, want 0", tt.name, allocs)
		}
	}
}

// TestScanLinearTime feeds Scan a megabyte built to make a careless scanner
// rescan the rest of the text at every step.
func TestScanLinearTime(t *testing.T) {
	// Linear work on 1 MiB takes milliseconds (tens under the race
	// detector); quadratic work takes minutes. The bound is generous for a
	// loaded CI machine, and a run is retried twice before the test fails.
	const n = 1 << 20
	const bound = 2 * time.Second
	f := newFaker()
	for _, unit := range []string{
		"sk-", "sk-ant-", "glpat-", "xoxb-", "SG.", "github_pat_", "hf_", "AKIA", "e",
		"eyJ-", "eyJ.", "eyJa.", "eyJhbGciOiJI.", "a://", "a://b?", "a://b?c=&", "a://b?password=x&", "a://@", "a://a:b@",
		"https://hooks.slack.com/services/", "-----BEGIN ", "-----BEGIN -----", "-----BEGIN PRIVATE KEY-----", "-----END ", "-----BEGIN PRIVATE KEY-----\nAAAA\n",
		"a/", "A1b/", "ab", "Ab1", "Ab1.", "Ab1=", "/Ab1", "h1:", "=",
		"token=", "a=", "token: ", "\"api_key\": \"", "key:Ab1", "KEY=" + strings.Repeat("Ab1", 10) + " ",
		f.str(b64StdChars, 61), f.pem("PRIVATE KEY", "\n"), f.pem("CERTIFICATE", "\n"),
	} {
		text := []byte(strings.Repeat(unit, n/len(unit)))
		var took time.Duration
		for range 3 {
			start := time.Now()
			Scan(text, ScanOptions{}, func(Finding) bool { return true })
			Scan(text, ScanOptions{MinLen: 1}, func(Finding) bool { return true })
			if took = time.Since(start); took < bound {
				break
			}
		}
		if took >= bound {
			t.Errorf("Scan(a unit of %d bytes repeated to %d bytes) took %v, want < %v", len(unit), len(text), took, bound)
		}
	}
}

// checkFindings fails t unless the findings are in order, do not overlap,
// are not empty and lie within text.
func checkFindings(t *testing.T, text []byte, fs []Finding) {
	t.Helper()
	end := 0
	for _, f := range fs {
		if f.Start < end || f.End <= f.Start || f.End > len(text) || f.Kind == "" {
			t.Fatalf("Scan = %s in %d bytes: want ordered, non-overlapping, non-empty findings of a kind within the text", describe(fs), len(text))
		}
		end = f.End
	}
}

func FuzzScan(f *testing.F) {
	for _, tt := range scanCases() {
		f.Add([]byte(tt.text), uint8(0))
	}
	for _, tt := range ordinaryTexts() {
		f.Add([]byte(tt.text), uint8(1))
	}
	for _, tt := range valueCases() {
		f.Add([]byte(tt.value), uint8(2))
	}
	f.Fuzz(func(t *testing.T, text []byte, opts uint8) {
		opt := ScanOptions{NoEntropy: opts&1 != 0, MinLen: int(opts >> 4)}
		var fs []Finding
		Scan(text, opt, func(f Finding) bool {
			fs = append(fs, f)
			return true
		})
		checkFindings(t, text, fs)

		// Stopping early gives the first findings.
		if len(fs) > 1 {
			var first []Finding
			Scan(text, opt, func(f Finding) bool {
				first = append(first, f)
				return len(first) < 2
			})
			if describe(first) != describe(fs[:2]) {
				t.Fatalf("Scan stopped after two findings gave %s, want %s", describe(first), describe(fs[:2]))
			}
		}

		// Hex digits are identifiers, and lower-case words are words,
		// whatever their arrangement.
		hex := bytes.Clone(text)
		words := bytes.Clone(text)
		for i, c := range text {
			hex[i] = hexChars[c%16]
			words[i] = "abcdefghijklmnopqrstuvwxyz \n"[c%28]
		}
		if got := scanAll(string(hex), ScanOptions{}); len(got) > 0 {
			t.Fatalf("Scan(hex digits) = %s, want nothing", describe(got))
		}
		if got := scanAll(string(words), ScanOptions{}); len(got) > 0 {
			t.Fatalf("Scan(lower-case words) = %s, want nothing", describe(got))
		}
	})
}

// buildOutput returns about size bytes of typical output of builds and
// tests, without a secret, the same on every call.
func buildOutput(size int) []byte {
	f := faker{rand.New(rand.NewPCG(5, 6))}
	hex := func(n int) string { return f.str(hexChars, n) }
	b64 := func(n int) string { return base64.StdEncoding.EncodeToString(f.bytes(n)) }
	words := []string{"config", "server", "handler", "parser", "cache", "client", "token", "buffer", "router", "store", "index", "worker", "queue", "schema", "session"}
	word := func() string { return words[f.r.IntN(len(words))] }
	lines := []func() string{
		func() string {
			return "go: downloading github.com/" + word() + "/" + word() + " v1." + f.str(digitChars, 2) + ".3"
		},
		func() string { return "go: downloading golang.org/x/" + word() + " v0.0.0-20231108232855-" + hex(12) },
		func() string { return "github.com/" + word() + "/" + word() + " v1.2.3 h1:" + b64(32) },
		func() string {
			return "=== RUN   Test" + strings.ToUpper(word()[:1]) + word()[1:] + "/" + word() + "_" + f.str(digitChars, 2)
		},
		func() string {
			return "--- PASS: Test" + strings.ToUpper(word()[:1]) + word() + " (0.0" + f.str(digitChars, 1) + "s)"
		},
		func() string {
			return "ok  \tgithub.com/envsieve/envsieve/" + word() + "\t0.0" + f.str(digitChars, 2) + "s"
		},
		func() string {
			return "./internal/" + word() + "/" + word() + ".go:" + f.str(digitChars, 3) + ":" + f.str(digitChars, 2) + ": undefined: " + word()
		},
		func() string { return "commit " + hex(40) },
		func() string {
			return hex(7) + " Fix the " + word() + " when the " + word() + " is empty (#" + f.str(digitChars, 3) + ")"
		},
		func() string { return "index " + hex(7) + ".." + hex(7) + " 100644" },
		func() string { return `      "integrity": "sha512-` + b64(64) + `",` },
		func() string {
			return `      "resolved": "https://registry.npmjs.org/` + word() + `/-/` + word() + `-4.17.21.tgz",`
		},
		func() string { return "added 1423 packages, and audited 1424 packages in 32s" },
		func() string { return hex(12) + ": Pull complete" },
		func() string { return "Digest: sha256:" + hex(64) },
		func() string {
			return "tests/test_" + word() + ".py::test_" + word() + "_" + word() + " PASSED   [ " + f.str(digitChars, 2) + "%]"
		},
		func() string {
			return "2024-01-15T10:23:45.123Z INFO request_id=" + hex(8) + "-" + hex(4) + "-" + hex(4) + "-" + hex(4) + "-" + hex(12) + " status=200 path=/api/v1/" + word()
		},
		func() string {
			return "/root/go/pkg/mod/golang.org/x/tools@v0.17.0/go/analysis/passes/" + word() + "/" + word() + ".go:123:4: "
		},
		func() string { return "echo \"Building envsieve $(VERSION)\"" },
		func() string { return "   Compiling " + word() + " v1.0." + f.str(digitChars, 3) },
	}
	var b bytes.Buffer
	for b.Len() < size {
		b.WriteString(lines[f.r.IntN(len(lines))]())
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func TestBuildOutputIsOrdinary(t *testing.T) {
	text := buildOutput(256 << 10)
	var fs []Finding
	Scan(text, ScanOptions{}, func(f Finding) bool {
		fs = append(fs, f)
		return true
	})
	if len(fs) > 0 {
		t.Errorf("Scan(build output) = %s, want nothing", describe(fs[:min(len(fs), 10)]))
	}
}

func BenchmarkScan(b *testing.B) {
	f := newFaker()
	build := buildOutput(1 << 20)
	withSecrets := bytes.Clone(build)
	for i := 0; i < 100; i++ {
		withSecrets = append(withSecrets, "export GITHUB_TOKEN=ghp_"+f.str(base62Chars, 36)+"\nAPI_KEY="+f.str(b64StdChars, 40)+"\n"...)
	}
	for _, bm := range []struct {
		name string
		text []byte
	}{
		{"build output", build},
		{"build output with secrets", withSecrets},
		{"random base64", []byte(base64.StdEncoding.EncodeToString(f.bytes(1 << 19)))},
	} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bm.text)))
			for b.Loop() {
				Scan(bm.text, ScanOptions{}, func(Finding) bool { return true })
			}
		})
	}
}
