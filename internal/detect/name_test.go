package detect

import (
	"strings"
	"testing"
)

func TestSensitiveName(t *testing.T) {
	tests := []struct {
		name string
		word string // "" when the name is not sensitive
	}{
		// Required by docs/design.md.
		{name: "MY_APIKEY", word: "APIKEY"},
		{name: "GITHUB_TOKEN", word: "TOKEN"},
		{name: "AWS_SECRET_ACCESS_KEY", word: "SECRET"},
		{name: "STRIPE_SECRET_KEY", word: "SECRET"},
		{name: "ANTHROPIC_API_KEY", word: "KEY"},
		{name: "DB_PASSWORD", word: "PASSWORD"},
		{name: "NPM_AUTH_TOKEN", word: "AUTH"},
		{name: "SESSION_COOKIE", word: "COOKIE"},
		{name: "SENTRY_DSN", word: "DSN"},
		{name: "myApiKey", word: "Key"},
		{name: "DATABASE_URL", word: "DATABASE_URL"},
		{name: "GIT_AUTHOR_NAME"},
		{name: "GIT_AUTHOR_EMAIL"},
		{name: "KEYBOARD_LAYOUT"},
		{name: "HOME"},
		{name: "PATH"},
		{name: "LANG"},
		{name: "TERM"},
		{name: "COLUMNS"},

		// Every listed word, alone, in other cases, and ending a word.
		{name: "KEY", word: "KEY"},
		{name: "key", word: "key"},
		{name: "SECRET", word: "SECRET"},
		{name: "TOKEN", word: "TOKEN"},
		{name: "PASSWORD", word: "PASSWORD"},
		{name: "FTP_PASSWD", word: "PASSWD"},
		{name: "SMTP_PASS", word: "PASS"},
		{name: "ADMIN_PW", word: "PW"},
		{name: "GOOGLE_APPLICATION_CREDENTIALS", word: "CREDENTIALS"},
		{name: "AZURE_CREDENTIAL", word: "CREDENTIAL"},
		{name: "DOCKER_CREDS", word: "CREDS"},
		{name: "SSH_PRIVATE_KEY", word: "PRIVATE"},
		{name: "Cookie", word: "Cookie"},
		{name: "OAUTH_CLIENT_ID", word: "OAUTH"},
		{name: "ACCESSTOKEN", word: "ACCESSTOKEN"},
		{name: "DBPASS", word: "DBPASS"},
		{name: "PGPASSWORD", word: "PGPASSWORD"},
		{name: "P4PASSWD", word: "PASSWD"},
		{name: "GPG_PASSPHRASE", word: "PASSPHRASE"},
		{name: "HTTP_AUTHORIZATION", word: "AUTHORIZATION"},
		{name: "GH_PAT", word: "PAT"},
		{name: "MYSQL_PWD", word: "PWD"},
		{name: "API_KEYS", word: "KEYS"},
		{name: "AWS_SECRETS", word: "SECRETS"},
		{name: "SESSION_COOKIES", word: "COOKIES"},
		{name: "aws_session_token", word: "token"},

		// Word splitting: camelCase, digits.
		{name: "OAuthToken", word: "OAuth"},
		{name: "githubPat", word: "Pat"},
		{name: "APIKey", word: "APIKey"},
		{name: "clientSecretValue", word: "Secret"},
		{name: "OAUTH2_PROXY_COOKIE_SECRET", word: "OAUTH"},
		{name: "S3KEY", word: "KEY"},
		{name: "TOKEN2", word: "TOKEN"},
		{name: "AUTH0_DOMAIN", word: "AUTH"},

		// A capability, not a secret; the engine lets this curated name pass.
		{name: "SSH_AUTH_SOCK", word: "AUTH"},
		// Programs that hand out passwords.
		{name: "SSH_ASKPASS", word: "ASKPASS"},
		{name: "GIT_ASKPASS", word: "ASKPASS"},

		// Compounds that hold connection strings.
		{name: "SQLALCHEMY_DATABASE_URI", word: "DATABASE_URI"},
		{name: "DB_URL", word: "DB_URL"},
		{name: "MYAPP_DB_URL", word: "DB_URL"},
		{name: "REDIS_URL", word: "REDIS_URL"},
		{name: "REDIS_TLS_URL", word: "REDIS_TLS_URL"},
		{name: "MONGODB_URI", word: "MONGODB_URI"},
		{name: "JAWSDB_URL", word: "JAWSDB_URL"},
		{name: "POSTGRES_URL_NON_POOLING", word: "POSTGRES_URL"},
		{name: "CELERY_BROKER_URL", word: "BROKER_URL"},
		{name: "AMQP_URL", word: "AMQP_URL"},
		{name: "databaseUrl", word: "databaseUrl"},
		{name: "SLACK_WEBHOOK_URL", word: "WEBHOOK_URL"},
		{name: "DISCORD_WEBHOOK", word: "WEBHOOK"},
		{name: "SLACKWEBHOOK", word: "SLACKWEBHOOK"},
		{name: "AZURE_STORAGE_CONNECTION_STRING", word: "CONNECTION_STRING"},
		{name: "ConnectionStrings__Default", word: "ConnectionStrings"},

		// Words that start with a sensitive word, contain one, or are
		// ordinary English ending in one.
		{name: "PASSENGER_COUNT"},
		{name: "PASSTHROUGH"},
		{name: "PASSWORDLESS_LOGIN"},
		{name: "KEYRING_BACKEND"},
		{name: "KEYCHAIN_PATH"},
		{name: "TOKENIZERS_PARALLELISM"},
		{name: "SECRETARY"},
		{name: "AUTHOR"},
		{name: "XAUTHORITY"},
		{name: "PROXY_BYPASS"},
		{name: "BYPASSES"},
		{name: "COMPASS_HOME"},
		{name: "GTK_COMPAT"},
		{name: "HOTKEY_MODE"},
		{name: "HOTKEYS"},
		{name: "CHAOS_MONKEY_ENABLED"},
		{name: "PWD"},
		{name: "OLDPWD"},
		{name: "GITHUB_PATH"},
		{name: "GOPATH"},
		{name: "LD_LIBRARY_PATH"},
		{name: "XDG_SESSION_ID"},
		{name: "TERM_SESSION_ID"},
		{name: "NO_PROXY"},
		{name: "PS4"},

		// Near misses of the compounds.
		{name: "DATABASE_HOST"},
		{name: "DB_NAME"},
		{name: "URL_DATABASE"},
		{name: "PG_URL"},
		{name: "DOCS_URL"},
		{name: "WEBHOOK_PORT"},
		{name: "CONNECTION_TIMEOUT"},
		{name: "STRING_CONNECTION"},
		{name: "CONNECTION_POOL_STRING"},

		// Degenerate names.
		{name: ""},
		{name: "_"},
		{name: "__"},
		{name: "9"},
		{name: "\xff\xfe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			word, ok := SensitiveName(tt.name)
			if word != tt.word || ok != (tt.word != "") {
				t.Errorf("SensitiveName(%q) = %q, %v, want %q, %v", tt.name, word, ok, tt.word, tt.word != "")
			}
		})
	}
}

