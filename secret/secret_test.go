package secret_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/envsieve/envsieve/secret"
)

// canary is a fake secret value; tests assert it never reaches an error.
const canary = "s3cr3t-canary-value-7f3a"

func TestEnv(t *testing.T) {
	env := secret.Env{"A=1", "TOKEN=" + canary, "TOKEN=second", "TOKENX=no"}
	v, err := env.Fetch(context.Background(), "TOKEN")
	if err != nil || v != canary {
		t.Fatalf("Fetch TOKEN: err %v, got the wanted value: %v", err, v == canary)
	}
	_, err = env.Fetch(context.Background(), "TOKE")
	if !errors.Is(err, secret.ErrNotFound) {
		t.Fatalf("Fetch of a missing name: %v, want ErrNotFound", err)
	}
}

func TestCommand(t *testing.T) {
	// A helper gets, of the launcher's variables beyond the basic ones,
	// only those that start with its own name: SH_ for sh.
	env := []string{"PATH=/usr/bin:/bin", "SH_V=" + canary, "OTHER_SECRET=" + canary}
	tests := []struct {
		name    string
		script  string
		timeout time.Duration
		want    string // value, when no error is wanted
		errHas  string
	}{
		{"stdout without the trailing newline", `printf '%s\n' "$SH_V"`, 0, canary, ""},
		{"another variable of the launcher's is not given", `printf '%s' "${OTHER_SECRET:-withheld}"`, 0, "withheld", ""},
		{"inner newlines kept", `printf 'a\nb\n'`, 0, "a\nb", ""},
		{"a failing helper names the helper, not the value", `echo "$SH_V"; echo "$SH_V" >&2; exit 3`, 0, "", `helper "sh -c`},
		{"a slow helper times out", `sleep 5`, 100 * time.Millisecond, "", "timed out after 100ms"},
		{"nothing printed", `true`, 0, "", "printed nothing"},
		{"a NUL byte", `printf 'a\000b'`, 0, "", "printed a NUL byte"},
		{"too much output", `head -c 2000000 /dev/zero | tr '\0' a`, 0, "", "printed more than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			c := &secret.Command{Argv: []string{"sh", "-c", tt.script}, Timeout: tt.timeout, Env: env, Stderr: &stderr}
			start := time.Now()
			v, err := c.Fetch(context.Background(), "NAME")
			if tt.errHas == "" {
				if err != nil || v != tt.want {
					t.Fatalf("Fetch: err %v, value matches: %v", err, v == tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.errHas) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.errHas)
			}
			if strings.Contains(err.Error(), canary) {
				t.Fatal("the error holds the value")
			}
			if !strings.HasPrefix(err.Error(), "secret NAME: ") {
				t.Errorf("error %q does not name the secret", err)
			}
			if time.Since(start) > 3*time.Second {
				t.Errorf("Fetch took %s", time.Since(start))
			}
		})
	}
	if _, err := (&secret.Command{Argv: []string{"true"}}).Fetch(context.Background(), "X"); err == nil {
		t.Error("a nil helper environment was accepted")
	}
}

func newStore(t *testing.T) *secret.Store {
	t.Helper()
	root := t.TempDir()
	return &secret.Store{Path: filepath.Join(root, "config", "envsieve", "secrets.age"), KeyPath: filepath.Join(root, "data", "envsieve", "store.key")}
}

