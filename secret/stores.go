package secret

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The stores people already keep their secrets in are reached through their
// own command-line programs, run as a [Command] (a trusted helper, a minimal
// environment, a timeout): the value comes back on the helper's standard
// output, and nothing of it is ever in the helper's argv.

// keychainArgv returns the helper that reads the OS keychain's password for
// service and account on goos: libsecret's `secret-tool lookup` (Linux and
// the BSDs, through the Secret Service) or `security
// find-generic-password -w` (macOS). Neither string may be empty or hold a
// control character.
func keychainArgv(goos, service, account string) ([]string, error) {
	if err := keychainField("service", service); err != nil {
		return nil, err
	}
	if err := keychainField("account", account); err != nil {
		return nil, err
	}
	switch goos {
	case "darwin":
		return []string{"security", "find-generic-password", "-s", service, "-a", account, "-w"}, nil
	case "linux", "freebsd", "openbsd", "netbsd", "dragonfly":
		return []string{"secret-tool", "lookup", "service", service, "account", account}, nil
	}
	return nil, fmt.Errorf("the keychain source has no helper on %s", goos)
}

// HostKeychainArgv is [KeychainArgv] for the system envsieve runs on.
func HostKeychainArgv(service, account string) ([]string, error) {
	return keychainArgv(runtime.GOOS, service, account)
}

func keychainField(what, s string) error {
	switch {
	case s == "":
		return fmt.Errorf("keychain %s: empty", what)
	case !utf8.ValidString(s):
		return fmt.Errorf("keychain %s: not UTF-8", what)
	case strings.IndexFunc(s, unicode.IsControl) >= 0:
		return fmt.Errorf("keychain %s: holds a control character", what)
	case strings.HasPrefix(s, "-"):
		// security(1) would read it as an option.
		return fmt.Errorf("keychain %s: starts with -", what)
	}
	return nil
}

// OnePasswordArgv returns the helper that reads a 1Password secret
// reference: `op read REF`. The reference is parsed strictly first; one
// that does not parse is errBadRef.
func OnePasswordArgv(ref string) ([]string, error) {
	if _, err := parseOnePasswordRef(ref); err != nil {
		return nil, err
	}
	return []string{"op", "read", ref}, nil
}

// onePasswordRef is a parsed 1Password secret reference,
// op://VAULT/ITEM/[SECTION/]FIELD[?attribute=...].
type onePasswordRef struct {
	Vault, Item, Section, Field string
	Query                       string // after '?', without it; "" for none
}

// errBadRef is returned (wrapped) for a string that is not a 1Password
// secret reference. Use errors.Is.
var errBadRef = errors.New("not a 1Password secret reference (op://VAULT/ITEM/[SECTION/]FIELD)")

// parseOnePasswordRef parses ref strictly: the op:// scheme, three or four
// non-empty segments (no "." or ".." among them), an optional query of
// NAME=VALUE pairs, no control characters and valid UTF-8. Spaces are
// allowed: 1Password names may hold them.
func parseOnePasswordRef(ref string) (onePasswordRef, error) {
	var r onePasswordRef
	rest, ok := strings.CutPrefix(ref, "op://")
	switch {
	case !ok:
		// Not quoted: a value pasted where its reference belongs
		// would be.
		return r, fmt.Errorf("does not start with op://: %w", errBadRef)
	case !utf8.ValidString(ref):
		return r, fmt.Errorf("reference is not UTF-8: %w", errBadRef)
	case strings.IndexFunc(ref, unicode.IsControl) >= 0:
		return r, fmt.Errorf("reference holds a control character: %w", errBadRef)
	}
	path, query, hasQuery := strings.Cut(rest, "?")
	if hasQuery {
		if query == "" {
			return r, fmt.Errorf("%q: empty query: %w", truncate(ref), errBadRef)
		}
		for _, kv := range strings.Split(query, "&") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" || v == "" || strings.ContainsAny(kv, " ?") {
				return r, fmt.Errorf("%q: query %q: want NAME=VALUE: %w", truncate(ref), truncate(kv), errBadRef)
			}
		}
		r.Query = query
	}
	segs := strings.Split(path, "/")
	if len(segs) != 3 && len(segs) != 4 {
		return r, fmt.Errorf("%q: %d segments: %w", truncate(ref), len(segs), errBadRef)
	}
	for _, s := range segs {
		if s == "" || s == "." || s == ".." || strings.TrimSpace(s) != s {
			return r, fmt.Errorf("%q: segment %q: %w", truncate(ref), truncate(s), errBadRef)
		}
	}
	r.Vault, r.Item, r.Field = segs[0], segs[1], segs[len(segs)-1]
	if len(segs) == 4 {
		r.Section = segs[2]
	}
	return r, nil
}

// truncate shortens s for an error: a reference is no secret, but a
// mistaken value pasted where a reference belongs could be.
func truncate(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	for i := max; i > 0; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i] + "..."
		}
	}
	return "..."
}
