package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/envsieve/envsieve/policy"
)

func TestReadAudit(t *testing.T) {
	log := strings.Join([]string{
		`{"msg":"launch","launch":"l_1","argv":["/usr/bin/claude"],"profile":"claude","pid":1}`,
		`{"msg":"launch","launch":"l_2","argv":["/usr/bin/codex"],"profile":"mine","pid":2}`,
		`{"msg":"no_grant","launch":"l_1","pid":5,"path":"/usr/bin/gh","reason":"timeout"}`,
		`{"msg":"access","launch":"l_1","pid":5,"key":"GH_TOKEN","verdict":"dropped"}`,
		`{"msg":"access","launch":"l_2","pid":5,"key":"GH_TOKEN","verdict":"withheld"}`, // same pid, other launch: not gh; "withheld" is the old word for dropped
		`{"msg":"access","launch":"l_1","pid":6,"key":"LANGUAGE","verdict":"would-drop"}`,
		`{"msg":"access","launch":"l_1","pid":6,"key":"HOME","verdict":"given"}`,
		`{"msg":"access","launch":"l_1","pid":6,"key":"NONE","verdict":"unset"}`,
		`{"msg":"access","launch":"l_1","pid":6,"key":"1BAD","verdict":"withheld"}`,
		`{"msg":"decision","launch":"l_1","key":"TERM_X","kept":false,"reason":"not-allowed"}`,
		`{"msg":"decision","launch":"l_1","key":"KEPT","kept":true,"reason":"base"}`,
		`{"msg":"no_grant","launch":"l_1","pid":7,"path":"relative/gh","reason":"timeout"}`,
		`not json`,
		`{"msg":"exit"`,
		``,
	}, "\n")
	s, err := readAudit(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what      string
		got, want any
	}{
		{"launches", s.launches, 2},
		{"skipped", s.skipped, 2},
		{"commands", strings.Join(s.commands, ","), "claude,codex"},
		{"profiles", strings.Join(s.profiles, ","), "claude,mine"},
		{"programs", strings.Join(s.programs, ","), "/usr/bin/gh"},
		{"GH_TOKEN reads", s.read["GH_TOKEN"], 2},
		{"GH_TOKEN readers", strings.Join(s.readBy["GH_TOKEN"], ","), "/usr/bin/gh,"},
		{"LANGUAGE reads", s.read["LANGUAGE"], 1},
		{"given, unset and invalid names", len(s.read), 2},
		{"dropped", len(s.dropped), 1},
		{"TERM_X dropped", s.dropped["TERM_X"], true},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	out := starterPolicy(s, "/logs/a b.log", "starter")
	p, err := policy.Parse("out", []byte(out))
	if err != nil {
		t.Fatalf("the starter policy does not load: %v\n%s", err, out)
	}
	pl, err := p.Effective("starter")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := pl.Admit("LANGUAGE"); !ok {
		t.Errorf("LANGUAGE is not allowed:\n%s", out)
	}
	if a, ok := pl.Admit("GH_TOKEN"); ok && a.Exact && !strings.Contains(out, "GH_TOKEN: {}") {
		t.Errorf("GH_TOKEN:\n%s", out)
	}
	if len(p.Rules) != 1 || !strings.Contains(out, `match: {path: "/usr/bin/gh"}`) {
		t.Errorf("want one rule for /usr/bin/gh:\n%s", out)
	}
	if !strings.Contains(out, "extends: [builtin:claude]") || !strings.Contains(out, "The launches also used: mine") {
		t.Errorf("profiles:\n%s", out)
	}
}

// FuzzReadAudit: whatever the log holds, what init writes is a policy
// envsieve loads (a hostile log cannot inject YAML), or init says the log
// holds no event.
func FuzzReadAudit(f *testing.F) {
	f.Add([]byte(`{"msg":"exit"}`), "A", "/bin/x", "claude", "/bin/x")
	f.Add([]byte(""), "API_TOKEN", "/a\"b\n#c: d", "a\nb", "x\x00y: z")
	f.Add([]byte("not json\n{"), "GH_TOKEN", "/usr/bin/gh", "builtin:codex", "")
	f.Fuzz(func(t *testing.T, raw []byte, key, path, profile, argv0 string) {
		line := func(v map[string]any) string {
			b, _ := json.Marshal(v)
			return string(b) + "\n"
		}
		log := string(raw) + "\n" +
			line(map[string]any{"msg": "launch", "launch": "l", "argv": []string{argv0}, "profile": profile}) +
			line(map[string]any{"msg": "no_grant", "launch": "l", "pid": 9, "path": path}) +
			line(map[string]any{"msg": "access", "launch": "l", "pid": 9, "key": key, "verdict": "dropped"}) +
			line(map[string]any{"msg": "decision", "launch": "l", "key": key, "kept": false})
		s, err := readAudit(strings.NewReader(log))
		if err != nil {
			return // a line too long for the scanner
		}
		out := starterPolicy(s, path, "starter")
		if _, err := policy.Parse("out", []byte(out)); err != nil {
			t.Fatalf("the starter policy does not load: %v\n%s", err, out)
		}
	})
}
