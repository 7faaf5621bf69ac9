package policy_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/internal/compiled"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/secret"
)

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string // each "line:col: message part", in order
	}{
		{"empty", "", []string{"1:1: the policy is empty"}},
		{"no version", "base: safe\n", []string{`1:1: policy: missing "version: 1"`}},
		{"wrong version", "version: 3\n", []string{"1:10: version: this envsieve reads version 1, not 3"}},
		{"unknown key", "version: 1\nallow_all: true\n", []string{`2:1: policy: unknown key "allow_all" (known: allow, audit, base`}},
		{"wrong type", "version: 1\nallow: FOO\n", []string{"2:8: global: allow: want a list, got a string"}},
		{"bad glob byte", "version: 1\ndeny: [\"A[B\"]\n", []string{`2:8: global: deny: "A[B": byte '[' at offset 1`}},
		{"digit start", "version: 1\nallow: [\"1AB\"]\n", []string{"2:9: global: allow: \"1AB\": a variable name cannot start with a digit"}},
		{"unknown group", "version: 1\ngroups: [proxy, nope]\n", []string{`2:17: global: groups: unknown group "nope" (did you mean "node"?) (known: `}},
		{"unknown group far", "version: 1\ngroups: [proxy, qqqq]\n", []string{`2:17: global: groups: unknown group "qqqq" (known: `}},
		{"unknown key", "version: 1\nalow: [A]\n", []string{`2:1: policy: unknown key "alow" (did you mean "allow"?) (known: `}},
		{"unknown profile ref", "version: 1\nprofiles:\n  a: {extends: [cladue]}\n", []string{`profile a: "cladue": unknown profile (did you mean "claude"?)`}},
		{"bad mode", "version: 1\nmode: loud\n", []string{`2:7: global: mode: want enforce or audit, got "loud"`}},
		{"audit on_error", "version: 1\naudit: {path: /tmp/a, on_error: warn}\n", nil},
		{"bad audit on_error", "version: 1\naudit: {on_error: ignore}\n", []string{`2:19: audit: on_error: want fail or warn, got "ignore"`}},
		{"set and deny", "version: 1\nset: {PAGER: cat}\ndeny: [PAGER]\n", []string{"2:7: global: PAGER is both set and denied"}},
		{"set twice", "version: 1\nprofiles:\n  p:\n    set: {A: x}\n", nil},
		{"set bool", "version: 1\nset: {A: yes}\n", nil},
		{"set true", "version: 1\nset: {A: true}\n", []string{`2:10: global: set A: write a boolean value as a quoted string ("true")`}},
		{"bad set name", "version: 1\nset: {\"A-B\": x}\n", []string{`2:7: global: set: "A-B" is not a variable name`}},
		{"limit zero", "version: 1\nlimits: {max_keys: 0}\n", []string{"2:20: global: limits: max_keys must be from 1 to"}},
		{"limit above kernel", "version: 1\nlimits: {max_value_bytes: 131071}\n", []string{"2:27: global: limits: max_value_bytes must be from 1 to 131070"}},
		{"unknown limit", "version: 1\nlimits: {max_files: 3}\n", []string{`2:10: global: limits: unknown key "max_files"`}},
		{"anchor", "version: 1\nallow: &a [X]\ndeny: *a\n", []string{"anchors are not supported"}},
		{"unknown profile", "version: 1\nprofiles:\n  a: {extends: [zzz]}\n", []string{`3:17: profile a: "zzz": unknown profile`}},
		{"bad profile name", "version: 1\nprofiles:\n  Big: {}\n", []string{`3:3: profile "Big": a profile name is lower-case`}},
		{"cycle", "version: 1\nprofiles:\n  a: {extends: [b]}\n  b: {extends: [a]}\n", []string{"4:17: profile b: cycle in extends/parent: a leads back to b"}},
		{"self is built-in", "version: 1\nprofiles:\n  claude: {extends: [claude]}\n", nil},
		{"parent and extends", "version: 1\nprofiles:\n  a: {}\n  b: {parent: a, extends: [a]}\n", []string{"4:15: profile b: a profile with a parent may only narrow it, so it cannot also extend"}},
		{"rule without match", "version: 1\nrules:\n  - allow: [X]\n", []string{"3:5: rule 1: a rule needs a match"}},
		{"rule with base", "version: 1\nrules:\n  - {match: {command: x}, base: none}\n", []string{`3:27: rule 1: unknown key "base"`}},
		{"rule bad command glob", "version: 1\nrules:\n  - match: {command: \"gh[\"}\n", []string{`3:22: rule 1: match: command: pattern "gh[": `}},
		{"tool bad env", "version: 1\ntools:\n  t: {injects_env: [\"A B\"]}\n", []string{`3:21: tool t: injects_env: "A B" is not a variable name`}},
		{"relative shell", "version: 1\nshell: bash\n", []string{`2:8: shell: want an absolute path, got "bash"`}},
		{"two documents", "version: 1\n---\nversion: 1\n", []string{"a policy file holds one YAML document, not 2"}},
		{"duplicate key", "version: 1\nallow: [A]\nallow: [B]\n", []string{"3:1: yaml: "}},
		{"hide glob", "version: 1\nhide: [\"API_*\"]\n", []string{`2:8: global: hide: "API_*" is not a variable name (this list takes exact names, no wildcards)`}},
		{"block_iteration string", "version: 1\nblock_iteration: \"yes\"\n", []string{"2:18: global: block_iteration: want true or false, got a string"}},
		{"pass a steering key", "version: 1\nrules:\n  - {match: {command: gh}, pass: [GIT_DIR, XDG_CONFIG_HOME, https_proxy, GH_*]}\n", []string{
			"3:44: rule 1: pass: XDG_CONFIG_HOME decides where a program sends its credential, which config it reads or what code it loads: a caller may not set it for a granted program",
			"3:61: rule 1: pass: https_proxy decides where a program sends its credential, which config it reads or what code it loads: a caller may not set it for a granted program",
			"3:74: rule 1: pass: GH_* decides where a program sends its credential, which config it reads or what code it loads: a caller may not set it for a granted program"}},
		{"args_exact string", "version: 1\nrules:\n  - {match: {command: git, args: [push], args_exact: \"yes\"}}\n", []string{"3:54: rule 1: match: args_exact: want true or false, got a string"}},
		{"match neither", "version: 1\nrules:\n  - {match: {args: [x]}}\n", []string{"3:6: rule 1: match needs a command or a path"}},
		{"match path and command", "version: 1\nrules:\n  - {match: {command: x, path: /bin/x}}\n", []string{"3:32: rule 1: match: path and command name the program twice: keep one"}},
		{"match path relative", "version: 1\nrules:\n  - {match: {path: bin/x}}\n", []string{`3:20: rule 1: match: path: "bin/x" is not an absolute, clean path (one file, no globs)`}},
		{"match path unclean", "version: 1\nrules:\n  - {match: {path: /bin/../x}}\n", []string{`3:20: rule 1: match: path: "/bin/../x" is not an absolute, clean path`}},
		{"sha256 without path", "version: 1\nrules:\n  - {match: {command: x, sha256: ABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABAB}}\n", []string{"3:34: rule 1: match: sha256 pins the file that match: path names: add a path"}},
		{"sha256 short", "version: 1\nrules:\n  - {match: {path: /bin/x, sha256: abc}}\n", []string{"3:36: rule 1: match: sha256: want 64 hexadecimal digits (what sha256sum prints), got 3 characters"}},
		{"sha256 not hex", "version: 1\nrules:\n  - {match: {path: /bin/x, sha256: gggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggggg}}\n", []string{"3:36: rule 1: match: sha256: want 64 hexadecimal digits"}},
		{"sha256 pinned", "version: 1\nrules:\n  - {match: {path: /bin/x, sha256: ABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABABAB}}\n", nil},
		{"client_env bad", "version: 1\nprofiles:\n  p: {client_env: all}\n", []string{`3:19: profile p: client_env: want filtered or full, got "all"`}},
		{"client_env in a rule", "version: 1\nrules:\n  - {match: {command: x}, client_env: full}\n", []string{`3:27: rule 1: unknown key "client_env"`}},
		{"passthrough global", "version: 1\nshell_env_passthrough: [SSH_AUTH_SOCK]\n", []string{`2:1: policy: unknown key "shell_env_passthrough"`}},
		{"nul in value", "version: 1\nset: {A: \"x\\0y\"}\n", []string{"a NUL byte cannot be part of an environment string"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := policy.Parse("p.yaml", []byte(tt.src))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var list policy.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("error %v (%T) is not an ErrorList", err, err)
			}
			if len(list) < len(tt.want) {
				t.Fatalf("%d errors, want %d:\n%s", len(list), len(tt.want), list.Detail())
			}
			for i, w := range tt.want {
				got := list[i].Error()
				if !strings.Contains(got, w) {
					t.Errorf("error %d = %q, want it to contain %q", i, got, w)
				}
				if list[i].Pos.File != "p.yaml" {
					t.Errorf("error %d names file %q", i, list[i].Pos.File)
				}
			}
		})
	}
}

