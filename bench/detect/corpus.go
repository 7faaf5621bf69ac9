package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"strings"
)

// Every credential here is FAKE: a real format's prefix and shape filled
// from a seeded pseudo-random generator. None was ever issued.

const (
	base62  = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	b64URL  = base62 + "-_"
	b64Std  = base62 + "+/"
	hexLow  = "0123456789abcdef"
	upper32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
	digits  = "0123456789"
	letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
)

// fake draws from a fixed pseudo-random sequence.
type fake struct{ r *rand.Rand }

func (g fake) str(alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.r.IntN(len(alphabet))]
	}
	return string(b)
}

func (g fake) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.r.Uint32())
	}
	return b
}

func (g fake) n(lo, hi int) int { return lo + g.r.IntN(hi-lo+1) }

func (g fake) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g fake) hex(n int) string { return g.str(hexLow, n) }

func (g fake) uuid() string {
	return g.hex(8) + "-" + g.hex(4) + "-4" + g.hex(3) + "-" + g.pick("8", "9", "a", "b") + g.hex(3) + "-" + g.hex(12)
}

func (g fake) b64(n int) string { return base64.StdEncoding.EncodeToString(g.bytes(n)) }

func (g fake) word() string {
	return g.pick("config", "server", "handler", "parser", "cache", "client", "session", "buffer",
		"router", "store", "index", "worker", "queue", "render", "schema", "request", "upload",
		"billing", "account", "metrics", "deploy", "search", "payment", "invoice", "report")
}

func (g fake) title() string { w := g.word(); return strings.ToUpper(w[:1]) + w[1:] }

func (g fake) pkg() string {
	return g.pick("github.com/", "golang.org/x/", "gitlab.com/acme/", "go.uber.org/", "k8s.io/") + g.word() + g.pick("", "/"+g.word(), "/v2")
}

func (g fake) semver() string { return fmt.Sprintf("%d.%d.%d", g.n(0, 5), g.n(0, 30), g.n(0, 20)) }

func (g fake) when() string {
	return fmt.Sprintf("2024-%02d-%02dT%02d:%02d:%02d.%03dZ", g.n(1, 12), g.n(1, 28), g.n(0, 23), g.n(0, 59), g.n(0, 59), g.n(0, 999))
}

// pem returns a PEM block of label around n random bytes, lines joined by nl.
func (g fake) pem(label string, n int, nl string) string {
	body := base64.StdEncoding.EncodeToString(g.bytes(n))
	var b strings.Builder
	b.WriteString("-----BEGIN " + label + "-----" + nl)
	for len(body) > 64 {
		b.WriteString(body[:64] + nl)
		body = body[64:]
	}
	b.WriteString(body + nl + "-----END " + label + "-----")
	return b.String()
}

