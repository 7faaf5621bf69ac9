package login

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// geminiMCPFile is Gemini CLI's MCP token store as it writes it: one
// server with a token endpoint, one without, one with no server URL.
var geminiMCPFile = "[\n  {\n    \"serverName\": \"linear\",\n    \"token\": {\n      \"accessToken\": \"" + realKey + "\",\n      \"refreshToken\": \"" + mcpRefresh + "\",\n      \"expiresAt\": 1748658860401,\n      \"tokenType\": \"Bearer\",\n      \"scope\": \"read\"\n    },\n    \"clientId\": \"client-1\",\n    \"tokenUrl\": \"https://linear.app/oauth/token\",\n    \"mcpServerUrl\": \"https://mcp.linear.app/mcp\",\n    \"updatedAt\": 1748658800000\n  },\n" +
	"  {\n    \"serverName\": \"notoken\",\n    \"token\": {\n      \"accessToken\": \"" + mcpSecret + "\",\n      \"refreshToken\": \"" + mcpSecret + "R\",\n      \"tokenType\": \"Bearer\"\n    },\n    \"mcpServerUrl\": \"http://127.0.0.1:8080/mcp\",\n    \"updatedAt\": 1\n  },\n" +
	"  {\n    \"serverName\": \"nourl\",\n    \"token\": {\n      \"accessToken\": \"" + mcpNoURL + "\",\n      \"refreshToken\": \"" + mcpNoURL + "R\",\n      \"tokenType\": \"Bearer\"\n    },\n    \"tokenUrl\": \"https://auth.example.com/token\",\n    \"updatedAt\": 2\n  }\n]"

// codexMCPFile is Codex's fallback MCP store as it writes it (compact):
// one server with a URL, one whose URL names no host.
var codexMCPFile = `{"linear|0123456789abcdef":{"server_name":"linear","server_url":"https://mcp.linear.app/mcp","issuer":"https://linear.app","client_id":"client-1","access_token":"` + realKey + `","expires_at":1748658860401,"refresh_token":"` + mcpRefresh + `","scopes":["read","write"]},` +
	`"odd|fedcba9876543210":{"server_name":"odd","server_url":"not a url","client_id":"c","access_token":"` + mcpNoURL + `","scopes":[],"executor_owned":true}}`

