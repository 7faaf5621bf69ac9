package login

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The agents' own logins (issue 26 item 2). Each file holds an OAuth
// access token (bound to the provider's API hosts, swapped in the
// authorization headers), a refresh token (bound to the provider's token
// endpoint, swapped only in the refresh_token field of that endpoint's
// body, where the broker renews the tokens itself: Cred.Renews), and for
// Codex and Gemini an OpenID id_token.
//
// The id_token is a JWT the CLI decodes for the account (email, plan,
// account id); it is not what the APIs take as a bearer credential, but a
// signed one could be exchanged at the provider (Codex trades it for an
// API key at login), so it is faked too: header and claims pass, the
// signature is a fake (FakeJWT). It stays decodable, is swapped nowhere,
// and is not brokered: a valid id_token never reaches the tree.

// The hosts and endpoints of the agents (from their CLIs: Claude Code
// 2.1, Codex 0.x, Gemini CLI 0.x; docs/design.md section 9.6, "The
// agents' own logins and token refresh").
var (
	claudeAPIHosts   = []string{"api.anthropic.com"}
	claudeTokenHosts = []string{"platform.claude.com", "console.anthropic.com"}
	claudeTokenPaths = []string{"/v1/oauth/token"}
	codexAPIHosts    = []string{"chatgpt.com", "api.openai.com"}
	codexTokenHosts  = []string{"auth.openai.com"}
	codexTokenPaths  = []string{"/oauth/token"}
	// oauth2.googleapis.com: google-auth-library checks a cached or
	// refreshed token at its /tokeninfo (Authorization: Bearer), and Gemini
	// CLI asks for a new login when that fails.
	geminiAPIHosts   = []string{"cloudcode-pa.googleapis.com", "www.googleapis.com", "generativelanguage.googleapis.com", "oauth2.googleapis.com"}
	geminiTokenHosts = []string{"oauth2.googleapis.com"}
	geminiTokenPaths = []string{"/token"}
	// bodyIn are the places a refresh token is swapped in: the token
	// endpoint's refresh_token field, a form or JSON body (Claude Code and
	// Codex send JSON, Gemini CLI a form).
	bodyIn = []string{"json:refresh_token", "form:refresh_token"}
)

func init() {
	register(Format{Name: "claude-credentials", Paths: []string{".claude/.credentials.json"},
		Fake: fakeClaude, Update: updateClaude})
	register(Format{Name: "codex-auth", Paths: []string{".codex/auth.json"},
		Fake: fakeCodex, Update: updateCodex})
	register(Format{Name: "gemini-oauth", Paths: []string{".gemini/oauth_creds.json"},
		Fake: fakeGemini, Update: updateGemini})
}

// jsonFile is a JSON credential file's object, numbers kept as written.
type jsonFile map[string]any

// parseJSONFile parses one JSON object, strictly: nothing after it.
func parseJSONFile(format string, real []byte) (jsonFile, error) {
	dec := json.NewDecoder(bytes.NewReader(real))
	dec.UseNumber()
	var m jsonFile
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, fmt.Errorf("%s: not a JSON object", format)
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("%s: data after the JSON object", format)
	}
	return m, nil
}

// encode writes m as the file was written: indented by two spaces when the
// original was indented, compact otherwise.
func (m jsonFile) encode(indented bool) ([]byte, error) {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if indented {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(m); err != nil {
		return nil, err
	}
	if !indented {
		return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
	}
	return out.Bytes(), nil
}

func indented(real []byte) bool { return bytes.Contains(real, []byte("\n ")) }

// object returns m[key] as an object; absent is (nil, true).
func (m jsonFile) object(format, key string) (map[string]any, error) {
	v, ok := m[key]
	if !ok || v == nil {
		return nil, nil
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: %s is not an object", format, key)
	}
	return o, nil
}

// minSecret is the shortest value taken for a token: a shorter one is no
// token these files hold, and could not be told from the file's other
// text (the broker does not look for values that short either).
const minSecret = 16

// str returns o[key] as a token; absent or null is "".
func str(format string, o map[string]any, key string) (string, error) {
	v, ok := o[key]
	if !ok || v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s: %s is not a string", format, key)
	}
	if s != "" && len(s) < minSecret {
		return "", fmt.Errorf("%s: %s is too short to be a token", format, key)
	}
	return s, nil
}