func b64url(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// A provider makes fake credentials of one format.
type provider struct {
	name string
	make func(g fake) string
	vars []string // names it is usually found under
}

var providers = []provider{
	{"github-classic", func(g fake) string { return "ghp_" + g.str(base62, 36) }, []string{"GITHUB_TOKEN", "GH_TOKEN"}},
	{"github-fine-grained", func(g fake) string { return "github_pat_" + g.str(base62, 22) + "_" + g.str(base62, 59) }, []string{"GITHUB_TOKEN", "GITHUB_PAT"}},
	{"github-oauth", func(g fake) string { return "gho_" + g.str(base62, 36) }, []string{"GH_TOKEN", "oauth_token"}},
	{"gitlab", func(g fake) string { return "glpat-" + g.str(b64URL, 20) }, []string{"GITLAB_TOKEN", "CI_JOB_TOKEN"}},
	{"openai", func(g fake) string {
		if g.r.IntN(2) == 0 {
			return "sk-" + g.str(base62, 20) + "T3BlbkFJ" + g.str(base62, 20)
		}
		return "sk-proj-" + g.str(b64URL, 74) + "T3BlbkFJ" + g.str(b64URL, 74)
	}, []string{"OPENAI_API_KEY"}},
	{"anthropic", func(g fake) string { return "sk-ant-api03-" + g.str(b64URL, 93) + "AA" }, []string{"ANTHROPIC_API_KEY"}},
	{"slack-bot", func(g fake) string {
		return "xoxb-" + g.str(digits, g.n(10, 13)) + "-" + g.str(digits, g.n(10, 13)) + "-" + g.str(base62, 24)
	}, []string{"SLACK_BOT_TOKEN"}},
	{"slack-user", func(g fake) string {
		return "xoxp-" + g.str(digits, 12) + "-" + g.str(digits, 12) + "-" + g.str(digits, 13) + "-" + g.hex(32)
	}, []string{"SLACK_TOKEN"}},
	{"slack-app", func(g fake) string {
		return "xapp-1-A" + g.str(upper32, 10) + "-" + g.str(digits, 13) + "-" + g.hex(64)
	}, []string{"SLACK_APP_TOKEN"}},
	{"aws-key-id", func(g fake) string { return g.pick("AKIA", "ASIA") + g.str(upper32, 16) }, []string{"AWS_ACCESS_KEY_ID", "aws_access_key_id"}},
	{"aws-secret", func(g fake) string { return g.str(b64Std, 40) }, []string{"AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"}},
	{"google-api-key", func(g fake) string { return "AIza" + g.str(b64URL, 35) }, []string{"GOOGLE_API_KEY", "GEMINI_API_KEY"}},
	{"stripe-live", func(g fake) string { return g.pick("sk_live_", "rk_live_") + g.str(base62, g.n(24, 99)) }, []string{"STRIPE_SECRET_KEY"}},
	{"stripe-test", func(g fake) string { return "sk_test_" + g.str(base62, g.n(24, 99)) }, []string{"STRIPE_SECRET_KEY", "STRIPE_API_KEY"}},
	{"npm", func(g fake) string { return "npm_" + g.str(base62, 36) }, []string{"NPM_TOKEN", "NODE_AUTH_TOKEN"}},
	{"huggingface", func(g fake) string { return "hf_" + g.str(letters, 34) }, []string{"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"}},
	{"sendgrid", func(g fake) string { return "SG." + g.str(b64URL, 22) + "." + g.str(b64URL, 43) }, []string{"SENDGRID_API_KEY"}},
	{"twilio-api-key", func(g fake) string { return "SK" + g.hex(32) }, []string{"TWILIO_API_KEY"}},
	{"twilio-auth-token", func(g fake) string { return g.hex(32) }, []string{"TWILIO_AUTH_TOKEN"}},
	{"jwt", func(g fake) string {
		h := b64url(`{"alg":"` + g.pick("HS256", "RS256", "ES256") + `","typ":"JWT"}`)
		p := b64url(fmt.Sprintf(`{"sub":"%s","iss":"https://auth.example.com","iat":%d,"exp":%d}`, g.uuid(), 1700000000+g.n(0, 1e7), 1710000000+g.n(0, 1e7)))
		return h + "." + p + "." + g.str(b64URL, []int{43, 86}[g.r.IntN(2)])
	}, []string{"ACCESS_TOKEN", "ID_TOKEN"}},
	{"password", func(g fake) string {
		// What people choose: words, digits and a symbol or two.
		w := []string{"Summer", "Winter", "dragon", "Monkey", "sunshine", "Passw0rd", "letmein", "Football", "Tr0ub4dor", "correct", "horse", "battery", "staple"}
		return w[g.r.IntN(len(w))] + g.pick("", "_", "-", "!", "@", "#") + w[g.r.IntN(len(w))] + g.str(digits, g.n(1, 4)) + g.pick("", "!", "$", "&", "*", "?")
	}, []string{"DB_PASSWORD", "POSTGRES_PASSWORD", "password", "SMTP_PASS", "ADMIN_PASSWORD"}},
	{"generic-api-key", func(g fake) string {
		return g.str(g.pick(base62, b64URL), g.n(32, 64))
	}, []string{"API_KEY", "SERVICE_API_KEY", "apiKey", "X_API_KEY"}},
}

// pemProviders make whole blocks, placed on lines of their own.
var pemProviders = []provider{
	{"pem-rsa", func(g fake) string { return g.pem("RSA PRIVATE KEY", []int{1190, 2350}[g.r.IntN(2)], "\n") }, nil},
	{"pem-ec", func(g fake) string { return g.pem("EC PRIVATE KEY", 121, "\n") }, nil},
	{"pem-openssh", func(g fake) string { return g.pem("OPENSSH PRIVATE KEY", 400, "\n") }, nil},
	{"pem-pkcs8", func(g fake) string { return g.pem("PRIVATE KEY", 1218, "\n") }, nil},
}

// A corpus is text with labels.
type corpus struct {
	text     bytes.Buffer
	secrets  []label
	contexts []label
}

// sec marks a secret among the parts of a line.
type sec struct{ provider, value string }

// add writes parts (strings and secs) as one region of the given kind of
// line, labelling the secrets.
func (c *corpus) add(kind string, parts ...any) {
	start := c.text.Len()
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			c.text.WriteString(p)
		case sec:
			s := c.text.Len()
			c.text.WriteString(p.value)
			c.secrets = append(c.secrets, label{s, c.text.Len(), p.provider})
		default:
			panic(fmt.Sprintf("bad part %T", p))
		}
	}
	if c.text.Len() == 0 || c.text.Bytes()[c.text.Len()-1] != '\n' {
		c.text.WriteByte('\n')
	}
	c.contexts = append(c.contexts, label{start, c.text.Len(), kind})
}