func TestMCPFormats(t *testing.T) {
	for _, tc := range []struct {
		format, file string
		names        []string
		check        func(t *testing.T, out []byte, creds []Cred)
	}{
		{"gemini-mcp-oauth", geminiMCPFile,
			[]string{"gemini:mcp:linear:accessToken", "gemini:mcp:linear:refreshToken", "gemini:mcp:notoken:accessToken"},
			func(t *testing.T, out []byte, creds []Cred) {
				var got []map[string]any
				if err := json.Unmarshal(out, &got); err != nil || len(got) != 3 {
					t.Fatalf("not Gemini's array: %v", err)
				}
				l := got[0]
				if l["serverName"] != "linear" || l["clientId"] != "client-1" || l["tokenUrl"] != "https://linear.app/oauth/token" || l["mcpServerUrl"] != "https://mcp.linear.app/mcp" {
					t.Errorf("other fields changed: %v", l)
				}
				for i := range got {
					tok := got[i]["token"].(map[string]any)
					for _, k := range []string{"accessToken", "refreshToken"} {
						if !strings.HasPrefix(tok[k].(string), "FAKE") {
							t.Errorf("%v: %s is not a fake", got[i]["serverName"], k)
						}
					}
					if tok["tokenType"] != "Bearer" {
						t.Errorf("tokenType changed")
					}
				}
				a, r := creds[0], creds[1]
				if !slices.Equal(a.Hosts, []string{"mcp.linear.app"}) || a.In != nil {
					t.Errorf("the access token is bound to %v in %v", a.Hosts, a.In)
				}
				if !slices.Equal(r.Hosts, []string{"linear.app"}) || !slices.Equal(r.Paths, []string{"/oauth/token"}) || !slices.Equal(r.In, []string{"form:refresh_token"}) ||
					r.Renews["access_token"] != a.Name || r.Renews["refresh_token"] != r.Name {
					t.Errorf("the refresh token is bound to %v %v %v, renews %v", r.Hosts, r.Paths, r.In, r.Renews)
				}
				if !slices.Equal(creds[2].Hosts, []string{"127.0.0.1:8080"}) {
					t.Errorf("a loopback server's token is bound to %v", creds[2].Hosts)
				}
			}},
		{"codex-mcp-oauth", codexMCPFile,
			[]string{"codex:mcp:linear|0123456789abcdef:access_token"},
			func(t *testing.T, out []byte, creds []Cred) {
				var got map[string]map[string]any
				if err := json.Unmarshal(out, &got); err != nil || len(got) != 2 {
					t.Fatalf("not Codex's map: %v", err)
				}
				l := got["linear|0123456789abcdef"]
				if l["server_url"] != "https://mcp.linear.app/mcp" || l["issuer"] != "https://linear.app" || l["client_id"] != "client-1" || len(l["scopes"].([]any)) != 2 {
					t.Errorf("other fields changed: %v", l)
				}
				for _, e := range got {
					for _, k := range []string{"access_token", "refresh_token"} {
						if v, ok := e[k]; ok && !strings.HasPrefix(v.(string), "FAKE") {
							t.Errorf("%s is not a fake", k)
						}
					}
				}
				if got["odd|fedcba9876543210"]["executor_owned"] != true {
					t.Errorf("executor_owned changed")
				}
				if !slices.Equal(creds[0].Hosts, []string{"mcp.linear.app"}) || creds[0].Renews != nil {
					t.Errorf("the access token is bound to %v", creds[0].Hosts)
				}
				if bytes.Contains(out, []byte("\n")) {
					t.Errorf("Codex's compact file came out indented")
				}
			}},
	} {
		t.Run(tc.format, func(t *testing.T) {
			f, ok := formats[tc.format]
			if !ok {
				t.Fatalf("no format %s", tc.format)
			}
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
			}
			if strings.Join(names, ",") != strings.Join(tc.names, ",") {
				t.Errorf("creds %v, want %v", names, tc.names)
			}
			tc.check(t, out, creds)
		})
	}
}

func TestMCPFormatsRefuse(t *testing.T) {
	for _, tc := range []struct{ format, file string }{
		{"gemini-mcp-oauth", `{}`},
		{"gemini-mcp-oauth", `[]`},
		{"gemini-mcp-oauth", `[{"serverName":"a","token":{"accessToken":"` + realAccess + `"}}] []`},
		{"gemini-mcp-oauth", `["` + realAccess + `"]`},
		{"gemini-mcp-oauth", `[{"token":{"accessToken":"` + realAccess + `"}}]`},
		{"gemini-mcp-oauth", `[{"serverName":"a","token":{"accessToken":"` + realAccess + `"}},{"serverName":"a","token":{"accessToken":"` + realKey + `"}}]`},
		{"gemini-mcp-oauth", `[{"serverName":"a"}]`},
		{"gemini-mcp-oauth", `[{"serverName":"a","token":{"accessToken":"` + realAccess + `","idToken":"` + realKey + `"}}]`},
		{"gemini-mcp-oauth", `[{"serverName":"a","clientSecret":"` + realKey + `","token":{"accessToken":"` + realAccess + `"}}]`},
		{"gemini-mcp-oauth", `[{"serverName":"a","token":{"accessToken":7}}]`},
		{"codex-mcp-oauth", `[]`},
		{"codex-mcp-oauth", `{}`},
		{"codex-mcp-oauth", `{"k":"` + realAccess + `"}`},
		{"codex-mcp-oauth", `{"k":{"server_url":"https://h","access_token":"` + realAccess + `","client_secret":"` + realKey + `"}}`},
		{"codex-mcp-oauth", `{"k":{"server_url":"https://h","access_token":"short"}}`},
	} {
		f, ok := formats[tc.format]
		if !ok {
			t.Fatalf("no format %s", tc.format)
		}
		if _, _, err := f.Fake([]byte(tc.file), hashFaker); err == nil {
			t.Errorf("%s %q: no error", tc.format, tc.file)
		}
	}
}