func TestStoreRoundTrip(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	if names, err := s.Names(); err != nil || len(names) != 0 {
		t.Fatalf("a new store lists %v, %v", names, err)
	}
	if err := s.Set("TWILIO_AUTH_TOKEN", canary); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("OTHER", "x"); err != nil {
		t.Fatal(err)
	}
	v, err := s.Fetch(ctx, "TWILIO_AUTH_TOKEN")
	if err != nil || v != canary {
		t.Fatalf("Fetch: %v", err)
	}
	names, err := s.Names()
	if err != nil || strings.Join(names, " ") != "OTHER TWILIO_AUTH_TOKEN" {
		t.Fatalf("Names = %v, %v", names, err)
	}
	raw, err := os.ReadFile(s.Path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(raw, []byte(canary)) || bytes.Contains(raw, []byte("TWILIO")) {
		t.Fatal("the store file holds a value or a name in the clear")
	}
	for _, p := range []string{s.Path, s.KeyPath} {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, want 0600", p, fi.Mode().Perm())
		}
		di, err := os.Stat(filepath.Dir(p))
		if err != nil || di.Mode().Perm() != 0o700 {
			t.Errorf("%s: mode %v, want 0700", filepath.Dir(p), di.Mode().Perm())
		}
	}
	if err := s.Remove("TWILIO_AUTH_TOKEN"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Fetch(ctx, "TWILIO_AUTH_TOKEN"); !errors.Is(err, secret.ErrNotFound) {
		t.Fatalf("Fetch after Remove: %v", err)
	}
	if err := s.Remove("TWILIO_AUTH_TOKEN"); !errors.Is(err, secret.ErrNotFound) {
		t.Fatalf("Remove of a missing name: %v", err)
	}
}

func TestStoreRefusesLoosePermissions(t *testing.T) {
	for _, tt := range []struct {
		name  string
		loose func(s *secret.Store) string
	}{
		{"store readable by others", func(s *secret.Store) string { os.Chmod(s.Path, 0o644); return s.Path }},
		{"key readable by the group", func(s *secret.Store) string { os.Chmod(s.KeyPath, 0o640); return s.KeyPath }},
		{"store directory writable by others", func(s *secret.Store) string {
			d := filepath.Dir(s.Path)
			os.Chmod(d, 0o777)
			return d
		}},
		{"store directory readable by others", func(s *secret.Store) string {
			d := filepath.Dir(s.Path)
			os.Chmod(d, 0o755)
			return d
		}},
		{"key directory readable by the group", func(s *secret.Store) string {
			d := filepath.Dir(s.KeyPath)
			os.Chmod(d, 0o750)
			return d
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			if err := s.Set("A", canary); err != nil {
				t.Fatal(err)
			}
			path := tt.loose(s)
			_, err := s.Fetch(context.Background(), "A")
			var pe *secret.PermissionError
			if !errors.As(err, &pe) || pe.Path != path {
				t.Fatalf("Fetch: %v, want a PermissionError for %s", err, path)
			}
			if err := s.Set("B", "x"); !errors.As(err, &pe) {
				t.Fatalf("Set: %v, want a PermissionError", err)
			}
		})
	}
}

func TestStoreWrongKey(t *testing.T) {
	s := newStore(t)
	if err := s.Set("A", canary); err != nil {
		t.Fatal(err)
	}
	other := newStore(t)
	if err := other.Set("B", "x"); err != nil {
		t.Fatal(err)
	}
	s.KeyPath = other.KeyPath
	_, err := s.Fetch(context.Background(), "A")
	if err == nil || !strings.Contains(err.Error(), "decrypt store") {
		t.Fatalf("Fetch with another key: %v", err)
	}
}

func TestFiles(t *testing.T) {
	root := t.TempDir()
	f, err := secret.NewFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	path, err := f.Write("DB_PASSWORD", canary)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || string(got) != canary {
		t.Fatalf("file content wrong: %v", err)
	}
	fi, _ := os.Stat(path)
	di, _ := os.Stat(f.Dir)
	if fi.Mode().Perm() != 0o600 || di.Mode().Perm() != 0o700 {
		t.Errorf("modes %v %v, want 0600 and 0700", fi.Mode().Perm(), di.Mode().Perm())
	}
	if _, err := f.Write("../escape", "x"); err == nil {
		t.Error("a name with a '/' was written")
	}
	if err := f.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.Dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("directory left after Remove: %v", err)
	}
}

// TestFilesStale: a directory left by a launcher that died (a pid that does
// not run) is removed by the next launcher; a live one is kept.
func TestFilesStale(t *testing.T) {
	root := t.TempDir()
	dead := filepath.Join(root, "envsieve-secrets-999999999-abc")
	live := filepath.Join(root, "envsieve-secrets-1-abc") // pid 1 always runs
	for _, d := range []string{dead, live} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	f, err := secret.NewFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Remove()
	if _, err := os.Stat(dead); !errors.Is(err, fs.ErrNotExist) {
		t.Error("a dead launcher's directory was kept")
	}
	if _, err := os.Stat(live); err != nil {
		t.Error("a live launcher's directory was removed")
	}
}

func TestInstallKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "data", "redact.key")
	k1, err := secret.InstallKey(path)
	if err != nil || len(k1) != 32 {
		t.Fatalf("first InstallKey: %v", err)
	}
	k2, err := secret.InstallKey(path)
	if err != nil || !bytes.Equal(k1, k2) {
		t.Fatalf("the key changed between calls: %v", err)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %v", fi.Mode().Perm())
	}
	os.Chmod(path, 0o644)
	var pe *secret.PermissionError
	if _, err := secret.InstallKey(path); !errors.As(err, &pe) {
		t.Fatalf("a world-readable key was used: %v", err)
	}
}

// TestStoreConcurrentSet: updates are read-modify-write under a file lock, so
// concurrent writers (each its own open file description, as separate
// processes would be) lose none of each other's names.
func TestStoreConcurrentSet(t *testing.T) {
	s := newStore(t)
	if err := s.Set("FIRST", "x"); err != nil { // create the store and key first
		t.Fatal(err)
	}
	const n = 12
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			errs <- (&secret.Store{Path: s.Path, KeyPath: s.KeyPath}).Set("NAME_"+string(rune('A'+i)), "value")
		}(i)
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	names, err := s.Names()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != n+1 {
		t.Fatalf("%d names after %d concurrent sets, want %d: an update was lost", len(names), n, n+1)
	}
}