func generate(seed uint64, size, per int) *corpus {
	g := fake{rand.New(rand.NewPCG(seed, 0xe5))}
	c := &corpus{}
	// The secrets, in a shuffled order, each to be placed after some
	// ordinary lines.
	type job struct {
		p   provider
		pem bool
	}
	var jobs []job
	for _, p := range providers {
		for range per {
			jobs = append(jobs, job{p, false})
		}
	}
	for _, p := range pemProviders {
		for range max(per/4, 1) {
			jobs = append(jobs, job{p, true})
		}
	}
	for _, p := range dbURLs {
		for range max(per/4, 1) {
			jobs = append(jobs, job{provider{name: "db-url-password", make: p}, false})
		}
	}
	g.r.Shuffle(len(jobs), func(i, j int) { jobs[i], jobs[j] = jobs[j], jobs[i] })

	// Spread the secrets among the ordinary lines, about evenly.
	gap := size / len(jobs)
	for k, j := range jobs {
		for next := k*gap + g.r.IntN(gap); c.text.Len() < next; {
			ordinary(g, c)
		}
		switch {
		case j.pem:
			placePEM(g, c, j.p)
		case j.p.name == "db-url-password":
			placeDBURL(g, c, j.p)
		default:
			place(g, c, j.p)
		}
	}
	for c.text.Len() < size {
		ordinary(g, c)
	}
	return c
}

func generateClean(seed uint64, size int) *corpus {
	g := fake{rand.New(rand.NewPCG(seed, 0xc1))}
	c := &corpus{}
	for c.text.Len() < size {
		ordinary(g, c)
	}
	return c
}

// place writes a line holding a secret of p, in one of the ways such lines
// look.
func place(g fake, c *corpus, p provider) {
	v := sec{p.name, p.make(g)}
	name := p.vars[g.r.IntN(len(p.vars))]
	lower := strings.ToLower(name)
	switch g.r.IntN(14) {
	case 0:
		c.add("secret:export", "export ", name, "=", v)
	case 1:
		c.add("secret:dotenv", name, `="`, v, `"`)
	case 2:
		c.add("secret:json", `  "`, lower, `": "`, v, `",`)
	case 3:
		c.add("secret:yaml", "    ", lower, ": ", v)
	case 4:
		c.add("secret:env-dump", name, "=", v)
	case 5:
		c.add("secret:curl", "curl -sS -H 'Authorization: Bearer ", v, "' https://api.example.com/v1/", g.word(), "s")
	case 6:
		c.add("secret:http-trace", "> Authorization: Bearer ", v, "\r")
	case 7:
		c.add("secret:cli-flag", "$ ./bin/", g.word(), " --token ", v, " --region eu-west-1")
	case 8:
		c.add("secret:log", g.when(), " DEBUG ", g.word(), ": using credentials ", v, " for ", g.word())
	case 9:
		c.add("secret:go-source", "\tclient := ", g.word(), ".NewClient(\"", v, "\")")
	case 10:
		c.add("secret:python-source", lower, " = '", v, "'")
	case 11:
		c.add("secret:docker-run", "docker run --rm -e ", name, "=", v, " ghcr.io/acme/", g.word(), ":", g.semver())
	case 12:
		c.add("secret:error", "Error: 401 Unauthorized: the token ", v, " is invalid or expired")
	default:
		c.add("secret:makefile-echo", "echo \"", name, "=", v, "\" >> .env")
	}
}

