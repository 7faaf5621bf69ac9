package secret

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestParseOnePasswordRef(t *testing.T) {
	for _, tc := range []struct {
		ref  string
		want onePasswordRef
		bad  string // a part of the error; "" for none
	}{
		{ref: "op://Private/GitHub/token", want: onePasswordRef{Vault: "Private", Item: "GitHub", Field: "token"}},
		{ref: "op://Private/My Item/creds/password", want: onePasswordRef{Vault: "Private", Item: "My Item", Section: "creds", Field: "password"}},
		{ref: "op://dev/db/one-time password?attribute=otp", want: onePasswordRef{Vault: "dev", Item: "db", Field: "one-time password", Query: "attribute=otp"}},
		{ref: "op://v/i", bad: "2 segments"},
		{ref: "op://v/i/s/f/x", bad: "5 segments"},
		{ref: "op://v//f", bad: `segment ""`},
		{ref: "op://v/../f", bad: `segment ".."`},
		{ref: "op://v/ i/f", bad: `segment " i"`},
		{ref: "op://v/i/f?", bad: "empty query"},
		{ref: "op://v/i/f?attribute", bad: "want NAME=VALUE"},
		{ref: "op://v/i/f\n", bad: "control character"},
		{ref: "op://v/i\xff/f", bad: "not UTF-8"},
		{ref: "OP://v/i/f", bad: "does not start with op://"},
		{ref: "ghp_pastedValueNotARef0123456789", bad: "does not start with op://"},
		{ref: "", bad: "does not start with op://"},
	} {
		got, err := parseOnePasswordRef(tc.ref)
		switch {
		case tc.bad == "" && err != nil:
			t.Errorf("%q: %v", tc.ref, err)
		case tc.bad == "" && got != tc.want:
			t.Errorf("%q = %+v, want %+v", tc.ref, got, tc.want)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad) || !errors.Is(err, errBadRef)):
			t.Errorf("%q: error %v, want one with %q", tc.ref, err, tc.bad)
		case tc.bad != "" && strings.Contains(tc.ref, "pasted") && strings.Contains(err.Error(), "pasted"):
			t.Errorf("%q: the error quotes what is not a reference: %v", tc.ref, err)
		}
	}
}

func TestKeychainArgv(t *testing.T) {
	for _, tc := range []struct {
		goos, service, account string
		want                   []string
		bad                    string
	}{
		{goos: "linux", service: "github", account: "me", want: []string{"secret-tool", "lookup", "service", "github", "account", "me"}},
		{goos: "darwin", service: "github", account: "me", want: []string{"security", "find-generic-password", "-s", "github", "-a", "me", "-w"}},
		{goos: "darwin", service: "my service", account: "me@example.com", want: []string{"security", "find-generic-password", "-s", "my service", "-a", "me@example.com", "-w"}},
		{goos: "windows", service: "github", account: "me", bad: "no helper on windows"},
		{goos: "darwin", service: "-w", account: "me", bad: "service: starts with -"},
		{goos: "linux", service: "github", account: "", bad: "account: empty"},
		{goos: "linux", service: "git\x00hub", account: "me", bad: "control character"},
	} {
		got, err := keychainArgv(tc.goos, tc.service, tc.account)
		switch {
		case tc.bad == "" && (err != nil || !slices.Equal(got, tc.want)):
			t.Errorf("%s %q %q = %q, %v; want %q", tc.goos, tc.service, tc.account, got, err, tc.want)
		case tc.bad != "" && (err == nil || !strings.Contains(err.Error(), tc.bad)):
			t.Errorf("%s %q %q: error %v, want %q", tc.goos, tc.service, tc.account, err, tc.bad)
		}
	}
}

// FuzzParseOnePasswordRef: what parses is op:// and printable UTF-8 with
// three or four non-empty segments that rebuild the reference; an error
// never quotes a string that does not start with op://.
func FuzzParseOnePasswordRef(f *testing.F) {
	for _, s := range []string{"op://a/b/c", "op://a/b/c/d?attribute=otp", "op://a//c", "op://a/b/c?x", "x", "op://a/b/c\x7f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		r, err := parseOnePasswordRef(ref)
		if err != nil {
			if !errors.Is(err, errBadRef) {
				t.Fatalf("error does not wrap errBadRef: %v", err)
			}
			if !strings.HasPrefix(ref, "op://") && err.Error() != "does not start with op://: "+errBadRef.Error() {
				t.Fatalf("error quotes a non-reference: %v", err)
			}
			return
		}
		if !utf8.ValidString(ref) || strings.IndexFunc(ref, unicode.IsControl) >= 0 {
			t.Fatalf("accepted %q", ref)
		}
		segs := []string{r.Vault, r.Item}
		if r.Section != "" {
			segs = append(segs, r.Section)
		}
		segs = append(segs, r.Field)
		back := "op://" + strings.Join(segs, "/")
		if r.Query != "" {
			back += "?" + r.Query
		}
		if back != ref {
			t.Fatalf("%q parsed as %+v", ref, r)
		}
		if argv, err := OnePasswordArgv(ref); err != nil || !slices.Equal(argv, []string{"op", "read", ref}) {
			t.Fatalf("OnePasswordArgv(%q) = %q, %v", ref, argv, err)
		}
	})
}
