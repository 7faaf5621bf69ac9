package doctor

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestAgents: an agent not in PATH is absent; Codex with a config that
// keeps only its core variables (dropping LD_PRELOAD) is a warning.
func TestAgents(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".codex"), 0o755)
	os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte("[shell_environment_policy]\ninherit = \"core\"\n"), 0o644)
	look := func(name string) (string, error) {
		if name == "codex" || name == "claude" {
			return "/usr/bin/" + name, nil
		}
		return "", errors.New("not found")
	}
	got := map[string]Check{}
	for _, c := range Agents(home, look) {
		got[c.Name] = c
	}
	if c := got["agent:codex"]; c.Status != "warn" || c.Fix == "" {
		t.Errorf("codex with inherit = core: %+v", c)
	}
	if c := got["agent:claude"]; c.Status != "ok" {
		t.Errorf("claude: %+v", c)
	}
	if c := got["agent:gemini"]; c.Status != "absent" {
		t.Errorf("gemini not in PATH: %+v", c)
	}
	os.WriteFile(filepath.Join(home, ".codex", "config.toml"), []byte("shell_environment_policy.inherit = \"all\"\n"), 0o644)
	for _, c := range Agents(home, look) {
		if c.Name == "agent:codex" && c.Status != "ok" {
			t.Errorf("codex with inherit = all: %+v", c)
		}
	}
}
