package login

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
)

func init() {
	register(Format{
		Name:  "git-credentials",
		Paths: []string{".git-credentials", ".config/git/credentials"},
		Fake:  fakeGitCredentials,
	})
}

// fakeGitCredentials fakes git's credential store (git-credential-store(1)):
// one URL per line, "https://user:password@host[:port][/path]", user and
// password percent-encoded. Blank lines pass. The password is the secret:
// git sends it in Basic auth, where the broker swaps it after decoding.
// The user name passes as it is.
func fakeGitCredentials(real []byte, fake Faker) ([]byte, []Cred, error) {
	var out bytes.Buffer
	var creds []Cred
	seen := map[string]bool{}
	lines := strings.SplitAfter(string(real), "\n")
	for n, line := range lines {
		body := strings.TrimRight(line, "\r\n")
		end := line[len(body):]
		if strings.TrimSpace(body) == "" {
			out.WriteString(line)
			continue
		}
		u, err := url.Parse(body)
		if err != nil || u.Scheme == "" || u.Host == "" || u.User == nil || u.Opaque != "" {
			return nil, nil, fmt.Errorf("git-credentials: line %d: not a credential URL", n+1)
		}
		pass, ok := u.User.Password()
		if !ok || pass == "" {
			return nil, nil, fmt.Errorf("git-credentials: line %d: no password", n+1)
		}
		host, err := normHost(u.Host)
		if err != nil {
			return nil, nil, fmt.Errorf("git-credentials: line %d: %w", n+1, err)
		}
		name := "git-credentials:" + strings.ToLower(u.Scheme) + "://" + host
		if seen[name] {
			// git uses the first match; a later line for the same host
			// is never sent, so it gets a fake of its own name.
			name += fmt.Sprintf("#%d", n+1)
		}
		seen[name] = true
		f := fake(name, pass)
		u.User = url.UserPassword(u.User.Username(), f)
		out.WriteString(u.String() + end)
		creds = append(creds, Cred{Name: name, Real: pass, Hosts: []string{host}})
	}
	return out.Bytes(), creds, nil
}