func TestErrorExcerpt(t *testing.T) {
	_, err := policy.Parse("p.yaml", []byte("version: 1\nallow: [OK, \"BAD-ONE\"]\n"))
	var list policy.ErrorList
	if !errors.As(err, &list) || len(list) != 1 {
		t.Fatalf("want one error, got %v", err)
	}
	want := "    2 | allow: [OK, \"BAD-ONE\"]\n      |             ^\n"
	if list[0].Excerpt != want {
		t.Errorf("excerpt =\n%s\nwant\n%s", list[0].Excerpt, want)
	}
}

func TestAllErrorsAtOnce(t *testing.T) {
	_, err := policy.Parse("p.yaml", []byte("version: 1\nbase: huge\ngroups: [nope]\nallow: [\"A-B\"]\nmode: x\n"))
	var list policy.ErrorList
	if !errors.As(err, &list) || len(list) != 4 {
		t.Fatalf("want 4 errors, got %v", err)
	}
	for i, line := range []int{2, 3, 4, 5} {
		if list[i].Pos.Line != line {
			t.Errorf("error %d on line %d, want %d", i, list[i].Pos.Line, line)
		}
	}
}

func TestDefaultPolicy(t *testing.T) {
	p, err := policy.Default()
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Effective("")
	if err != nil {
		t.Fatal(err)
	}
	if plan.Base != "safe" || plan.Mode != policy.Enforce {
		t.Errorf("default base %s mode %s, want safe enforce", plan.Base, plan.Mode)
	}
	for _, k := range []string{"PATH", "HOME", "HTTPS_PROXY", "SSL_CERT_FILE", "SSH_AUTH_SOCK"} {
		if a, ok := plan.Admit(k); !ok || !a.Curated {
			t.Errorf("default policy does not admit %s as curated", k)
		}
	}
	for _, name := range []string{"generic", "claude", "codex", "gemini", "qwen", "aider", "amp", "copilot", "opencode"} {
		if _, ok := p.Profile(name); !ok {
			t.Errorf("built-in profile %s missing", name)
		}
	}
}

