package broker

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

func TestHashedName(t *testing.T) {
	for _, tc := range []struct {
		name string
		want bool
	}{
		{"002c0b4f.0", true},
		{"9d04f354.12", true},
		{"ca-certificates.crt", false},
		{"002c0b4f", false},
		{"002c0b4f.", false},
		{"002C0B4F.0", false}, // c_rehash writes lower case
		{"002c0b4.0", false},
		{"002c0b4f0.0", false},
		{"002c0b4f.r0", false}, // a CRL
		{"002c0b4f.0.pem", false},
		{"", false},
	} {
		if got := hashedName(tc.name); got != tc.want {
			t.Errorf("hashedName(%q) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestHashedCertDir(t *testing.T) {
	root := t.TempDir()
	empty, bundleOnly, hashed := filepath.Join(root, "empty"), filepath.Join(root, "bundle"), filepath.Join(root, "hashed")
	for _, d := range []string{empty, bundleOnly, hashed} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(bundleOnly, "ca-bundle.crt"), filepath.Join(hashed, "ca-bundle.crt"), filepath.Join(hashed, "5ad8a5d6.0")} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{[]string{filepath.Join(root, "missing"), empty, bundleOnly, hashed}, hashed},
		{[]string{empty, bundleOnly}, ""},
		{nil, ""},
	} {
		if got := hashedCertDir(tc.dirs); got != tc.want {
			t.Errorf("hashedCertDir(%q) = %q, want %q", tc.dirs, got, tc.want)
		}
	}
}

// TestNodeTrust: with a hashed directory of roots, SSL_CERT_FILE names
// the small file (the user's CAs and the launch CA), SSL_CERT_DIR the
// user's directories then the system's, and NODE_OPTIONS asks node for
// OpenSSL's store; without one, nothing changes.
func TestNodeTrust(t *testing.T) {
	for _, tc := range []struct {
		name    string
		certDir string
		userDir string
		want    map[string]string
	}{
		{name: "no hashed directory", want: map[string]string{"SSL_CERT_FILE": "/d/bundle.pem"}},
		{name: "hashed directory", certDir: "/etc/ssl/certs", want: map[string]string{
			"SSL_CERT_FILE": "/d/ca.pem", "SSL_CERT_DIR": "/etc/ssl/certs", "NODE_OPTIONS": "--use-openssl-ca"}},
		{name: "and the user's own directory", certDir: "/etc/ssl/certs", userDir: "/corp/certs", want: map[string]string{
			"SSL_CERT_FILE": "/d/ca.pem", "SSL_CERT_DIR": "/corp/certs:/etc/ssl/certs", "NODE_OPTIONS": "--use-openssl-ca"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := &Broker{certDir: tc.certDir, caOnly: "/d/ca.pem", cfg: Config{Env: map[string]string{}}}
			if tc.userDir != "" {
				b.cfg.Env["SSL_CERT_DIR"] = tc.userDir
			}
			env := map[string]string{"SSL_CERT_FILE": "/d/bundle.pem"}
			b.nodeTrust(env)
			if len(env) != len(tc.want) {
				t.Errorf("env %v, want %v", env, tc.want)
			}
			for k, v := range tc.want {
				if env[k] != v {
					t.Errorf("%s = %q, want %q", k, env[k], v)
				}
			}
		})
	}
}

// FuzzHashedName: hashedName accepts exactly c_rehash's certificate
// names.
func FuzzHashedName(f *testing.F) {
	for _, s := range []string{"002c0b4f.0", "9d04f354.12", "ca.crt", "002c0b4f.r0", ""} {
		f.Add(s)
	}
	re := regexp.MustCompile(`^[0-9a-f]{8}\.[0-9]+$`)
	f.Fuzz(func(t *testing.T, name string) {
		if got, want := hashedName(name), re.MatchString(name); got != want {
			t.Fatalf("hashedName(%q) = %v, want %v", name, got, want)
		}
	})
}