func TestSensitiveNameDoesNotAllocate(t *testing.T) {
	for _, name := range []string{"AWS_SECRET_ACCESS_KEY", "myApiKey", "GIT_AUTHOR_NAME", "SQLALCHEMY_DATABASE_URI"} {
		if n := testing.AllocsPerRun(100, func() { SensitiveName(name) }); n != 0 {
			t.Errorf("SensitiveName(%q) allocates %v times, want 0", name, n)
		}
	}
}

// safeWords are words that are not sensitive, alone or next to each other.
var safeWords = []string{
	"HOME", "PATH", "GIT", "AUTHOR", "NAME", "EMAIL", "KEYBOARD", "LAYOUT",
	"PASSENGER", "COUNT", "TERM", "LANG", "COLUMNS", "TOKENIZERS", "XDG",
	"CONFIG", "DIR", "USER", "SHELL", "HOST", "PORT", "XAUTHORITY", "BYPASS",
	"HOTKEYS", "DATABASE", "CONNECTION", "SESSION", "ID", "2", "64", "LC",
}

func FuzzSensitiveName(f *testing.F) {
	for _, seed := range []string{"", "GITHUB_TOKEN", "myApiKey", "DATABASE_URL", "GIT_AUTHOR_NAME", "a_B_c", "\x00"} {
		f.Add(seed, []byte{0, 1, 2})
	}
	f.Fuzz(func(t *testing.T, name string, picks []byte) {
		word, ok := SensitiveName(name)
		if ok && (word == "" || !strings.Contains(name, word)) {
			t.Fatalf("SensitiveName(%q) = %q, true: want a non-empty part of the name", name, word)
		}
		if !ok && word != "" {
			t.Fatalf("SensitiveName(%q) = %q, false: want no word", name, word)
		}

		// A sensitive word standing alone makes any name sensitive.
		if _, ok := SensitiveName(name + "_TOKEN"); !ok {
			t.Fatalf("SensitiveName(%q + \"_TOKEN\") = false, want true", name)
		}

		// A name made only of ordinary words is not.
		var b strings.Builder
		for i, p := range picks {
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteString(safeWords[int(p)%len(safeWords)])
		}
		if word, ok := SensitiveName(b.String()); ok {
			t.Fatalf("SensitiveName(%q) = %q, true, want false", b.String(), word)
		}
	})
}

func BenchmarkSensitiveName(b *testing.B) {
	names := []string{
		"PATH", "HOME", "GIT_AUTHOR_NAME", "XDG_CONFIG_HOME", "LC_ALL",
		"AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "myApiKey", "DATABASE_URL",
		"TOKENIZERS_PARALLELISM",
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, name := range names {
			SensitiveName(name)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(names)), "ns/name")
}
