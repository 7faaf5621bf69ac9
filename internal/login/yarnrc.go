package login

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

func init() {
	register(Format{
		Name:  "yarnrc",
		Paths: []string{".yarnrc.yml"},
		Fake:  fakeYarnrc,
	})
}

// yarnDefaultRegistry is yarn's npmRegistryServer when the file names none.
const yarnDefaultRegistry = "https://registry.yarnpkg.com"

// yarnSecret is one credential of a .yarnrc.yml.
type yarnSecret struct {
	name  string
	field string // npmAuthToken or npmAuthIdent
	node  ast.Node
	hosts []string
}

// yarnEntry reads an entry of credentials (the top level, an npmRegistries
// or an npmScopes entry): its npmRegistryServer, and its secrets by field.
func yarnEntry(n ast.Node) (server string, secrets map[string]ast.Node, err error) {
	keys, vals, ok, err := yamlMap(n)
	if err != nil || !ok {
		return "", nil, errors.New("not a mapping")
	}
	secrets = map[string]ast.Node{}
	for i, k := range keys {
		switch k {
		case "npmRegistryServer":
			s, ok := vals[i].(*ast.StringNode)
			if !ok {
				return "", nil, errors.New("npmRegistryServer is not a string")
			}
			server = s.Value
		case "npmAuthToken", "npmAuthIdent":
			secrets[k] = vals[i]
		}
	}
	return server, secrets, nil
}

// yarnHost returns the host of a registry URL; "${...}" is none.
func yarnHost(u string) (string, bool, error) {
	if u == "" || npmEnvRef.MatchString(u) {
		return "", false, nil
	}
	h, err := hostOfURL(u)
	return h, err == nil, err
}

// yarnSecrets lists the credentials of a parsed .yarnrc.yml: the top
// level's (bound to npmRegistryServer, npmPublishRegistry and every scope's
// server: yarn falls back to them for any registry without credentials of
// its own), each npmRegistries entry's (bound to its key's host) and each
// npmScopes entry's (bound to its npmRegistryServer, else the top level's).
func yarnSecrets(d *yamlDoc) ([]yarnSecret, error) {
	if d.body == nil {
		return nil, nil
	}
	keys, vals, ok, err := yamlMap(d.body)
	if err != nil || !ok {
		return nil, errors.New("not a mapping")
	}
	top, topSecrets, err := yarnEntry(d.body)
	if err != nil {
		return nil, err
	}
	if top == "" {
		top = yarnDefaultRegistry
	}
	topHost, ok, err := yarnHost(top)
	if err != nil {
		return nil, fmt.Errorf("npmRegistryServer: %w", err)
	}
	var topHosts []string
	add := func(h string) {
		for _, x := range topHosts {
			if x == h {
				return
			}
		}
		topHosts = append(topHosts, h)
	}
	if ok {
		add(topHost)
	}
	var out []yarnSecret
	for i, k := range keys {
		switch k {
		case "npmPublishRegistry":
			s, isStr := vals[i].(*ast.StringNode)
			if !isStr {
				return nil, errors.New("npmPublishRegistry is not a string")
			}
			h, ok, err := yarnHost(s.Value)
			if err != nil {
				return nil, fmt.Errorf("npmPublishRegistry: %w", err)
			}
			if ok {
				add(h)
			}
		case "npmRegistries", "npmScopes":
			if isYAMLNull(vals[i]) {
				continue
			}
			names, entries, ok, err := yamlMap(vals[i])
			if err != nil || !ok {
				return nil, fmt.Errorf("%s: not a mapping", k)
			}
			for j, name := range names {
				if isYAMLNull(entries[j]) {
					continue
				}
				server, secrets, err := yarnEntry(entries[j])
				if err != nil {
					return nil, fmt.Errorf("%s: %w", k, err)
				}
				var hosts []string
				if k == "npmRegistries" {
					server = name
				}
				if server != "" {
					h, ok, err := yarnHost(server)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", k, err)
					}
					if ok {
						hosts = []string{h}
						if k == "npmScopes" {
							add(h)
						}
					}
				} else if topHost != "" {
					hosts = []string{topHost}
				}
				for _, f := range []string{"npmAuthIdent", "npmAuthToken"} {
					if n, ok := secrets[f]; ok {
						out = append(out, yarnSecret{"yarnrc:" + k + ":" + name + ":" + f, f, n, hosts})
					}
				}
			}
		}
	}
	for _, f := range []string{"npmAuthIdent", "npmAuthToken"} {
		if n, ok := topSecrets[f]; ok {
			out = append(out, yarnSecret{"yarnrc:" + f, f, n, topHosts})
		}
	}
	return out, nil
}

