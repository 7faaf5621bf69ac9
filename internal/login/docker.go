package login

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

func init() {
	register(Format{
		Name:  "docker-config",
		Paths: []string{".docker/config.json"},
		Fake:  fakeDockerConfig,
	})
}

// dockerHub are the hosts of Docker Hub's credentials: the index the key
// names, the registry, and the token service Basic credentials go to.
var dockerHub = []string{"index.docker.io", "registry-1.docker.io", "auth.docker.io"}

// dockerHosts returns the hosts of an "auths" key: a registry host, or a
// URL ("https://index.docker.io/v1/").
func dockerHosts(key string) ([]string, error) {
	h, err := hostOfURL(key)
	if err != nil {
		return nil, err
	}
	switch h {
	case "docker.io", "index.docker.io", "registry-1.docker.io", "registry.hub.docker.com":
		return dockerHub, nil
	}
	return []string{h}, nil
}

// jsonString is one string value of a JSON file, where it lies.
type jsonString struct {
	path       []string // the keys leading to it
	value      string
	start, end int
}

// jsonStrings returns every string value that is an object member's, in
// file order, with its place. The file is one JSON value; a key twice in
// an object is an error (readers differ on which one counts).
func jsonStrings(src []byte) ([]jsonString, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var out []jsonString
	var walk func(path []string, start int) error
	walk = func(path []string, start int) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch t := tok.(type) {
		case json.Delim:
			switch t {
			case '{':
				var seen []string
				for dec.More() {
					k, err := dec.Token()
					if err != nil {
						return err
					}
					key, ok := k.(string)
					if !ok {
						return errors.New("a key that is not a string")
					}
					// Go's encoding/json, docker's reader, matches keys
					// to fields without regard to case.
					for _, k := range seen {
						if strings.EqualFold(k, key) {
							return errors.New("a key twice")
						}
					}
					seen = append(seen, key)
					at := int(dec.InputOffset())
					for at < len(src) && strings.IndexByte(" \t\r\n:", src[at]) >= 0 {
						at++
					}
					if err := walk(append(path[:len(path):len(path)], key), at); err != nil {
						return err
					}
				}
			case '[':
				for dec.More() {
					if err := walk(append(path[:len(path):len(path)], "[]"), -1); err != nil {
						return err
					}
				}
			default:
				return errors.New("not JSON")
			}
			_, err := dec.Token() // the closing delimiter
			return err
		case string:
			if start >= 0 {
				end := int(dec.InputOffset())
				if start >= end || src[start] != '"' || src[end-1] != '"' {
					return errors.New("a string whose place is unknown")
				}
				out = append(out, jsonString{path: path, value: t, start: start, end: end})
			}
		}
		return nil
	}
	if err := walk(nil, -1); err != nil {
		return nil, errors.New("not JSON")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not one JSON value")
	}
	return out, nil
}

// jsonQuote encodes s as a JSON string, HTML characters as they are.
func jsonQuote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// fakeDockerConfig fakes docker's config.json: in "auths", each
// registry's "auth" (base64 of user:password; the fake keeps that form, of
// the fake password, for the broker to swap in Basic), "password" (older
// files), "registrytoken" (a bearer token) and "identitytoken" (an OAuth
// refresh token, sent in the token request's body: swapped in the form
// field refresh_token) become fakes bound to that registry's host (Docker
// Hub's: index.docker.io, registry-1.docker.io and auth.docker.io). Each
// string is replaced in place; everything else, "credsStore" and
// "credHelpers" included, passes as it is. A key that is no registry, an
// "auth" that is not base64 of user:password, or a secret that is not a
// string is an error.
func fakeDockerConfig(real []byte, fake Faker) ([]byte, []Cred, error) {
	if len(bytes.TrimSpace(real)) == 0 {
		return real, nil, nil
	}
	strs, err := jsonStrings(real)
	if err != nil {
		return nil, nil, fmt.Errorf("docker-config: %w", err)
	}
	var edits []edit
	var creds []Cred
	for _, s := range strs {
		if len(s.path) != 3 || !strings.EqualFold(s.path[0], "auths") || s.value == "" {
			continue
		}
		key, field := s.path[1], ""
		for _, f := range []string{"auth", "password", "registrytoken", "identitytoken"} {
			if strings.EqualFold(s.path[2], f) {
				field = f
			}
		}
		var in []string
		switch field {
		case "":
			continue
		case "identitytoken":
			in = []string{"form:refresh_token"}
		}
		hosts, err := dockerHosts(key)
		if err != nil {
			return nil, nil, fmt.Errorf("docker-config: auths: a key that is no registry: %w", err)
		}
		name := "docker:" + key + ":" + field
		secret, text := s.value, ""
		if field == "auth" {
			raw, err := base64.StdEncoding.DecodeString(s.value)
			user, pass, ok := strings.Cut(string(raw), ":")
			if err != nil || !ok || pass == "" {
				return nil, nil, fmt.Errorf("docker-config: auths: auth is not base64 of user:password")
			}
			secret = pass
			text = base64.StdEncoding.EncodeToString([]byte(user + ":" + fake(name, pass)))
		} else {
			text = fake(name, secret)
		}
		edits = append(edits, edit{s.start, s.end, jsonQuote(text)})
		creds = append(creds, Cred{Name: name, Real: secret, Hosts: hosts, In: in})
	}
	// A secret of the shape docker reads that is not a string (a number,
	// an object) is not understood.
	var shape struct {
		Auths map[string]map[string]any `json:"auths"`
	}
	if err := json.Unmarshal(real, &shape); err != nil {
		return nil, nil, fmt.Errorf("docker-config: auths: not a map of registries")
	}
	for _, entry := range shape.Auths {
		for k, v := range entry {
			for _, f := range []string{"auth", "password", "registrytoken", "identitytoken"} {
				if _, isStr := v.(string); strings.EqualFold(k, f) && v != nil && !isStr {
					return nil, nil, fmt.Errorf("docker-config: auths: %s is not a string", f)
				}
			}
		}
	}
	return []byte(applyEdits(string(real), edits)), creds, nil
}