// TestSafeBase pins the safe base set of docs/design.md section 3.
func TestSafeBase(t *testing.T) {
	p, err := policy.Default()
	if err != nil {
		t.Fatal(err)
	}
	c := p.Catalog()
	got := strings.Join(c.AllKeys(c.Bases["safe"]), " ")
	want := []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES",
		"TERM", "COLORTERM", "COLUMNS", "LINES", "NO_COLOR", "TMPDIR", "TMP", "TEMP", "XDG_RUNTIME_DIR",
		"XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
		"GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "SSH_AUTH_SOCK", "GIT_SSH_COMMAND", "GIT_SSH",
		"PYTHONPATH", "VIRTUAL_ENV", "CONDA_DEFAULT_ENV", "CONDA_PREFIX", "NVM_DIR", "NVM_BIN", "NVM_PATH", "NODE_PATH"}
	have := map[string]bool{}
	for _, k := range strings.Fields(got) {
		have[k] = true
	}
	for _, k := range want {
		if !have[k] {
			t.Errorf("safe base lacks %s", k)
		}
		delete(have, k)
	}
	for k := range have {
		t.Errorf("safe base has %s, which docs/design.md does not list", k)
	}
	for _, k := range c.AllKeys(c.Bases["minimal"]) {
		if !strings.Contains(" "+got+" ", " "+k+" ") {
			t.Errorf("minimal key %s is not in safe: bases must nest", k)
		}
	}
}

