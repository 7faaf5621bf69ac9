package doctor

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
)

// codexInherit finds shell_environment_policy.inherit in a Codex
// config.toml (a [shell_environment_policy] table, or the dotted key).
var codexInherit = regexp.MustCompile(`(?m)^\s*(?:shell_environment_policy\.)?inherit\s*=\s*"(core|none|all)"`)

// Agents checks the agents envsieve knows, found in PATH (lookPath is
// exec.LookPath; tests pass their own), and their settings that would
// bypass envsieve.
func Agents(home string, lookPath func(string) (string, error)) []Check {
	var out []Check
	for _, a := range []string{"claude", "codex", "gemini", "aider"} {
		path, err := lookPath(a)
		if err != nil {
			out = append(out, Check{Name: "agent:" + a, Status: "absent", Detail: "not in PATH"})
			continue
		}
		c := Check{Name: "agent:" + a, Status: "ok", Detail: path}
		if a == "codex" && home != "" {
			if b, err := os.ReadFile(filepath.Join(home, ".codex", "config.toml")); err == nil {
				if m := codexInherit.FindSubmatch(b); m != nil && string(m[1]) != "all" {
					c.Status = "warn"
					c.Detail += `; ~/.codex/config.toml sets shell_environment_policy.inherit = "` + string(m[1]) + `", which drops LD_PRELOAD from the commands Codex runs`
					c.Fix = `set inherit = "all" (envsieve filters the environment), or run Codex's commands through envsieve sh`
				}
			}
		}
		out = append(out, c)
	}
	return out
}

// LookPath is exec.LookPath, for Agents.
func LookPath(name string) (string, error) { return exec.LookPath(name) }
