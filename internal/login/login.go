// Package login understands the credential files of the tools an agent
// uses (gh, git, npm, ...) and of the agents themselves (Claude Code,
// Codex, Gemini CLI), and writes for each a file of the same format whose
// secrets are fakes (docs/design.md section 9.5, "Logins as fakes").
//
// A [Format] reads the user's real file and returns the fake file and the
// credentials it holds ([Cred]): each one's real value, its name among the
// launch's brokered secrets, and the hosts the file binds it to. The
// launcher puts the fake file in the sealed tree's view at the real path,
// and gives the broker the credentials, so that the tree's tools keep
// working with fakes while the real values reach only their hosts.
//
// Guarantees, for every format and every input:
//   - the fake file holds no real value of a credential the format
//     returns, in any form the format writes it (URL- or base64-encoded
//     included);
//   - the fake file reads back, with the same format, as the same
//     credentials holding the fakes;
//   - everything else in the file passes as it is;
//   - a file the format cannot understand wholly, or holding a secret it
//     cannot bind to a host, is an error (the seal then masks it), never
//     passed on; so is one whose real value cannot be hidden (too short,
//     or also elsewhere in the file).
//
// [register] enforces the first two for every format (guard.go), whatever
// the format's own parser does. docs/broker.md, "Credential files", lists
// the formats, what each fakes and the hosts it binds.
//
// The package does no I/O: callers read the real file and write the fake.
package login

import (
	"fmt"
	"sort"
	"time"
)

// Cred is one credential of a file.
type Cred struct {
	// Name names it among the launch's brokered secrets: the format and
	// what the file keys it by ("git-credentials:https://git.example.com",
	// "gh:github.example.com"). Stable across launches and across changes
	// of the real value; never holds a value.
	Name string
	// Real is the real value.
	Real string
	// Hosts are the hosts the real value may go to: "host", "host:port"
	// or "*.suffix".
	Hosts []string
	// In are the places of a request the fake is swapped in (as
	// broker.Binding.In); nil means the authorization headers, a Basic
	// credential's user and password included.
	In []string
	// Paths, when set, are the only path prefixes the real value is given
	// to (a token endpoint's body field).
	Paths []string
	// AWS is set for an AWS profile's keys, which are never sent, only
	// signed with: the broker re-signs the tree's requests with them
	// (broker.AWSCred) instead of swapping a value. Real is then the secret
	// access key, Hosts AWS's endpoints and In ["sigv4"], a place no
	// swap names.
	AWS *AWSKeys
	// Renews, on a refresh token's Cred (In names a body field of its
	// token endpoint), names the credentials a token response of that
	// endpoint renews, by the response's field: "access_token" -> the
	// access token's Cred name. The broker then keeps the new real values,
	// gives the tree new fakes, and the launcher writes the new values back
	// with the Format's Update.
	Renews map[string]string
}

// AWSKeys are one AWS profile's real keys and the fakes its fake file
// holds.
type AWSKeys struct {
	Real, Fake AWSKey
}

// AWSKey is one set of AWS keys (as sigv4.Credentials, which this package
// does not import: the envsieve launcher links no net/http).
type AWSKey struct {
	AccessKeyID, SecretAccessKey string
	// SessionToken is "" for long-term keys.
	SessionToken string
}

// Tokens are the new real values of a token refresh, for Format.Update.
type Tokens struct {
	// Access, Refresh and ID are the response's access_token,
	// refresh_token and id_token; "" keeps the file's.
	Access, Refresh, ID string
	// ExpiresIn is the response's expires_in; 0 leaves the file's expiry.
	ExpiresIn time.Duration
	// Now is when the response came.
	Now time.Time
	// Refreshed is the name of the refresh token's Cred whose endpoint
	// answered: a file of several logins (an MCP token store) renews that
	// one's entry.
	Refreshed string
}

// Faker returns the fake of a credential: the same value for the same
// name and real value (broker.Fake with the install key, in a launch).
type Faker func(name, real string) string

// Format is one credential file format.
type Format struct {
	// Name is the format's name in explain and the audit ("gh-hosts").
	Name string
	// Paths are where the file lies, relative to HOME.
	Paths []string
	// Fake parses real and returns the fake file and its credentials. An
	// error means the file is not wholly understood: the seal masks it.
	Fake func(real []byte, fake Faker) (out []byte, creds []Cred, err error)
	// Update, for a format whose tokens the broker renews (the agents'
	// OAuth logins), returns the user's real file with the renewed real
	// tokens in it, everything else as it was: the launcher writes it back
	// so that the next session, and the agent run outside envsieve, keep
	// working. It is its own function, not Fake run backwards, because the
	// file is the user's and only the renewed fields may change (expiry
	// included, in the format's own unit). nil for other formats.
	Update func(real []byte, t Tokens) ([]byte, error)
}

// formats are the formats this package understands, by name.
var formats = map[string]Format{}

// unchecked are the formats' Fake functions before check: the tests
// re-parse a fake file with them.
var unchecked = map[string]func([]byte, Faker) ([]byte, []Cred, error){}

// register adds f; a second format of one name is a programming error.
// Every format's Fake is checked on its way out: a fake file that still
// holds a real value in any form ([check]), or that does not read back, with
// the same format, as the same credentials holding the fakes ([readBack]),
// is an error.
func register(f Format) {
	if _, dup := formats[f.Name]; dup {
		panic(fmt.Sprintf("login: format %q registered twice", f.Name))
	}
	inner := f.Fake
	unchecked[f.Name] = inner
	f.Fake = func(real []byte, fake Faker) ([]byte, []Cred, error) {
		if loneCR(real) {
			return nil, nil, fmt.Errorf("%s: a carriage return alone, a line break to some readers and not to others", f.Name)
		}
		out, creds, err := inner(real, fake)
		if err != nil {
			return nil, nil, err
		}
		if err := check(out, creds); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		if err := readBack(inner, out, creds, fake); err != nil {
			return nil, nil, fmt.Errorf("%s: %w", f.Name, err)
		}
		return out, creds, nil
	}
	formats[f.Name] = f
}

// Formats returns every format, sorted by name.
func Formats() []Format {
	out := make([]Format, 0, len(formats))
	for _, f := range formats {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ByPath returns the format of the file at rel (relative to HOME), if any.
func ByPath(rel string) (Format, bool) {
	for _, f := range formats {
		for _, p := range f.Paths {
			if p == rel {
				return f, true
			}
		}
	}
	return Format{}, false
}