// TestGeminiMCPUpdate: a refresh of one server's tokens renews that
// server's entry in the user's file, and only it.
func TestGeminiMCPUpdate(t *testing.T) {
	f, ok := formats["gemini-mcp-oauth"]
	if !ok || f.Update == nil {
		t.Fatal("no gemini-mcp-oauth format taking renewed tokens")
	}
	now := time.UnixMilli(1_800_000_000_000)
	tok := Tokens{Access: "new-" + realAccess, ExpiresIn: time.Hour, Now: now, Refreshed: "gemini:mcp:linear:refreshToken"}
	got, err := f.Update([]byte(geminiMCPFile), tok)
	if err != nil {
		t.Fatal(err)
	}
	var entries []map[string]any
	dec := json.NewDecoder(bytes.NewReader(got))
	dec.UseNumber()
	if err := dec.Decode(&entries); err != nil {
		t.Fatal(err)
	}
	l := entries[0]["token"].(map[string]any)
	if l["accessToken"] != "new-"+realAccess || l["refreshToken"] != mcpRefresh || l["expiresAt"].(json.Number) != "1800003600000" || entries[0]["updatedAt"].(json.Number) != "1800000000000" {
		t.Errorf("the renewed entry: %v, updatedAt %v", l, entries[0]["updatedAt"])
	}
	if entries[1]["token"].(map[string]any)["accessToken"] != mcpSecret || entries[2]["updatedAt"].(json.Number) != "2" {
		t.Errorf("another entry changed")
	}
	tok.Refreshed = "gemini:mcp:absent:refreshToken"
	if _, err := f.Update([]byte(geminiMCPFile), tok); err == nil {
		t.Errorf("a refresh of no server of the file was written")
	}
}

// FuzzMCPFormats: whatever the file, an MCP token format either refuses
// it or writes a file with no real token of any entry (bound or not), and
// what it writes parses again.
func FuzzMCPFormats(f *testing.F) {
	f.Add([]byte(geminiMCPFile))
	f.Add([]byte(codexMCPFile))
	f.Add([]byte(`[{"serverName":"a","token":{"accessToken":"x0123456789abcdef","refreshToken":"x0123456789abcdef"},"tokenUrl":"https://a/t","mcpServerUrl":"h:1"}]`))
	f.Add([]byte(`{"a":{"server_url":"h:1","access_token":"a\u0041\/b0123456789abcdef","refresh_token":"r0123456789abcdef"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, name := range []string{"gemini-mcp-oauth", "codex-mcp-oauth"} {
			out, creds, err := formats[name].Fake(data, hashFaker)
			if err != nil {
				continue
			}
			for _, c := range creds {
				if c.Real == "" || bytes.Contains(out, []byte(c.Real)) {
					t.Fatalf("%s: the fake file holds %s's real value", name, c.Name)
				}
			}
			for _, v := range mcpTokenValues(data) {
				if len(v) >= minSecret && bytes.Contains(out, []byte(v)) {
					t.Fatalf("%s: the fake file holds a real token", name)
				}
			}
			if _, _, err := formats[name].Fake(out, hashFaker); err != nil {
				t.Fatalf("%s: its own fake file does not parse: %v", name, err)
			}
		}
	})
}

// mcpTokenValues returns the string values under the token keys of the
// MCP stores, at any depth.
func mcpTokenValues(data []byte) []string {
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
				if s, ok := e.(string); ok && contains([]string{"accessToken", "refreshToken", "access_token", "refresh_token"}, k) {
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

func init() {
	fuzzSeeds["gemini-mcp-oauth"] = []string{geminiMCPFile}
	fuzzSeeds["codex-mcp-oauth"] = []string{codexMCPFile}
}