func placePEM(g fake, c *corpus, p provider) {
	switch g.r.IntN(3) {
	case 0:
		c.add("secret:cat-key", "$ cat ~/.ssh/id_", g.pick("rsa", "ecdsa", "ed25519"), "\n", sec{p.name, p.make(g)})
	case 1:
		c.add("secret:yaml-key", "tls:\n  key: |\n", indent(sec{p.name, p.make(g)}, "    "))
	default:
		// A service-account JSON file: the key on one line, \n escaped.
		key := strings.ReplaceAll(p.make(g), "\n", `\n`)
		c.add("secret:json-key", `{"type": "service_account", "project_id": "acme-`, g.word(), `", "private_key_id": "`, g.hex(40), `", "private_key": "`, sec{p.name, key}, `\n", "client_email": "ci@acme.iam.gserviceaccount.com"}`)
	}
}

// indent indents every line of the secret; the label spans from the first
// byte of the key to its last.
func indent(s sec, prefix string) sec {
	s.value = strings.ReplaceAll(s.value, "\n", "\n"+prefix)
	return s
}

// dbURLs make URLs with a password; the secret is the password. They are
// placed by placeDBURL, which labels only the password.
var dbURLs = []func(g fake) string{
	func(g fake) string { return "postgres://app:%s@db.internal:5432/" + g.word() + "?sslmode=require" },
	func(g fake) string { return "mysql://root:%s@mysql-0.mysql:3306/" + g.word() },
	func(g fake) string { return "mongodb+srv://admin:%s@cluster0.ab1cd.mongodb.net/?retryWrites=true" },
	func(g fake) string { return "redis://:%s@cache.internal:6379/0" },
	func(g fake) string { return "amqp://guest:%s@rabbitmq:5672/" },
	func(g fake) string { return "https://deploy:%s@git.example.com/acme/" + g.word() + ".git" },
}

func placeDBURL(g fake, c *corpus, p provider) {
	url := p.make(g)
	before, after, _ := strings.Cut(url, "%s")
	pw := sec{"db-url-password", g.str(g.pick(base62, base62+"!*~-_"), g.n(12, 32))}
	switch g.r.IntN(4) {
	case 0:
		c.add("secret:db-url", "DATABASE_URL=", before, pw, after)
	case 1:
		c.add("secret:db-url", `  "url": "`, before, pw, after, `",`)
	case 2:
		c.add("secret:db-url", g.when(), " INFO connecting to ", before, pw, after)
	default:
		c.add("secret:db-url", "$ git clone ", before, pw, after)
	}
}

