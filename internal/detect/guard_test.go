package detect

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TestSensitiveGuard: values and names that a wildcard allow (MYAPP_*) must
// not admit. Each row was admitted before the structured-value detector,
// the name-aware hex rule and the new words.
func TestSensitiveGuard(t *testing.T) {
	hex32 := "3f9c2a7e1b5d4c8e9a0f6b2d1c4e7a9b"
	hex40 := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"
	hex64 := "4b8d5f0c2e9a1b7d3c6e8f0a2b4d6c8e0f1a3b5c7d9e1f2a4b6c8d0e2f4a6b8c"
	tests := []struct{ name, value string }{
		// Hex and UUID-shaped keys under a name that does not say "id".
		{"MYAPP_DATADOG", hex32},
		{"MYAPP_TWILIO", hex32},
		{"MYAPP_SIGNER", hex40},
		{"MYAPP_K", hex64},
		{"MYAPP_HEROKU", "01234567-89ab-cdef-0123-456789abcdef"},
		{"MYAPP_MAILGUN", hex32 + "-1b2c3d4e-5f6a7b8c"},
		// Structured values, judged by the key's word.
		{"MYAPP_ARGS", "--user=app --password=hunter22"},
		{"MYAPP_ARGS2", "-v --api-key=Zx81kq0Lm"},
		{"MYAPP_CONFIG", `{"host":"db","password":"s3cr3t-Pass"}`},
		{"MYAPP_CONFIG2", `{"client_secret": "abcdef123"}`},
		{"MYAPP_YAML", "user: app\npassword: s3cr3tPass\n"},
		{"MYAPP_LOGIN", "admin:S3cr3tPassw0rd"},
		{"MYAPP_PG", "host=db user=app password=s3cr3t dbname=app"},
		{"MYAPP_MSSQL", "Server=db;Database=app;User Id=sa;Pwd=S3cr3t!;"},
		{"MYAPP_AZ", "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4==;EndpointSuffix=core.windows.net"},
		{"MYAPP_HDR", "Authorization: Bearer abcdef123456"},
		{"MYAPP_HDR2", "Bearer abcdefghij123456"},
		{"MYAPP_NETRC", "machine api.example.com login bob password s3cr3tpw"},
		{"MYAPP_QUERY", "https://api.example.com/v1?user=x&token=abcdef1234"},
		// Token formats.
		{"MYAPP_G", "GOCSPX-AbCdEfGhIjKlMnOpQrStUvWxYz12"},
		{"MYAPP_SHOP", "shpat_0123456789abcdef0123456789abcdef"},
		{"MYAPP_SHOP2", "shpss_0123456789abcdef0123456789abcdef"},
		// Names.
		{"BEARER", "x"},
		{"MYAPP_BEARER", "x"},
		{"SESSIONID", "x"},
		{"JSESSIONID", "x"},
		{"WIFI_PSK", "x"},
		{"WEBHOOK_HMAC", "x"},
		{"SIGNING_SALT", "x"},
		{"OTP_SEED", "x"},
		{"TOTP_SEED", "x"},
		{"WALLET_SEED", "x"},
		{"SEED_PHRASE", "x"},
		{"PASSCODE", "x"},
		{"MNEMONIC", "x"},
	}
	for _, tt := range tests {
		if !Sensitive(tt.name, tt.value) {
			t.Errorf("Sensitive(%s, <%d bytes>) = false, want true", tt.name, len(tt.value))
		}
	}
}

// TestNotSensitive: identifiers in a name that says so, and the look-alike
// names, stay ordinary.
func TestNotSensitive(t *testing.T) {
	hex40 := "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"
	for _, tt := range []struct{ name, value string }{
		{"COMMIT_SHA", hex40},
		{"CI_COMMIT_SHA", hex40},
		{"CIRCLE_SHA1", hex40},
		{"GIT_REV", hex40},
		{"BUILD_ID", "0190d9a4-5b2c-4e7f-8a1d-3c6e9f0b2a4d"},
		{"INVOCATION_ID", "3f9c2a7e1b5d4c8e9a0f6b2d1c4e7a9b"},
		{"TRACEPARENT", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
		{"RANDOM_SEED", "42"},
		{"PYTHONHASHSEED", "0"},
		{"XDG_SESSION_ID", "3"},
		{"MYAPP_TLS_FILE", "/etc/myapp/tls.key"},
		{"MYAPP_ARGS", "--password-file=/run/secrets/db"},
		{"MYAPP_ARGS", "--api-key=${API_KEY}"},
		{"MYAPP_IMAGE", "node:22-alpine"},
		{"MYAPP_BIND", "localhost:8080"},
	} {
		if Sensitive(tt.name, tt.value) {
			k, _ := ValueFor(tt.name, tt.value)
			w, _ := SensitiveName(tt.name)
			t.Errorf("Sensitive(%s, %q) = true (name word %q, value kind %q), want false", tt.name, tt.value, w, k)
		}
	}
}

// TestNonSecretCorpus: no variable of testdata/nonsecret-env.txt, realistic
// non-secret environments of CI systems, shells and tools, is sensitive.
// (Names with a sensitive word, such as MYAPP_KEY_FILE or SSH_AUTH_SOCK,
// are withheld from a wildcard by design, whatever their value: they need
// an exact allow entry, and are not in the corpus.)
func TestNonSecretCorpus(t *testing.T) {
	f, err := os.Open("testdata/nonsecret-env.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, value, ok := strings.Cut(line, "=")
		if !ok {
			t.Fatalf("corpus line without '=': %q", line)
		}
		n++
		if Sensitive(name, value) {
			k, _ := ValueFor(name, value)
			w, _ := SensitiveName(name)
			t.Errorf("%s=%s: sensitive (name word %q, value kind %q)", name, value, w, k)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 200 {
		t.Fatalf("the corpus has %d variables, want at least 200", n)
	}
}