// secretish reports whether a key names what could be a credential: an
// unknown string under such a key makes the file not understood (fail
// closed), since it would pass to the tree as it is.
func secretish(key string) bool {
	k := strings.ToLower(key)
	for _, w := range []string{"token", "secret", "password", "apikey", "api_key", "credential"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// checkUnknown fails on a string under a secretish key of o that known
// does not name, in o or any object below it.
func checkUnknown(format, where string, o map[string]any, known ...string) error {
	for k, v := range o {
		if contains(known, k) {
			continue
		}
		switch v := v.(type) {
		case string:
			if secretish(k) && v != "" {
				return fmt.Errorf("%s: %s%s: an unknown credential field", format, where, k)
			}
		case map[string]any:
			if err := checkUnknown(format, where+k+".", v); err != nil {
				return err
			}
		case []any:
			for _, e := range v {
				if eo, ok := e.(map[string]any); ok {
					if err := checkUnknown(format, where+k+"[].", eo); err != nil {
						return err
					}
				} else if s, ok := e.(string); ok && secretish(k) && s != "" {
					return fmt.Errorf("%s: %s%s: an unknown credential field", format, where, k)
				}
			}
		}
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// FakeJWT returns a JWT's fake: its header and claims as they are (the
// client decodes them), its signature a fake of fake's alphabet and
// length. It reports false when real is not a JWT.
func FakeJWT(fake Faker, name, real string) (string, bool) {
	h, rest, ok1 := strings.Cut(real, ".")
	p, sig, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || strings.Contains(sig, ".") || len(sig) < 16 {
		return "", false
	}
	hdr, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil || !json.Valid(hdr) {
		return "", false
	}
	if _, err := base64.RawURLEncoding.DecodeString(p); err != nil {
		return "", false
	}
	return h + "." + p + "." + fake(name+"#signature", sig), true
}

// fakeIDToken fakes an id_token: a JWT keeps its header and claims; any
// other value is faked whole.
func fakeIDToken(fake Faker, name, real string) string {
	if f, ok := FakeJWT(fake, name, real); ok {
		return f
	}
	return fake(name, real)
}

// Claude Code: ~/.claude/.credentials.json,
// {"claudeAiOauth": {"accessToken", "refreshToken", "expiresAt", "scopes",
// "subscriptionType", ...}, "mcpOAuth": {KEY: {"serverName", "serverUrl",
// "accessToken", "refreshToken", "expiresAt", "scope", "clientId",
// "clientSecret", "discoveryState"}}}: mcpOAuth holds the tokens of the
// MCP servers the user logged in to (fakeMCPOAuth). Other top-level
// entries are not understood: the file is masked.
func fakeClaude(real []byte, fake Faker) ([]byte, []Cred, error) {
	const f = "claude-credentials"
	m, err := parseJSONFile(f, real)
	if err != nil {
		return nil, nil, err
	}
	for k := range m {
		if k != "claudeAiOauth" && k != "mcpOAuth" {
			return nil, nil, fmt.Errorf("%s: %s: not understood", f, k)
		}
	}
	o, err := m.object(f, "claudeAiOauth")
	if err != nil {
		return nil, nil, err
	}
	mcp, err := m.object(f, "mcpOAuth")
	if err != nil {
		return nil, nil, err
	}
	if o == nil && mcp == nil {
		return nil, nil, fmt.Errorf("%s: no claudeAiOauth and no mcpOAuth object", f)
	}
	var creds []Cred
	if o != nil {
		if err := checkUnknown(f, "claudeAiOauth.", o, "accessToken", "refreshToken"); err != nil {
			return nil, nil, err
		}
		access, err := str(f, o, "accessToken")
		if err != nil {
			return nil, nil, err
		}
		refresh, err := str(f, o, "refreshToken")
		if err != nil {
			return nil, nil, err
		}
		if access == "" {
			return nil, nil, fmt.Errorf("%s: no accessToken", f)
		}
		aName, rName := "claude:accessToken", "claude:refreshToken"
		o["accessToken"] = fake(aName, access)
		creds = append(creds, Cred{Name: aName, Real: access, Hosts: claudeAPIHosts})
		if refresh != "" {
			o["refreshToken"] = fake(rName, refresh)
			creds = append(creds, Cred{Name: rName, Real: refresh, Hosts: claudeTokenHosts, In: bodyIn, Paths: claudeTokenPaths,
				Renews: map[string]string{"access_token": aName, "refresh_token": rName}})
		}
	}
	var unbound []string
	if mcp != nil {
		bound, hidden, err := fakeMCPOAuth(f, mcp, fake)
		if err != nil {
			return nil, nil, err
		}
		creds = append(creds, bound...)
		unbound = hidden
	}
	out, err := m.encode(indented(real))
	if err != nil {
		return nil, nil, err
	}
	// The unbound fakes are no Cred, so register's check does not see
	// them: the same check here.
	for _, r := range unbound {
		if leaks(string(out), r) {
			return nil, nil, fmt.Errorf("%s: an MCP server's secret would stay in the fake file", f)
		}
	}
	return out, creds, nil
}

// fakeMCPOAuth fakes Claude Code's mcpOAuth entries, in the order of
// their keys. An entry's accessToken is bound to the host of its
// serverUrl (the MCP server, which takes it as a bearer token); with no
// serverUrl that names a host it is an unbound fake. Its refreshToken and
// clientSecret are always unbound fakes: they go to the server's
// authorization server, whose token endpoint the file does not name
// (discovery finds it), and a refresh the broker does not renew would
// hand the tree a real access token. An unbound fake is swapped nowhere:
// when the access token expires, or has no host, the MCP server needs a
// new login in the tree. It returns the bound credentials and the real
// values of the unbound fakes.
func fakeMCPOAuth(f string, mcp map[string]any, fake Faker) ([]Cred, []string, error) {
	keys := make([]string, 0, len(mcp))
	for k := range mcp {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var creds []Cred
	var unbound []string
	for _, k := range keys {
		where := "mcpOAuth[" + strconv.Quote(k) + "]."
		e, ok := mcp[k].(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("%s: an mcpOAuth entry is not an object", f)
		}
		if err := checkUnknown(f, where, e, "accessToken", "refreshToken", "clientSecret"); err != nil {
			return nil, nil, err
		}
		host := ""
		if u, ok := e["serverUrl"].(string); ok && u != "" {
			if h, err := hostOfURL(u); err == nil {
				host = h
			}
		}
		for _, field := range []string{"accessToken", "refreshToken", "clientSecret"} {
			v, err := str(f, e, field)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: an mcpOAuth entry: %w", f, err)
			}
			if v == "" {
				continue
			}
			name := "claude:mcpOAuth:" + k + ":" + field
			fv := fake(name, v)
			e[field] = fv
			if field == "accessToken" && host != "" {
				creds = append(creds, Cred{Name: name, Real: v, Hosts: []string{host}})
			} else if fv != v {
				// fv == v only when readBack parses the fake file
				// again (its Faker returns the value): v is a fake then.
				unbound = append(unbound, v)
			}
		}
	}
	return creds, unbound, nil
}

// updateClaude writes renewed tokens into Claude Code's file as Claude
// Code does after a refresh: expiresAt in milliseconds.
func updateClaude(real []byte, t Tokens) ([]byte, error) {
	const f = "claude-credentials"
	m, err := parseJSONFile(f, real)
	if err != nil {
		return nil, err
	}
	o, err := m.object(f, "claudeAiOauth")
	if err != nil || o == nil {
		return nil, fmt.Errorf("%s: no claudeAiOauth object", f)
	}
	setIf(o, "accessToken", t.Access)
	setIf(o, "refreshToken", t.Refresh)
	if t.ExpiresIn > 0 {
		o["expiresAt"] = json.Number(strconv.FormatInt(t.Now.Add(t.ExpiresIn).UnixMilli(), 10))
	}
	return m.encode(indented(real))
}

// Codex: ~/.codex/auth.json, {"OPENAI_API_KEY": null or "sk-...",
// "tokens": {"id_token", "access_token", "refresh_token", "account_id"},
// "last_refresh": RFC 3339}. account_id passes (it names the account and
// is sent as ChatGPT-Account-Id; it is not a credential).
func fakeCodex(real []byte, fake Faker) ([]byte, []Cred, error) {
	const f = "codex-auth"
	m, err := parseJSONFile(f, real)
	if err != nil {
		return nil, nil, err
	}
	if err := checkUnknown(f, "", m, "OPENAI_API_KEY", "tokens"); err != nil {
		return nil, nil, err
	}
	var creds []Cred
	key, err := str(f, m, "OPENAI_API_KEY")
	if err != nil {
		return nil, nil, err
	}
	if key != "" {
		name := "codex:OPENAI_API_KEY"
		m["OPENAI_API_KEY"] = fake(name, key)
		creds = append(creds, Cred{Name: name, Real: key, Hosts: []string{"api.openai.com"}})
	}
	t, err := m.object(f, "tokens")
	if err != nil {
		return nil, nil, err
	}
	if t != nil {
		if err := checkUnknown(f, "tokens.", t, "id_token", "access_token", "refresh_token"); err != nil {
			return nil, nil, err
		}
		var v [3]string
		for i, k := range []string{"id_token", "access_token", "refresh_token"} {
			if v[i], err = str(f, t, k); err != nil {
				return nil, nil, err
			}
		}
		id, access, refresh := v[0], v[1], v[2]
		aName, rName, iName := "codex:access_token", "codex:refresh_token", "codex:id_token"
		if id != "" {
			t["id_token"] = fakeIDToken(fake, iName, id)
		}
		if access != "" {
			t["access_token"] = fake(aName, access)
			creds = append(creds, Cred{Name: aName, Real: access, Hosts: codexAPIHosts})
		}
		if refresh != "" {
			t["refresh_token"] = fake(rName, refresh)
			creds = append(creds, Cred{Name: rName, Real: refresh, Hosts: codexTokenHosts, In: bodyIn, Paths: codexTokenPaths,
				Renews: map[string]string{"access_token": aName, "refresh_token": rName, "id_token": iName}})
		}
	}
	if len(creds) == 0 {
		return nil, nil, fmt.Errorf("%s: no API key and no tokens", f)
	}
	out, err := m.encode(indented(real))
	return out, creds, err
}

// updateCodex writes renewed tokens as Codex does: the three tokens and
// last_refresh.
func updateCodex(real []byte, t Tokens) ([]byte, error) {
	const f = "codex-auth"
	m, err := parseJSONFile(f, real)
	if err != nil {
		return nil, err
	}
	o, err := m.object(f, "tokens")
	if err != nil || o == nil {
		return nil, fmt.Errorf("%s: no tokens object", f)
	}
	setIf(o, "access_token", t.Access)
	setIf(o, "refresh_token", t.Refresh)
	setIf(o, "id_token", t.ID)
	m["last_refresh"] = t.Now.UTC().Format(time.RFC3339Nano)
	return m.encode(indented(real))
}

// Gemini CLI: ~/.gemini/oauth_creds.json, google-auth-library's
// credentials: {"access_token", "refresh_token", "scope", "token_type",
// "id_token", "expiry_date" (ms)}.
func fakeGemini(real []byte, fake Faker) ([]byte, []Cred, error) {
	const f = "gemini-oauth"
	m, err := parseJSONFile(f, real)
	if err != nil {
		return nil, nil, err
	}
	if err := checkUnknown(f, "", m, "access_token", "refresh_token", "id_token", "token_type"); err != nil {
		return nil, nil, err
	}
	var v [3]string
	for i, k := range []string{"id_token", "access_token", "refresh_token"} {
		if v[i], err = str(f, m, k); err != nil {
			return nil, nil, err
		}
	}
	id, access, refresh := v[0], v[1], v[2]
	if access == "" && refresh == "" {
		return nil, nil, fmt.Errorf("%s: no access_token and no refresh_token", f)
	}
	aName, rName, iName := "gemini:access_token", "gemini:refresh_token", "gemini:id_token"
	var creds []Cred
	if id != "" {
		m["id_token"] = fakeIDToken(fake, iName, id)
	}
	if access != "" {
		m["access_token"] = fake(aName, access)
		creds = append(creds, Cred{Name: aName, Real: access, Hosts: geminiAPIHosts})
	}
	if refresh != "" {
		m["refresh_token"] = fake(rName, refresh)
		creds = append(creds, Cred{Name: rName, Real: refresh, Hosts: geminiTokenHosts, In: bodyIn, Paths: geminiTokenPaths,
			Renews: map[string]string{"access_token": aName, "refresh_token": rName, "id_token": iName}})
	}
	out, err := m.encode(indented(real))
	return out, creds, err
}

// updateGemini writes renewed tokens as google-auth-library does:
// expiry_date in milliseconds; a response without a refresh_token keeps
// the old one.
func updateGemini(real []byte, t Tokens) ([]byte, error) {
	const f = "gemini-oauth"
	m, err := parseJSONFile(f, real)
	if err != nil {
		return nil, err
	}
	setIf(m, "access_token", t.Access)
	setIf(m, "refresh_token", t.Refresh)
	setIf(m, "id_token", t.ID)
	if t.ExpiresIn > 0 {
		m["expiry_date"] = json.Number(strconv.FormatInt(t.Now.Add(t.ExpiresIn).UnixMilli(), 10))
	}
	return m.encode(indented(real))
}

func setIf(o map[string]any, key, v string) {
	if v != "" {
		o[key] = v
	}
}