func TestShimAndSessionKeys(t *testing.T) {
	src := `version: 1
block_iteration: true
hide: [MYAPP_TOKEN]
profiles:
  shell:
    shell_env_passthrough: [SSH_AUTH_SOCK]
    client_env: full
    hide: [OTHER]
  narrow:
    extends: [shell]
    block_iteration: false
  sub:
    parent: shell
    client_env: filtered
  bad-sub:
    parent: sub
    client_env: full
    shell_env_passthrough: [DISPLAY]
    block_iteration: true
  worse-sub:
    parent: sub
    block_iteration: false
`
	extra := "  denier:\n    extends: [shell]\n    deny: [\"SSH_*\"]\n  hider:\n    extends: [shell]\n    hide: [SECRET_THING]\n"
	_, err := policy.Parse("p.yaml", []byte(src))
	var list policy.ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("want escalations, got %v", err)
	}
	var lines []string
	for _, e := range list {
		lines = append(lines, e.Error())
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		"p.yaml:17:17: profile bad-sub: escalation: client_env full widens the parent's filtered",
		"p.yaml:18:29: profile bad-sub: escalation: shell_env_passthrough DISPLAY is not passed through by the parent",
		"p.yaml:22:22: profile worse-sub: escalation: block_iteration false widens the parent's true",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "bad-sub: escalation: block_iteration") {
		t.Errorf("block_iteration true narrows; got %s", got)
	}

	// Without the bad sub-agents, the plans merge as documented.
	ok := src[:strings.Index(src, "  bad-sub:")] + extra
	p, err := policy.Parse("p.yaml", []byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	plan := func(name string) *policy.Effective {
		t.Helper()
		pl, err := p.Effective(name)
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	if pl := plan(""); !pl.BlockIteration || strings.Join(pl.Hide, ",") != "MYAPP_TOKEN" || pl.ClientEnv != policy.ClientFiltered {
		t.Errorf("global plan: block %v hide %v client %v", pl.BlockIteration, pl.Hide, pl.ClientEnv)
	}
	if pl := plan("shell"); strings.Join(pl.Hide, ",") != "MYAPP_TOKEN,OTHER" || pl.ClientEnv != policy.ClientFull ||
		strings.Join(pl.ShellEnvPassthrough, ",") != "SSH_AUTH_SOCK" {
		t.Errorf("shell plan: hide %v client %v passthrough %v", pl.Hide, pl.ClientEnv, pl.ShellEnvPassthrough)
	}
	if pl := plan("narrow"); pl.BlockIteration || pl.ClientEnv != policy.ClientFull || pl.BlockSource.Pos.Line != 11 {
		t.Errorf("narrow plan: block %v (%v) client %v", pl.BlockIteration, pl.BlockSource, pl.ClientEnv)
	}
	if pl := plan("sub"); pl.ClientEnv != policy.ClientFiltered || len(pl.ShellEnvPassthrough) != 1 {
		t.Errorf("sub plan: client %v passthrough %v", pl.ClientEnv, pl.ShellEnvPassthrough)
	}

	// The run-time check daemon sessions use for sub-agent sessions.
	tests := []struct {
		child, parent string
		want          string // "" for no escalation
	}{
		{"sub", "shell", ""},
		{"shell", "shell", ""},
		{"narrow", "shell", "block_iteration false widens the parent's true"},
		{"shell", "sub", "client_env full widens the parent's filtered"},
		{"builtin:claude", "", `allow "ANTHROPIC_API_KEY" is not granted by the parent`},
		{"shell", "denier", `the parent's deny "SSH_*" is missing`},
		{"shell", "hider", "the parent's hide SECRET_THING is missing"},
		{"", "builtin:claude", "seal off widens the parent's on"}, // dropping the seal widens
	}
	for _, tt := range tests {
		err := p.CheckNarrows(tt.child, tt.parent)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckNarrows(%q, %q): %v", tt.child, tt.parent, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("CheckNarrows(%q, %q) = %v, want %q", tt.child, tt.parent, err, tt.want)
		}
	}
	if err := p.CheckNarrows("nope", "shell"); !errors.Is(err, policy.ErrUnknownProfile) {
		t.Errorf("unknown profile: %v", err)
	}

	// A project-local file may turn hiding on and add names, not turn it off.
	if _, err := p.Narrow(".envsieve.yaml", []byte("version: 1\nblock_iteration: true\nhide: [X]\n")); err != nil {
		t.Errorf("local block_iteration true: %v", err)
	}
	_, err = p.Narrow(".envsieve.yaml", []byte("version: 1\nblock_iteration: false\n"))
	if err == nil || !strings.Contains(err.Error(), "2:18: escalation: block_iteration false widens the policy's true") {
		t.Errorf("local block_iteration false: %v", err)
	}
}

