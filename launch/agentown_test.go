package launch

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/seal"
	"github.com/envsieve/envsieve/sieve"
)

// TestLoginPreviewAgents: explain lists the agents' login and MCP token
// files where the agent reads them: in the state dir the user's own
// variable names (and not the default one then), each a fake with the
// hosts its tokens are bound to.
func TestLoginPreviewAgents(t *testing.T) {
	home := t.TempDir()
	own := filepath.Join(t.TempDir(), "claude-own")
	tok := "sk-ant-oat01-" + strings.Repeat("P1r", 20)
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	login := `{"claudeAiOauth":{"accessToken":"` + tok + `","refreshToken":"` + tok + `R"}}`
	write(filepath.Join(own, ".credentials.json"), login)
	write(filepath.Join(home, ".claude/.credentials.json"), login)
	write(filepath.Join(home, ".gemini/mcp-oauth-tokens.json"), `[{"serverName":"s","token":{"accessToken":"`+tok+`","tokenType":"Bearer"},"mcpServerUrl":"https://mcp.example.com/mcp","updatedAt":1}]`)
	got := LoginPreview(home, []string{"CLAUDE_CONFIG_DIR=" + own}, true, seal.Namespaces, true, false)
	byPath := map[string]LoginState{}
	for _, st := range got {
		byPath[st.Path] = st
	}
	if st, ok := byPath[filepath.Join(own, ".credentials.json")]; !ok || st.Seen != "fake" || !slices.Contains(st.Hosts, "api.anthropic.com") {
		t.Errorf("the login in the user's own CLAUDE_CONFIG_DIR: %+v (listed: %v)", st, ok)
	}
	if st, ok := byPath[filepath.Join(home, ".claude/.credentials.json")]; ok && st.Seen == "fake" {
		t.Errorf("the default login, which the agent does not read, is said to be a fake: %+v", st)
	}
	if st := byPath[filepath.Join(home, ".gemini/mcp-oauth-tokens.json")]; st.Seen != "fake" || !slices.Equal(st.Hosts, []string{"mcp.example.com"}) {
		t.Errorf("Gemini CLI's MCP token file: %+v", st)
	}
}

// TestOwnStateDirPlaces: a state dir the user's own variable names is a
// write place of the launch in place of the default one, unless it would
// open what the seal keeps: HOME, a directory above a masked or read-only
// path (~/.config, ~/.local), or one holding a directory of PATH.
func TestOwnStateDirPlaces(t *testing.T) {
	home := t.TempDir()
	base := seal.Default(home, filepath.Join(home, ".config/envsieve"), filepath.Join(home, ".local/share/envsieve"), nil)
	for _, tc := range []struct {
		own  string
		want bool
	}{
		{"agentdirs/claude", true},
		{".config", false},
		{".local", false},
		{"tools", false},
		{"", false},
	} {
		own := filepath.Join(home, tc.own)
		if err := os.MkdirAll(own, 0o700); err != nil {
			t.Fatal(err)
		}
		var w warnings
		l := &Plan{host: &Host{Home: home, Report: &w}, Env: []string{"PATH=/usr/bin:" + home + "/tools/bin", "CLAUDE_CONFIG_DIR=" + own},
			Result: &sieve.Result{SealWrite: []string{"~/.claude"}}}
		got, err := l.writePlaces(base)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(got, own) != tc.want {
			t.Errorf("CLAUDE_CONFIG_DIR=~/%s: a write place %v, want %v (%v)", tc.own, !tc.want, tc.want, got)
		}
	}
}