// fakeYarnrc fakes yarn's .yarnrc.yml: npmAuthToken (a Bearer token) and
// npmAuthIdent ("user:password", or its base64, sent in Basic auth: the
// password is the secret, the form is kept) at the top level, in
// npmRegistries entries and in npmScopes entries become fakes, replaced in
// place, bound as yarnSecrets says. "${NAME}" values pass (yarn reads
// them from the environment). A secret whose registry is not known (a
// "${...}" server), a partial "${...}", a value yarn may read otherwise
// (not a one-line string, anchors, aliases), or a credential key anywhere
// else in the file (a comment included) is an error.
func fakeYarnrc(real []byte, fake Faker) ([]byte, []Cred, error) {
	d, err := parseYAML(real)
	if err != nil {
		return nil, nil, fmt.Errorf("yarnrc: %w", err)
	}
	secrets, err := yarnSecrets(d)
	if err != nil {
		return nil, nil, fmt.Errorf("yarnrc: %w", err)
	}
	if strings.Count(d.src, "npmAuthToken")+strings.Count(d.src, "npmAuthIdent") > len(secrets) {
		// yarn's YAML reader is not this one: a credential key this parse
		// did not place (or a comment naming one) masks the file.
		return nil, nil, errors.New("yarnrc: a credential key outside the entries yarn reads")
	}
	var edits []edit
	var creds []Cred
	for _, s := range secrets {
		if isYAMLNull(s.node) {
			continue
		}
		sc, err := d.scalar(s.node)
		if err != nil {
			return nil, nil, fmt.Errorf("yarnrc: %s: %w", s.name, err)
		}
		if sc.value == "" || npmEnvRef.MatchString(sc.value) {
			continue
		}
		if strings.Contains(sc.value, "${") {
			return nil, nil, fmt.Errorf("yarnrc: %s: a partial ${...}", s.name)
		}
		if len(s.hosts) == 0 {
			return nil, nil, fmt.Errorf("yarnrc: %s: %w", s.name, errNoHost)
		}
		secret, text := sc.value, ""
		switch {
		case s.field == "npmAuthToken":
			text = fake(s.name, secret)
		case strings.Contains(sc.value, ":"):
			user, pass, _ := strings.Cut(sc.value, ":")
			if pass == "" {
				return nil, nil, fmt.Errorf("yarnrc: %s: no password", s.name)
			}
			secret, text = pass, user+":"+fake(s.name, pass)
		default:
			raw, err := base64.StdEncoding.DecodeString(sc.value)
			user, pass, ok := strings.Cut(string(raw), ":")
			if err != nil || !ok || pass == "" {
				return nil, nil, fmt.Errorf("yarnrc: %s: not user:password, nor its base64", s.name)
			}
			secret, text = pass, base64.StdEncoding.EncodeToString([]byte(user+":"+fake(s.name, pass)))
		}
		q, err := yamlQuote(text, sc.style)
		if err != nil {
			return nil, nil, fmt.Errorf("yarnrc: %s: %w", s.name, err)
		}
		edits = append(edits, edit{sc.start, sc.end, q})
		creds = append(creds, Cred{Name: s.name, Real: secret, Hosts: s.hosts})
	}
	return []byte(applyEdits(d.src, edits)), creds, nil
}