// ordinary writes one region of output that holds no secret. The kinds of
// region named hard:... hold random strings that are not credentials
// (identifiers, nonces, images, request ids): no scanner that judges
// strings by their randomness can tell them from secrets, so the report
// counts them apart.
func ordinary(g fake, c *corpus) {
	switch g.r.IntN(46) {
	case 0:
		c.add("go-build", "go: downloading ", g.pkg(), " v", g.semver())
	case 1:
		c.add("go-build", "go: downloading golang.org/x/", g.word(), " v0.0.0-2023", fmt.Sprintf("%02d%02d%06d", g.n(1, 12), g.n(1, 28), g.n(0, 235959)), "-", g.hex(12))
	case 2:
		c.add("go-build", "# ", g.pkg(), "\n./", g.word(), ".go:", fmt.Sprint(g.n(1, 900)), ":", fmt.Sprint(g.n(1, 80)), ": undefined: ", g.word(), g.title())
	case 3:
		c.add("go-test", "=== RUN   Test", g.title(), g.title(), "/", g.word(), "_", fmt.Sprint(g.n(0, 50)), "\n--- PASS: Test", g.title(), g.title(), "/", g.word(), "_", fmt.Sprint(g.n(0, 50)), " (0.0", fmt.Sprint(g.n(0, 9)), "s)")
	case 4:
		c.add("go-test", "ok  \t", g.pkg(), "\t", fmt.Sprintf("%d.%03ds", g.n(0, 9), g.n(0, 999)), "\tcoverage: ", fmt.Sprint(g.n(10, 99)), ".", fmt.Sprint(g.n(0, 9)), "% of statements")
	case 5:
		c.add("go-sum", g.pkg(), " v", g.semver(), g.pick("", "/go.mod"), " h1:", g.b64(32))
	case 6:
		c.add("go-vet", "/root/go/pkg/mod/", g.pkg(), "@v", g.semver(), "/", g.word(), "/", g.word(), ".go:", fmt.Sprint(g.n(1, 999)), ":", fmt.Sprint(g.n(1, 80)), ": result of fmt.Sprintf call not used")
	case 7:
		c.add("go-build-x", "/usr/local/go/pkg/tool/linux_amd64/compile -o $WORK/b0", fmt.Sprint(g.n(10, 99)), "/_pkg_.a -trimpath \"$WORK/b0", fmt.Sprint(g.n(10, 99)), "=>\" -p ", g.pkg(), " -lang=go1.22 -complete -buildid ", g.str(b64URL, 20), "/", g.str(b64URL, 20), " -goversion go1.22.4 -c=2 -nolocalimports -importcfg $WORK/b0", fmt.Sprint(g.n(10, 99)), "/importcfg -pack ./", g.word(), ".go")
	case 8:
		c.add("npm-install", "npm warn deprecated ", g.word(), "@", g.semver(), ": This module is not supported, and leaks memory. Do not use it.")
	case 9:
		c.add("npm-install", "added ", fmt.Sprint(g.n(10, 1500)), " packages, and audited ", fmt.Sprint(g.n(10, 1500)), " packages in ", fmt.Sprint(g.n(2, 90)), "s\n\n", fmt.Sprint(g.n(10, 300)), " packages are looking for funding\n  run `npm fund` for details")
	case 10:
		name := g.word()
		c.add("package-lock", `    "node_modules/`, name, `": {`, "\n", `      "version": "`, g.semver(), `",`, "\n", `      "resolved": "https://registry.npmjs.org/`, name, `/-/`, name, `-`, g.semver(), `.tgz",`, "\n", `      "integrity": "sha512-`, g.b64(64), `",`, "\n", `      "dev": true`, "\n    },")
	case 11:
		c.add("yarn-lock", g.word(), "@^", g.semver(), ":\n  version \"", g.semver(), "\"\n  resolved \"https://registry.yarnpkg.com/", g.word(), "/-/", g.word(), "-", g.semver(), ".tgz#", g.hex(40), "\"\n  integrity sha512-", g.b64(64))
	case 12:
		c.add("git-log", "commit ", g.hex(40), "\nAuthor: ", g.pick("Alice Smith <alice@example.com>", "Bob Jones <bob@example.org>"), "\nDate:   Mon Jan 15 10:23:45 2024 +0100\n\n    Fix the ", g.word(), " when the ", g.word(), " is empty (#", fmt.Sprint(g.n(1, 999)), ")")
	case 13:
		c.add("git-log", g.hex(7), " ", g.pick("Add", "Fix", "Remove", "Refactor"), " ", g.word(), " ", g.word(), " handling")
	case 14:
		c.add("git-diff", "diff --git a/internal/", g.word(), "/", g.word(), ".go b/internal/", g.word(), "/", g.word(), ".go\nindex ", g.hex(7), "..", g.hex(7), " 100644\n--- a/internal/x.go\n+++ b/internal/x.go\n@@ -", fmt.Sprint(g.n(1, 300)), ",7 +", fmt.Sprint(g.n(1, 300)), ",9 @@ func (s *", g.title(), ") ", g.title(), "() error {")
	case 15:
		c.add("git-push", "To github.com:acme/", g.word(), ".git\n   ", g.hex(7), "..", g.hex(7), "  main -> main")
	case 16:
		c.add("docker-pull", g.semver(), "-alpine: Pulling from library/", g.word(), "\n", g.hex(12), ": Pull complete\n", g.hex(12), ": Pull complete\nDigest: sha256:", g.hex(64), "\nStatus: Downloaded newer image for ", g.word(), ":", g.semver())
	case 17:
		c.add("docker-build", "#", fmt.Sprint(g.n(1, 20)), " sha256:", g.hex(64), " ", fmt.Sprint(g.n(1, 99)), ".", fmt.Sprint(g.n(0, 99)), "MB / 30.40MB 0.", fmt.Sprint(g.n(1, 9)), "s")
	case 18:
		c.add("docker-build", "#", fmt.Sprint(g.n(1, 20)), " [", fmt.Sprint(g.n(1, 6)), "/6] RUN npm ci --omit=dev\n#", fmt.Sprint(g.n(1, 20)), " writing image sha256:", g.hex(64), " done\n#", fmt.Sprint(g.n(1, 20)), " naming to ghcr.io/acme/", g.word(), "@sha256:", g.hex(64))
	case 19:
		c.add("pytest", "tests/test_", g.word(), ".py::Test", g.title(), "::test_", g.word(), "_", g.word(), " ", g.pick("PASSED", "PASSED", "FAILED", "SKIPPED"), strings.Repeat(" ", g.n(1, 20)), "[ ", fmt.Sprint(g.n(1, 99)), "%]")
	case 20:
		c.add("pytest", "============ ", fmt.Sprint(g.n(1, 500)), " passed, ", fmt.Sprint(g.n(0, 5)), " skipped, ", fmt.Sprint(g.n(1, 9)), " warnings in ", fmt.Sprint(g.n(1, 99)), ".", fmt.Sprint(g.n(10, 99)), "s ============")
	case 21:
		c.add("pip-install", "Collecting ", g.word(), "==", g.semver(), " (from -r requirements.txt (line ", fmt.Sprint(g.n(1, 60)), "))\n  Downloading ", g.word(), "-", g.semver(), "-py3-none-any.whl (", fmt.Sprint(g.n(10, 900)), " kB)\n    --hash=sha256:", g.hex(64))
	case 22:
		c.add("makefile", "echo \"Building ", g.word(), " $(VERSION) for $(GOOS)/$(GOARCH)\"\ngo build -trimpath -ldflags \"-s -w -X main.version=v", g.semver(), "-", fmt.Sprint(g.n(1, 40)), "-g", g.hex(7), "\" -o bin/", g.word(), " ./cmd/", g.word())
	case 23:
		c.add("json-config", `{"name": "`, g.word(), `-service", "version": "`, g.semver(), `", "port": `, fmt.Sprint(g.n(1024, 65000)), `, "logLevel": "`, g.pick("debug", "info"), `", "instanceId": "`, g.uuid(), `", "region": "eu-west-1"}`)
	case 24:
		c.add("log-uuid", g.when(), " INFO request_id=", g.uuid(), " trace_id=", g.hex(32), " span_id=", g.hex(16), " method=GET path=/api/v1/", g.word(), "s/", g.uuid(), " status=200 duration=", fmt.Sprint(g.n(1, 900)), "ms")
	case 25:
		c.add("terraform-lock", "provider \"registry.terraform.io/hashicorp/", g.word(), "\" {\n  version = \"", g.semver(), "\"\n  hashes = [\n    \"h1:", g.b64(32), "\",\n    \"zh:", g.hex(64), "\",\n  ]\n}")
	case 26:
		c.add("kubectl", "deployment.apps/", g.word(), "-", g.word(), " configured\npod/", g.word(), "-deployment-", g.str("bcdfghjklmnpqrstvwxz2456789", 10), "-", g.str("bcdfghjklmnpqrstvwxz2456789", 5), "   1/1     Running   0          ", fmt.Sprint(g.n(1, 59)), "m")
	case 27:
		c.add("cargo", "   Compiling ", g.word(), " v", g.semver(), "\n    Finished `release` profile [optimized] target(s) in ", fmt.Sprint(g.n(1, 59)), ".", fmt.Sprint(g.n(10, 99)), "s")
	case 28:
		c.add("urls", "See https://github.com/acme/", g.word(), "/pull/", fmt.Sprint(g.n(1, 9999)), "#issuecomment-", g.str(digits, 10), " and https://proxy.golang.org/", g.pkg(), "/@v/v", g.semver(), ".zip")
	case 29:
		c.add("certificate", "$ openssl x509 -in server.crt\n", g.pem("CERTIFICATE", g.n(700, 1200), "\n"))
	case 30:
		c.add("ssh-public-key", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI", g.str(b64Std, 43), " ", g.pick("alice", "bob", "ci"), "@", g.word())
	case 31:
		c.add("css", ".", g.word(), " { color: #", g.hex(6), "; background: #", strings.ToUpper(g.hex(6)), "; border: 1px solid #", g.hex(3), " }")
	case 32:
		c.add("prose", g.pick(
			"Internationalization and localization are handled by the translation middleware.",
			"Pneumonoultramicroscopicsilicovolcanoconiosis is the longest word in some dictionaries.",
			"The deployment completed successfully; no further action is required.",
			"Warning: the configuration file uses a deprecated field, please migrate it."))
	case 33:
		// The base64 of English, as in Kubernetes ConfigMaps and CI logs.
		c.add("base64-english", "  ", g.word(), ": ", base64.StdEncoding.EncodeToString([]byte(g.pick(
			"Hello from the deployment pipeline",
			"This is the default welcome message for new users",
			"Please contact the platform team before changing this value",
			"The quick brown fox jumps over the lazy dog"))))
	case 34:
		c.add("source", "func (s *", g.title(), ") ", g.title(), g.title(), "(ctx context.Context, id string) (*", g.title(), ", error) {\n\treturn s.", g.word(), ".Get", g.title(), "(ctx, id)\n}")
	case 35:
		c.add("semver", "Bumping version from v", g.semver(), "-rc.", fmt.Sprint(g.n(1, 9)), " to v", g.semver(), "+build.", fmt.Sprint(g.n(1, 999)))
	case 36:
		c.add("gha", "Run actions/checkout@", g.hex(40), "\n  with:\n    repository: acme/", g.word(), "\n    ref: refs/heads/main")
	case 37:
		c.add("webpack", "asset main.", g.hex(20), ".js ", fmt.Sprint(g.n(10, 900)), " KiB [emitted] [immutable] [minimized] (name: main)")
	case 39:
		c.add("gha-cache", "Cache restored from key: ", g.pick("Linux", "macOS"), "-", g.pick("go", "node-modules", "pip"), "-", g.hex(64), "\n  with:\n    path: ~/.cache/go-build\n    key: ", g.pick("Linux", "macOS"), "-go-", g.hex(64))
	case 40:
		c.add("names-not-secrets", g.pick(
			`  "token_type": "Bearer", "expires_in": 3600, "scope": "repo read:org"`,
			"        valueFrom:\n          secretKeyRef:\n            name: db-credentials\n            key: password",
			"password: ********\nGITHUB_TOKEN: ***",
			"max_tokens: 4096\ntokenizer: cl100k_base",
			"aws_session_token =",
			"Using cached token from /home/runner/.cache/"+g.word()+"/token.json",
			`{"private_key_id": "`+g.hex(40)+`", "client_id": "`+g.str(digits, 21)+`"}`,
			"KEY_FILE=/etc/ssl/private/"+g.word()+".key\nSECRET_NAME="+g.word()+"-credentials-"+fmt.Sprint(g.n(2020, 2025))))
	case 42:
		// Random identifiers that are not credentials: nanoids, Stripe
		// object ids, MongoDB ObjectIds, Firebase push ids.
		c.add("hard:random-ids", `{"id": "`, g.str(b64URL, 21), `", "customer": "cus_`, g.str(base62, 14), `", "payment_intent": "pi_`, g.str(base62, 24), `", "_id": "`, g.hex(24), `", "ref": "-N`, g.str(b64URL, 18), `"}`)
	case 43:
		c.add("hard:data-uri", `.icon { background-image: url("data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA`, g.b64(g.n(60, 300)), `"); }`)
	case 44:
		c.add("hard:csp-nonce", "< content-security-policy: script-src 'self' 'nonce-", g.b64(16), "'; object-src 'none'")
	case 45:
		c.add("hard:aws-debug", "x-amz-request-id: ", strings.ToUpper(g.hex(16)), "\nx-amz-id-2: ", g.b64(56), "\nETag: \"", g.hex(32), "\"")
	case 41:
		c.add("checksums", g.hex(64), "  ", g.word(), "_", g.semver(), "_linux_amd64.tar.gz")
	case 38:
		c.add("paths", "/home/runner/work/", g.word(), "/", g.word(), "/node_modules/@babel/core/lib/transformation/normalize-opts.js:", fmt.Sprint(g.n(1, 300)), ":", fmt.Sprint(g.n(1, 80)))
	default:
		c.add("blank", "")
	}
}
