package login

import (
	"errors"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

func init() {
	register(Format{
		Name:  "gh-hosts",
		Paths: []string{".config/gh/hosts.yml"},
		Fake:  fakeGhHosts,
	})
}

// ghSecret is one token of a hosts.yml.
type ghSecret struct {
	name  string
	hosts []string
	node  ast.Node
}

// ghHosts are the hosts gh sends a host's token to. gh (cli/cli's
// AddAuthTokenHeader) sends it to every request host that go-gh's
// NormalizeHostname maps to the configured host: github.com's subdomains
// (api.github.com, uploads.github.com) map to github.com, a tenancy's
// (api.NAME.ghe.com) to NAME.ghe.com; an Enterprise Server's API lies on
// the host itself (HOST/api/v3, HOST/api/graphql, HOST/api/uploads).
// *.githubusercontent.com is not among them: gh sends no token there.
func ghHosts(host string) []string {
	if host == "github.com" || host == "github.localhost" || strings.HasSuffix(host, ".ghe.com") {
		return []string{host, "*." + host}
	}
	return []string{host}
}

// ghSecrets lists the tokens of a parsed hosts.yml in file order: each
// host's "oauth_token" and, as gh 2.40 and later write it, each of its
// "users: {NAME: {oauth_token}}". Every top-level key is a host.
func ghSecrets(d *yamlDoc) ([]ghSecret, error) {
	if d.body == nil {
		return nil, nil
	}
	hostKeys, hostVals, ok, err := yamlMap(d.body)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errors.New("not a mapping of hosts")
	}
	var out []ghSecret
	for i, key := range hostKeys {
		host, err := normHost(key)
		if err != nil {
			return nil, fmt.Errorf("host %d: %w", i+1, err)
		}
		if isYAMLNull(hostVals[i]) {
			continue
		}
		keys, vals, ok, err := yamlMap(hostVals[i])
		if err != nil || !ok {
			return nil, fmt.Errorf("host %s: not a mapping", host)
		}
		for j, k := range keys {
			switch k {
			case "oauth_token":
				out = append(out, ghSecret{"gh:" + host, ghHosts(host), vals[j]})
			case "users":
				if isYAMLNull(vals[j]) {
					continue
				}
				users, uvals, ok, err := yamlMap(vals[j])
				if err != nil || !ok {
					return nil, fmt.Errorf("host %s: users: not a mapping", host)
				}
				for u, user := range users {
					if isYAMLNull(uvals[u]) {
						continue
					}
					ukeys, uv, ok, err := yamlMap(uvals[u])
					if err != nil || !ok {
						return nil, fmt.Errorf("host %s: a user: not a mapping", host)
					}
					for m, uk := range ukeys {
						if uk == "oauth_token" {
							out = append(out, ghSecret{"gh:" + host + ":users:" + user, ghHosts(host), uv[m]})
						}
					}
				}
			}
		}
	}
	return out, nil
}

// fakeGhHosts fakes gh's hosts.yml: each host's oauth_token, and each of
// its users' (gh 2.40+), becomes a fake bound to the hosts gh sends it to
// (ghHosts). The scalar is replaced in place; comments, order, and every
// other key pass as they are. An empty token passes. A token that is not
// a one-line string, YAML anchors or aliases, a key that is not a host
// name, or the word oauth_token anywhere else in the file (a comment
// included: gh's YAML reader is not ours) is an error.
func fakeGhHosts(real []byte, fake Faker) ([]byte, []Cred, error) {
	d, err := parseYAML(real)
	if err != nil {
		return nil, nil, fmt.Errorf("gh-hosts: %w", err)
	}
	secrets, err := ghSecrets(d)
	if err != nil {
		return nil, nil, fmt.Errorf("gh-hosts: %w", err)
	}
	if strings.Count(d.src, "oauth_token") > len(secrets) {
		// gh's YAML reader is not this one: a token key this parse did not
		// place where gh looks (or a comment naming one) masks the file
		// rather than pass a token it may read.
		return nil, nil, errors.New("gh-hosts: an oauth_token outside a host's or a user's entry")
	}
	var edits []edit
	var creds []Cred
	for _, s := range secrets {
		if isYAMLNull(s.node) {
			continue
		}
		sc, err := d.scalar(s.node)
		if err != nil {
			return nil, nil, fmt.Errorf("gh-hosts: %s: %w", s.name, err)
		}
		if sc.value == "" {
			continue
		}
		f := fake(s.name, sc.value)
		text, err := yamlQuote(f, sc.style)
		if err != nil {
			return nil, nil, fmt.Errorf("gh-hosts: %s: %w", s.name, err)
		}
		edits = append(edits, edit{sc.start, sc.end, text})
		creds = append(creds, Cred{Name: s.name, Real: sc.value, Hosts: s.hosts})
	}
	return []byte(applyEdits(d.src, edits)), creds, nil
}
