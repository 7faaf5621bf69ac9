package login

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// hashFaker is a Faker whose fakes depend on the name only, like
// broker.Fake: never a real value of these tests.
func hashFaker(name, real string) string {
	return "FAKE" + strings.Repeat("x", max(0, len(real)-4))[:max(0, len(real)-4)] + "#" + name
}

// jwt builds an unsigned-looking JWT with a signature of sig.
func jwt(claims, sig string) string {
	e := base64.RawURLEncoding.EncodeToString
	return e([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + e([]byte(claims)) + "." + sig
}

// claudeMCPFile is a Claude Code login with MCP servers' tokens: one
// with a serverUrl, one without, one whose login is pending (empty
// accessToken).
var claudeMCPFile = `{"claudeAiOauth":{"accessToken":"` + realAccess + `","refreshToken":"` + realRefresh + `","expiresAt":1},` +
	`"mcpOAuth":{"linear|a1b2":{"serverName":"linear","serverUrl":"https://mcp.linear.app/sse","accessToken":"` + realKey + `",` +
	`"refreshToken":"` + mcpRefresh + `","expiresAt":1748658860401,"scope":"read","clientId":"client-1","clientSecret":"` + mcpSecret + `",` +
	`"discoveryState":{"authorizationServerUrl":"https://linear.app"}},` +
	`"nourl|c3d4":{"serverName":"nourl","accessToken":"` + mcpNoURL + `","refreshToken":"` + mcpNoURL + `R","clientSecret":"` + mcpSecret + `2"},` +
	`"pending|e5f6":{"serverName":"p","serverUrl":"https://p.example.com","accessToken":""}}}`

var (
	mcpRefresh = "mcp-refresh-" + strings.Repeat("Q7w", 12)
	mcpSecret  = "mcp-secret-" + strings.Repeat("Z5e", 12)
	mcpNoURL   = "mcp-nourl-" + strings.Repeat("N4u", 12)
)

var (
	realAccess  = "sk-ant-oat01-" + strings.Repeat("A1b2", 20)
	realRefresh = "sk-ant-ort01-" + strings.Repeat("R9z8", 20)
	realID      = jwt(`{"email":"dev@example.com","https://api.openai.com/auth":{"chatgpt_plan_type":"pro"}}`, strings.Repeat("S1g", 20))
	realKey     = "sk-proj-" + strings.Repeat("K3y", 16)
)

func reals(file string) []string {
	var out []string
	for _, r := range []string{realAccess, realRefresh, realID, realKey, mcpRefresh, mcpSecret, mcpNoURL} {
		if strings.Contains(file, r) {
			out = append(out, r)
		}
	}
	return out
}

func TestAgentFormats(t *testing.T) {
	for _, tc := range []struct {
		format, file string
		names        []string
		check        func(t *testing.T, out map[string]any)
	}{
		{"claude-credentials",
			`{"claudeAiOauth":{"accessToken":"` + realAccess + `","refreshToken":"` + realRefresh + `","expiresAt":1748658860401,"scopes":["user:inference","user:profile"],"subscriptionType":"max","refreshTokenExpiresAt":null}}`,
			[]string{"claude:accessToken", "claude:refreshToken"},
			func(t *testing.T, out map[string]any) {
				o := out["claudeAiOauth"].(map[string]any)
				if o["subscriptionType"] != "max" || o["expiresAt"].(json.Number) != "1748658860401" {
					t.Errorf("other fields changed: %v", o)
				}
			}},
		{"claude-credentials", claudeMCPFile,
			[]string{"claude:accessToken", "claude:refreshToken", "claude:mcpOAuth:linear|a1b2:accessToken"},
			func(t *testing.T, out map[string]any) {
				mcp := out["mcpOAuth"].(map[string]any)
				l := mcp["linear|a1b2"].(map[string]any)
				if l["serverUrl"] != "https://mcp.linear.app/sse" || l["clientId"] != "client-1" || l["scope"] != "read" {
					t.Errorf("other fields changed: %v", l)
				}
				for _, k := range []string{"accessToken", "refreshToken", "clientSecret"} {
					if !strings.HasPrefix(mcp["nourl|c3d4"].(map[string]any)[k].(string), "FAKE") || !strings.HasPrefix(l[k].(string), "FAKE") {
						t.Errorf("%s is not a fake", k)
					}
				}
				if mcp["pending|e5f6"].(map[string]any)["accessToken"] != "" {
					t.Errorf("an empty accessToken changed")
				}
			}},
		{"claude-credentials", `{"mcpOAuth":{"s|1":{"serverName":"s","serverUrl":"http://127.0.0.1:8080/mcp","accessToken":"` + realAccess + `"}}}`,
			[]string{"claude:mcpOAuth:s|1:accessToken"}, nil},
		{"codex-auth",
			"{\n  \"OPENAI_API_KEY\": null,\n  \"tokens\": {\n    \"id_token\": \"" + realID + "\",\n    \"access_token\": \"" + realAccess + "\",\n    \"refresh_token\": \"" + realRefresh + "\",\n    \"account_id\": \"acct-1\"\n  },\n  \"last_refresh\": \"2026-01-01T00:00:00Z\"\n}\n",
			[]string{"codex:access_token", "codex:refresh_token"},
			func(t *testing.T, out map[string]any) {
				tok := out["tokens"].(map[string]any)
				if tok["account_id"] != "acct-1" {
					t.Errorf("account_id changed: %v", tok)
				}
				// The id_token stays decodable: its claims as they were.
				parts := strings.Split(tok["id_token"].(string), ".")
				claims, err := base64.RawURLEncoding.DecodeString(parts[1])
				if len(parts) != 3 || err != nil || !strings.Contains(string(claims), "chatgpt_plan_type") {
					t.Errorf("the id_token is not decodable: %q", tok["id_token"])
				}
			}},
		{"codex-auth", `{"OPENAI_API_KEY":"` + realKey + `"}`, []string{"codex:OPENAI_API_KEY"}, nil},
		{"gemini-oauth",
			"{\n  \"access_token\": \"" + realAccess + "\",\n  \"refresh_token\": \"" + realRefresh + "\",\n  \"scope\": \"openid\",\n  \"token_type\": \"Bearer\",\n  \"id_token\": \"" + realID + "\",\n  \"expiry_date\": 1748658860401\n}",
			[]string{"gemini:access_token", "gemini:refresh_token"}, nil},
	} {
		t.Run(tc.format, func(t *testing.T) {
			f := formats[tc.format]
			out, creds, err := f.Fake([]byte(tc.file), hashFaker)
			if err != nil {
				t.Fatal(err)
			}
			if r := reals(string(out)); len(r) > 0 {
				t.Fatalf("the fake file holds %d real values", len(r))
			}
			if indented([]byte(tc.file)) != indented(out) {
				t.Errorf("the file's layout changed")
			}
			var names []string
			for _, c := range creds {
				names = append(names, c.Name)
				if !strings.Contains(tc.file, c.Real) || len(c.Hosts) == 0 {
					t.Errorf("cred %s: %v", c.Name, c.Hosts)
				}
				if c.Renews != nil && (len(c.Paths) == 0 || len(c.In) == 0) {
					t.Errorf("cred %s renews without a body place on a path", c.Name)
				}
			}
			if strings.Join(names, ",") != strings.Join(tc.names, ",") {
				t.Errorf("creds %v, want %v", names, tc.names)
			}
			var m map[string]any
			dec := json.NewDecoder(bytes.NewReader(out))
			dec.UseNumber()
			if err := dec.Decode(&m); err != nil {
				t.Fatal(err)
			}
			if tc.check != nil {
				tc.check(t, m)
			}
		})
	}
}

func TestAgentFormatsRefuse(t *testing.T) {
	for _, tc := range []struct{ format, file string }{
		{"claude-credentials", `not json`},
		{"claude-credentials", `{"claudeAiOauth":{"accessToken":"a"}} {}`},
		{"claude-credentials", `{"claudeAiOauth":{"refreshToken":"x"}}`},
		{"claude-credentials", `{"claudeAiOauth":{"accessToken":"a"},"mcpOAuth":{"s":{"accessToken":"b"}}}`},
		{"claude-credentials", `{"claudeAiOauth":{"accessToken":"a","sessionToken":"b"}}`},
		{"claude-credentials", `{"mcpOAuth":{"s":{"accessToken":"` + realAccess + `","sessionToken":"` + realKey + `"}}}`},
		{"claude-credentials", `{"mcpOAuth":{"s":{"accessToken":"` + realAccess + `","discoveryState":{"secret":"` + realKey + `"}}}}`},
		{"claude-credentials", `{"mcpOAuth":{"s":"` + realAccess + `"}}`},
		{"claude-credentials", `{"mcpOAuth":[]}`},
		{"claude-credentials", `{"mcpOAuth":{"s":{"refreshToken":7}}}`},
		{"claude-credentials", `{"mcpOAuth":{"s":{"clientSecret":"short"}}}`},
		{"claude-credentials", `{"mcpOAuth":{"s":{"refreshToken":"` + realRefresh + `","serverName":"` + realRefresh + `"}}}`},
		{"claude-credentials", `{"claudeAiOauth":{"accessToken":"` + realAccess + `"},"mcpXaaIdp":{}}`},
		{"claude-credentials", `{}`},
		{"claude-credentials", `{"claudeAiOauth":{"accessToken":7}}`},
		{"codex-auth", `{"OPENAI_API_KEY":null,"tokens":null}`},
		{"codex-auth", `{"tokens":{"access_token":"a","other_secret":"b"}}`},
		{"codex-auth", `{"tokens":[]}`},
		{"gemini-oauth", `{"scope":"x"}`},
		{"gemini-oauth", `{"access_token":"a","client_secret":"b"}`},
		{"gemini-oauth", `[]`},
		{"gemini-oauth", `{"access_token":"short"}`},
	} {
		if _, _, err := formats[tc.format].Fake([]byte(tc.file), hashFaker); err == nil {
			t.Errorf("%s %q: no error", tc.format, tc.file)
		}
	}
}

func TestAgentUpdate(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	tok := Tokens{Access: "new-" + realAccess, Refresh: "new-" + realRefresh, ID: realID, ExpiresIn: time.Hour, Now: now}
	for _, tc := range []struct{ format, file, want string }{
		{"claude-credentials", `{"claudeAiOauth":{"accessToken":"a","refreshToken":"r","expiresAt":1,"scopes":["x"]}}`,
			`{"claudeAiOauth":{"accessToken":"new-` + realAccess + `","expiresAt":1800003600000,"refreshToken":"new-` + realRefresh + `","scopes":["x"]}}`},
		{"gemini-oauth", `{"access_token":"a","refresh_token":"r","expiry_date":1,"scope":"s"}`,
			`{"access_token":"new-` + realAccess + `","expiry_date":1800003600000,"id_token":"` + realID + `","refresh_token":"new-` + realRefresh + `","scope":"s"}`},
		{"codex-auth", `{"OPENAI_API_KEY":null,"tokens":{"access_token":"a","refresh_token":"r","id_token":"i","account_id":"x"},"last_refresh":"2020-01-01T00:00:00Z"}`,
			`{"OPENAI_API_KEY":null,"last_refresh":"2027-01-15T08:00:00Z","tokens":{"access_token":"new-` + realAccess + `","account_id":"x","id_token":"` + realID + `","refresh_token":"new-` + realRefresh + `"}}`},
	} {
		got, err := formats[tc.format].Update([]byte(tc.file), tok)
		if err != nil {
			t.Fatalf("%s: %v", tc.format, err)
		}
		if string(got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.format, got, tc.want)
		}
	}
}

// FuzzAgentFormats: whatever the file, an agent format either refuses it
// or writes a file with no real value of a credential it returned, and
// what it writes parses again to the same credentials.
func FuzzAgentFormats(f *testing.F) {
	f.Add([]byte(`{"claudeAiOauth":{"accessToken":"` + realAccess + `","refreshToken":"` + realRefresh + `","expiresAt":1}}`))
	f.Add([]byte(claudeMCPFile))
	f.Add([]byte(`{"mcpOAuth":{"a":{"serverUrl":"h:1","accessToken":"x0123456789abcdef","clientSecret":"y0123456789abcdef"},"b":{"refreshToken":"x0123456789abcdef"}}}`))
	f.Add([]byte(`{"OPENAI_API_KEY":"` + realKey + `","tokens":{"id_token":"` + realID + `","access_token":"a\u0041\/b0123456789abcdef","refresh_token":"r0123456789abcdef"}}`))
	f.Add([]byte(`{"access_token":"ya29.x0123456789abcdef","refresh_token":"1//y0123456789abcdef","id_token":"e.y.z","expiry_date":1e3}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"claude-credentials", "codex-auth", "gemini-oauth"} {
			out, creds, err := formats[name].Fake(data, hashFaker)
			if err != nil {
				continue
			}
			for _, c := range creds {
				if c.Real == "" || bytes.Contains(out, []byte(c.Real)) {
					t.Fatalf("%s: the fake file holds %s's real value", name, c.Name)
				}
				if enc, _ := json.Marshal(c.Real); bytes.Contains(out, enc) {
					t.Fatalf("%s: the fake file holds %s's real value encoded", name, c.Name)
				}
			}
			for _, id := range secretValues(data) {
				if len(id) >= minSecret && bytes.Contains(out, []byte(id)) {
					t.Fatalf("%s: the fake file holds a real id_token, or an MCP server's unbound secret", name)
				}
			}
			if _, _, err := formats[name].Fake(out, hashFaker); err != nil {
				t.Fatalf("%s: its own fake file does not parse: %v", name, err)
			}
		}
	})
}

// secretValues returns the string values under the keys of the secrets
// a format fakes without returning a Cred (id_token; an MCP server's
// tokens and client secret) in a JSON document, at any depth.
func secretValues(data []byte) []string {
	var v any
	if json.Unmarshal(data, &v) != nil {
		return nil
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				if s, ok := e.(string); ok && contains([]string{"id_token", "accessToken", "refreshToken", "clientSecret"}, k) {
					out = append(out, s)
				}
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// The agents' formats are in FuzzFakers too, from the seeds of
// FuzzAgentFormats.
func init() {
	fuzzSeeds["claude-credentials"] = []string{`{"claudeAiOauth":{"accessToken":"` + realAccess + `","refreshToken":"` + realRefresh + `","expiresAt":1}}`, claudeMCPFile}
	fuzzSeeds["codex-auth"] = []string{`{"OPENAI_API_KEY":"` + realKey + `","tokens":{"id_token":"` + realID + `","access_token":"a\u0041\/b0123456789abcdef","refresh_token":"r0123456789abcdef"}}`}
	fuzzSeeds["gemini-oauth"] = []string{`{"access_token":"ya29.x0123456789abcdef","refresh_token":"1//y0123456789abcdef","id_token":"e.y.z","expiry_date":1e3}`}
}