func TestNarrow(t *testing.T) {
	user, err := policy.Parse("user.yaml", []byte("version: 1\nbase: minimal\nallow: [\"MYAPP_*\"]\nlimits: {max_keys: 100}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		local string
		want  []string
	}{
		{"deny is fine", "version: 1\ndeny: [\"MYAPP_*\"]\n", nil},
		{"lower limits are fine", "version: 1\nlimits: {max_keys: 10}\n", nil},
		{"narrower base is fine", "version: 1\nbase: none\n", nil},
		{"enforce is fine", "version: 1\nmode: enforce\n", nil},
		{"allow", "version: 1\nallow: [AWS_KEY]\n", []string{`2:9: escalation: allow "AWS_KEY" widens the policy`}},
		{"group", "version: 1\ngroups: [tls]\n", []string{`2:10: escalation: group "tls" widens the policy`}},
		{"set", "version: 1\nset: {LD_PRELOAD: /x.so}\n", []string{"2:7: escalation: set LD_PRELOAD adds a variable"}},
		{"wider base", "version: 1\nbase: safe\n", []string{"2:7: escalation: base safe is wider than the policy's minimal"}},
		{"audit", "version: 1\nmode: audit\n", []string{`2:7: escalation: mode "audit" widens enforce`}},
		{"higher limit", "version: 1\nlimits: {max_keys: 101}\n", []string{"2:20: escalation: limits: max_keys 101 is above the policy's 100"}},
		{"profile", "version: 1\nprofiles:\n  x: {}\n", []string{`3:3: escalation: profile "x"`}},
		{"rule", "version: 1\nrules:\n  - {match: {command: gh}, allow: [GITHUB_TOKEN]}\n", []string{"3:5: escalation: rules belong in the user's policy"}},
		{"tool", "version: 1\ntools:\n  t: {injects_env: [X]}\n", []string{`3:3: escalation: tool "t" injects secrets`}},
		{"shell", "version: 1\nshell: /bin/evil\n", []string{"2:8: escalation: shell chooses the program that runs"}},
		{"secrets", "version: 1\nsecrets:\n  X: {from: command, command: [evil]}\n", []string{`3:3: escalation: secret "X": secret sources belong in the user's policy`}},
		{"redact", "version: 1\nredact: {enabled: false}\n", []string{"2:1: escalation: redact belongs in the user's policy"}},
		{"audit", "version: 1\naudit: {path: /tmp/x}\n", []string{"2:1: escalation: audit belongs in the user's policy"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := user.Narrow(".envsieve.yaml", []byte(tt.local))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if p.Local != ".envsieve.yaml" || p.File != "user.yaml" {
					t.Errorf("narrowed policy names %q and %q", p.File, p.Local)
				}
				return
			}
			var list policy.ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("want an ErrorList, got %v", err)
			}
			for i, w := range tt.want {
				if got := list[i].Error(); !strings.Contains(got, w) || !strings.HasPrefix(got, ".envsieve.yaml:") {
					t.Errorf("error %q, want it to contain %q", got, w)
				}
			}
		})
	}
	p, err := user.Narrow(".envsieve.yaml", []byte("version: 1\nbase: none\ndeny: [\"MYAPP_X*\"]\nlimits: {max_keys: 5}\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := p.Effective("")
	if plan.Base != "none" || plan.Limits.MaxKeys != 5 {
		t.Errorf("narrowed plan base %s max_keys %d, want none 5", plan.Base, plan.Limits.MaxKeys)
	}
	if _, denied := plan.Deny("MYAPP_XY"); !denied {
		t.Error("the local deny does not apply")
	}
	if _, ok := plan.Admit("MYAPP_A"); !ok {
		t.Error("the user's allow was lost")
	}
}

func TestSubAgentNarrowing(t *testing.T) {
	base := "version: 1\nprofiles:\n  main:\n    extends: [builtin:claude]\n    allow: [GIT_DIR, \"MYAPP_*\"]\n    set: {PAGER: cat}\n    groups: [proxy]\n"
	tests := []struct {
		name  string
		child string
		want  string
	}{
		{"deny", "deny: [\"GIT_*\"]", ""},
		{"repeat exact", "allow: [ANTHROPIC_API_KEY, GIT_DIR]", ""},
		{"repeat glob", "allow: [\"MYAPP_*\"]", ""},
		{"same group", "groups: [proxy]", ""},
		{"override set", "set: {PAGER: less}", ""},
		{"lower limit", "limits: {max_keys: 10}", ""},
		{"new exact", "allow: [AWS_SECRET_ACCESS_KEY]", `allow "AWS_SECRET_ACCESS_KEY" is not granted by the parent`},
		{"exact under parent glob", "allow: [MYAPP_TOKEN]", `allow "MYAPP_TOKEN" is not granted by the parent`},
		{"wider glob", "allow: [\"MY*\"]", `allow "MY*" is not granted by the parent`},
		{"new group", "groups: [tls]", "group tls is not granted by the parent"},
		{"new set", "set: {EDITOR: vi}", "set EDITOR adds a variable the parent does not set"},
		{"higher limit", "limits: {max_keys: 5000}", "limits: max_keys 5000 is above the parent's 1000"},
		{"audit", "mode: audit", "mode audit widens the parent's enforce"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := base + "  sub:\n    parent: main\n    " + tt.child + "\n"
			_, err := policy.Parse("p.yaml", []byte(src))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "profile sub: escalation: "+tt.want) {
				t.Fatalf("error %v, want escalation %q", err, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "p.yaml:10:") {
				t.Errorf("error %v does not name line 10", err)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(path, []byte("version: 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := policy.Load(path)
	if err != nil || p.File != path {
		t.Fatalf("Load: %v", err)
	}
	_, err = policy.Load(filepath.Join(dir, "missing.yaml"))
	if !errors.Is(err, os.ErrNotExist) || !strings.HasPrefix(err.Error(), "load policy ") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

// FuzzParse: the loader never panics, and a policy it accepts can be planned
// for every profile it lists.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/fuzz-seeds/*.yaml")
	for _, s := range seeds {
		src, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add([]byte("version: 1\n"))
	f.Add([]byte("version: 1\nallow: [\"*\"]\ndeny: [A]\nprofiles:\n  a: {parent: claude, deny: [B]}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		p, err := policy.Parse("fuzz.yaml", src)
		if err != nil {
			var list policy.ErrorList
			if errors.As(err, &list) {
				for _, e := range list {
					if e.Pos.File != "fuzz.yaml" && !strings.HasPrefix(e.Pos.File, "embedded:") {
						t.Fatalf("error without the file name: %v", e)
					}
				}
			}
			return
		}
		for _, pr := range p.Profiles() {
			if _, err := p.Effective(pr.Name); err != nil {
				t.Fatalf("accepted policy cannot plan %s: %v", pr.Name, err)
			}
		}
		_, _ = p.Narrow("local.yaml", src)
	})
}

// TestBuiltinRefForms: builtin:NAME reads the same in every YAML form.
func TestBuiltinRefForms(t *testing.T) {
	for _, src := range []string{
		"version: 1\nprofiles:\n  a: {extends: [builtin:claude]}\n",
		"version: 1\nprofiles:\n  a:\n    extends: [builtin:claude, builtin:codex]\n",
		"version: 1\nprofiles:\n  a:\n    extends:\n      - builtin:claude\n",
		"version: 1\nprofiles:\n  a:\n    extends: [\"builtin:claude\"]\n",
		"version: 1\nprofiles:\n  a: {parent: builtin:claude}\n",
		"version: 1\nprofiles:\n  a:\n    parent: builtin:claude\n",
	} {
		p, err := policy.Parse("p.yaml", []byte(src))
		if err != nil {
			t.Errorf("%q: %v", src, err)
			continue
		}
		pr, _ := p.Profile("a")
		if a, ok := pr.Effective.Admit("ANTHROPIC_API_KEY"); !ok || !a.Exact {
			t.Errorf("%q: the built-in claude profile was not applied", src)
		}
	}
	if _, err := policy.Parse("p.yaml", []byte("version: 1\nprofiles:\n  a: {extends: [{builtin: claude}]}\n")); err == nil {
		t.Error("a real mapping was taken for a profile reference")
	}
}

func TestSecretSpecs(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte(`version: 1
secrets:
  GITHUB_TOKEN: {from: env}
  TWILIO_AUTH_TOKEN: {from: store, deliver: file}
  OPENAI_API_KEY: {from: command, command: [pass, show, openai], timeout: 2s}
  OP_TOKEN: {from: op, ref: "op://Private/My Item/token", timeout: 30s}
  KC_TOKEN: {from: keychain, service: github, account: me}
`))
	if err != nil {
		t.Fatal(err)
	}
	if s := p.SecretSpec("OPENAI_API_KEY"); s.From != policy.FromCommand || len(s.Command) != 3 || s.Timeout.Seconds() != 2 {
		t.Errorf("OPENAI_API_KEY spec = %+v", s)
	}
	if s := p.SecretSpec("OP_TOKEN"); s.From != policy.FromOp || !slices.Equal(s.Command, []string{"op", "read", "op://Private/My Item/token"}) || s.Timeout.Seconds() != 30 {
		t.Errorf("OP_TOKEN spec = %+v", s)
	}
	want, _ := secret.HostKeychainArgv("github", "me")
	if s := p.SecretSpec("KC_TOKEN"); s.From != policy.FromKeychain || !slices.Equal(s.Command, want) || len(want) == 0 {
		t.Errorf("KC_TOKEN spec = %+v", s)
	}
	if s := p.SecretSpec("TWILIO_AUTH_TOKEN"); s.From != policy.FromStore || s.Deliver != policy.DeliverFile {
		t.Errorf("TWILIO_AUTH_TOKEN spec = %+v", s)
	}
	if s := p.SecretSpec("UNDECLARED"); s.From != policy.FromEnv || s.Deliver != policy.DeliverEnv {
		t.Errorf("an undeclared secret = %+v, want env delivered as env", s)
	}
	for _, bad := range []struct{ src, want string }{
		{"secrets:\n  A: {from: vault}\n", `3:13: secret A: from: want env, store, command, keychain or op, got "vault"`},
		{"secrets:\n  A: {from: keychain, service: s}\n", "secret A: from keychain needs a service and an account"},
		{"secrets:\n  A: {from: keychain, service: s, account: \"-w\"}\n", "keychain account: starts with -"},
		{"secrets:\n  A: {from: keychain, service: \"\", account: a}\n", "keychain service: empty"},
		{"secrets:\n  A: {from: op}\n", "secret A: from op needs a ref"},
		{"secrets:\n  A: {from: op, ref: \"op://v/i\"}\n", "3:22: secret A: ref: \"op://v/i\": 2 segments"},
		{"secrets:\n  A: {from: op, ref: sk-live-pasted-value}\n", "ref: does not start with op://"},
		{"secrets:\n  A: {from: op, ref: \"op://v/i/f\", service: s}\n", "secret A: service is used only with from: keychain"},
		{"secrets:\n  A: {from: env, ref: \"op://v/i/f\"}\n", "secret A: ref is used only with from: op"},
		{"secrets:\n  A: {from: store, timeout: 2s}\n", "secret A: timeout is used only with from: command, keychain or op"},
		{"secrets:\n  A: {from: command}\n", "3:3: secret A: from command needs a command list"},
		{"secrets:\n  A: {command: [x]}\n", "3:17: secret A: command is used only with from: command"},
		{"secrets:\n  A: {from: command, command: [x], timeout: soon}\n", `secret A: timeout: want a duration such as 5s, got "soon"`},
		{"secrets:\n  A: {deliver: pigeon}\n", `secret A: deliver: want env or file, got "pigeon"`},
		{"secrets:\n  \"A-B\": {}\n", `secrets: "A-B" is not a variable name`},
	} {
		_, err := policy.Parse("p.yaml", []byte("version: 1\n"+bad.src))
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: error %v, want %q", bad.src, err, bad.want)
		}
	}
}

// TestTablesOneView: Admit and Deny answer as the engine's hashed Lookup
// does, for exact names, globs, the empty name and absent names.
func TestTablesOneView(t *testing.T) {
	p, err := policy.Parse("p.yaml", []byte("version: 1\nallow: [\"MYAPP_*\", EDITOR]\ndeny: [\"MYAPP_X*\", HOME]\n"))
	if err != nil {
		t.Fatal(err)
	}
	plan, _ := p.Effective("")
	for _, key := range []string{"MYAPP_A", "MYAPP_XY", "EDITOR", "HOME", "PATH", "NOPE", ""} {
		a1, ok1 := plan.Admit(key)
		d1, den1 := plan.Deny(key)
		a2, ok2, d2 := plan.Lookup(compiled.HashName(key), key)
		if ok1 != ok2 || a1 != a2 || d1 != d2 || den1 != (d2 != nil) {
			t.Errorf("%q: Admit/Deny and Lookup disagree", key)
		}
	}
	if _, ok := plan.Admit("MYAPP_A"); !ok {
		t.Error("a glob admit was lost")
	}
	if _, ok := plan.Deny("HOME"); !ok {
		t.Error("an exact deny was lost")
	}
}
