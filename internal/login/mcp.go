package login

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
)

// The MCP servers' OAuth tokens that Codex and Gemini CLI keep beside
// their own logins (docs/design.md section 9.6; read from their CLIs,
// Codex 0.169.0 and Gemini CLI 0.61.0). As Claude Code's mcpOAuth
// (fakeMCPOAuth): an entry's access token is bound to the host of the MCP
// server's URL, which takes it as a bearer token; its refresh token is
// bound to the token endpoint when the file names one (Gemini CLI's
// tokenUrl: swapped only in that endpoint's refresh_token field, and the
// broker renews the entry's tokens), else it is an unbound fake, swapped
// nowhere (Codex's file names the authorization server, not its token
// endpoint, which discovery finds): the server then needs a new login in
// the tree when its access token expires.

func init() {
	register(Format{Name: "codex-mcp-oauth", Paths: []string{".codex/.credentials.json"}, Fake: fakeCodexMCP})
	register(Format{Name: "gemini-mcp-oauth", Paths: []string{".gemini/mcp-oauth-tokens.json"},
		Fake: fakeGeminiMCP, Update: updateGeminiMCP})
}

// mcpAccessHost returns the host an MCP server's access token is bound
// to: the host of its URL, or "" when the URL names none.
func mcpAccessHost(serverURL any) string {
	u, ok := serverURL.(string)
	if !ok || u == "" {
		return ""
	}
	h, err := hostOfURL(u)
	if err != nil {
		return ""
	}
	return h
}

// fakeUnbound fakes o[field] as a fake swapped nowhere and returns its
// real value ("" when the field is empty or absent; the fake itself when
// readBack parses the fake file again).
func fakeUnbound(f string, o map[string]any, field, name string, fake Faker) (string, error) {
	v, err := str(f, o, field)
	if err != nil || v == "" {
		return "", err
	}
	fv := fake(name, v)
	o[field] = fv
	if fv == v {
		return "", nil // readBack: v is a fake already
	}
	return v, nil
}

// checkUnbound fails when out still holds one of the unbound fakes' real
// values: they are no Cred, so register's check does not see them.
func checkUnbound(f string, out []byte, unbound []string) error {
	for _, r := range unbound {
		if leaks(string(out), r) {
			return fmt.Errorf("%s: an MCP server's secret would stay in the fake file", f)
		}
	}
	return nil
}

// Codex: CODEX_HOME/.credentials.json, its MCP OAuth store when the OS
// keyring is not used (mcp_oauth_credentials_store = "file", or "auto"
// with no keyring): {KEY: {"server_name", "server_url", "issuer"
// (optional), "client_id", "access_token", "expires_at" (ms, optional),
// "refresh_token" (optional), "scopes", "executor_owned" (optional)}},
// written compact (serde_json::to_string) and in place (fs::write, mode
// 0600). KEY is "server_name|hash of the URL".
func fakeCodexMCP(real []byte, fake Faker) ([]byte, []Cred, error) {
	const f = "codex-mcp-oauth"
	m, err := parseJSONFile(f, real)
	if err != nil {
		return nil, nil, err
	}
	if len(m) == 0 {
		return nil, nil, fmt.Errorf("%s: no server", f)
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var creds []Cred
	var unbound []string
	for _, k := range keys {
		e, ok := m[k].(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("%s: an entry is not an object", f)
		}
		if err := checkUnknown(f, "["+strconv.Quote(k)+"].", e, "access_token", "refresh_token"); err != nil {
			return nil, nil, err
		}
		access, err := str(f, e, "access_token")
		if err != nil {
			return nil, nil, err
		}
		aName := "codex:mcp:" + k + ":access_token"
		if host := mcpAccessHost(e["server_url"]); host != "" && access != "" {
			e["access_token"] = fake(aName, access)
			creds = append(creds, Cred{Name: aName, Real: access, Hosts: []string{host}})
		} else if r, err := fakeUnbound(f, e, "access_token", aName, fake); err != nil {
			return nil, nil, err
		} else if r != "" {
			unbound = append(unbound, r)
		}
		r, err := fakeUnbound(f, e, "refresh_token", "codex:mcp:"+k+":refresh_token", fake)
		if err != nil {
			return nil, nil, err
		}
		if r != "" {
			unbound = append(unbound, r)
		}
	}
	out, err := m.encode(indented(real))
	if err != nil {
		return nil, nil, err
	}
	if err := checkUnbound(f, out, unbound); err != nil {
		return nil, nil, err
	}
	return out, creds, nil
}

// Gemini CLI: ~/.gemini/mcp-oauth-tokens.json (under GEMINI_CLI_HOME),
// its MCP OAuth store unless GEMINI_FORCE_ENCRYPTED_FILE is set: a JSON
// array of {"serverName", "token": {"accessToken", "refreshToken"
// (optional), "expiresAt" (ms, optional), "tokenType", "scope"},
// "clientId", "tokenUrl", "mcpServerUrl", "updatedAt"}, written by
// JSON.stringify(tokens, null, 2) in place (mode 0600). A refresh sends
// the refresh token to tokenUrl in a form body (refresh_token, client_id,
// and the client secret of the user's settings, never of this file).
func fakeGeminiMCP(real []byte, fake Faker) ([]byte, []Cred, error) {
	const f = "gemini-mcp-oauth"
	entries, err := parseGeminiMCP(real)
	if err != nil {
		return nil, nil, err
	}
	var creds []Cred
	var unbound []string
	seen := map[string]bool{}
	for _, e := range entries {
		name, _ := e["serverName"].(string)
		if name == "" || seen[name] {
			// Gemini CLI keys its entries by serverName: a later one of a
			// name wins there, and the names here must be one per entry.
			return nil, nil, fmt.Errorf("%s: an entry with no serverName, or a repeated one", f)
		}
		seen[name] = true
		where := "[" + strconv.Quote(name) + "]."
		if err := checkUnknown(f, where, e, "token", "tokenUrl"); err != nil {
			return nil, nil, err
		}
		t, err := jsonFile(e).object(f, "token")
		if err != nil {
			return nil, nil, err
		}
		if t == nil {
			return nil, nil, fmt.Errorf("%s: %sno token", f, where)
		}
		if err := checkUnknown(f, where+"token.", t, "accessToken", "refreshToken", "tokenType"); err != nil {
			return nil, nil, err
		}
		access, err := str(f, t, "accessToken")
		if err != nil {
			return nil, nil, err
		}
		refresh, err := str(f, t, "refreshToken")
		if err != nil {
			return nil, nil, err
		}
		aName, rName := "gemini:mcp:"+name+":accessToken", "gemini:mcp:"+name+":refreshToken"
		host := mcpAccessHost(e["mcpServerUrl"])
		tokenHost, tokenPath := tokenEndpoint(e["tokenUrl"])
		if host != "" && access != "" {
			t["accessToken"] = fake(aName, access)
			creds = append(creds, Cred{Name: aName, Real: access, Hosts: []string{host}})
			if refresh != "" && tokenHost != "" {
				t["refreshToken"] = fake(rName, refresh)
				creds = append(creds, Cred{Name: rName, Real: refresh, Hosts: []string{tokenHost}, In: []string{"form:refresh_token"},
					Paths: []string{tokenPath}, Renews: map[string]string{"access_token": aName, "refresh_token": rName}})
				continue
			}
		} else if r, err := fakeUnbound(f, t, "accessToken", aName, fake); err != nil {
			return nil, nil, err
		} else if r != "" {
			unbound = append(unbound, r)
		}
		// No token endpoint, or no access token the broker could renew: a
		// refresh through the broker would hand the tree a real token.
		r, err := fakeUnbound(f, t, "refreshToken", rName, fake)
		if err != nil {
			return nil, nil, err
		}
		if r != "" {
			unbound = append(unbound, r)
		}
	}
	out, err := encodeGeminiMCP(entries, indented(real))
	if err != nil {
		return nil, nil, err
	}
	if err := checkUnbound(f, out, unbound); err != nil {
		return nil, nil, err
	}
	return out, creds, nil
}

// tokenEndpoint returns the host and path of a token endpoint's URL, or
// "" when it names no host.
func tokenEndpoint(v any) (host, path string) {
	s, ok := v.(string)
	if !ok || s == "" {
		return "", ""
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return "", ""
	}
	h, err := normHost(u.Host)
	if err != nil {
		return "", ""
	}
	path = u.EscapedPath()
	if path == "" {
		path = "/"
	}
	return h, path
}

// parseGeminiMCP parses Gemini CLI's MCP token file: one JSON array of
// objects, strictly.
func parseGeminiMCP(real []byte) ([]map[string]any, error) {
	const f = "gemini-mcp-oauth"
	dec := json.NewDecoder(bytes.NewReader(real))
	dec.UseNumber()
	var entries []any
	if err := dec.Decode(&entries); err != nil || entries == nil {
		return nil, fmt.Errorf("%s: not a JSON array", f)
	}
	if _, err := dec.Token(); err == nil {
		return nil, fmt.Errorf("%s: data after the JSON array", f)
	}
	if len(entries) == 0 {
		return nil, fmt.Errorf("%s: no server", f)
	}
	out := make([]map[string]any, len(entries))
	for i, e := range entries {
		o, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: an entry is not an object", f)
		}
		out[i] = o
	}
	return out, nil
}

func encodeGeminiMCP(entries []map[string]any, indent bool) ([]byte, error) {
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(entries); err != nil {
		return nil, err
	}
	// JSON.stringify writes no newline at the end.
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), nil
}

// updateGeminiMCP writes a refresh's renewed tokens into the entry of the
// server whose refresh token was renewed (t.Refreshed), as Gemini CLI
// does: accessToken, refreshToken (a response without one keeps the old),
// expiresAt in milliseconds and updatedAt; the other entries as they are.
func updateGeminiMCP(real []byte, t Tokens) ([]byte, error) {
	const f = "gemini-mcp-oauth"
	entries, err := parseGeminiMCP(real)
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		name, _ := e["serverName"].(string)
		if name == "" || "gemini:mcp:"+name+":refreshToken" != t.Refreshed {
			continue
		}
		tok, err := jsonFile(e).object(f, "token")
		if err != nil || tok == nil {
			return nil, fmt.Errorf("%s: the renewed server's entry has no token", f)
		}
		setIf(tok, "accessToken", t.Access)
		setIf(tok, "refreshToken", t.Refresh)
		if t.ExpiresIn > 0 {
			tok["expiresAt"] = json.Number(strconv.FormatInt(t.Now.Add(t.ExpiresIn).UnixMilli(), 10))
		}
		e["updatedAt"] = json.Number(strconv.FormatInt(t.Now.UnixMilli(), 10))
		return encodeGeminiMCP(entries, indented(real))
	}
	return nil, fmt.Errorf("%s: no entry of the renewed server", f)
}
