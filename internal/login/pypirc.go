package login

import (
	"fmt"
	"strings"
)

func init() {
	register(Format{
		Name:  "pypirc",
		Paths: []string{".pypirc"},
		Fake:  fakePypirc,
	})
}

// pypiDefaults are the repositories twine and distutils use for these
// sections when they name none.
var pypiDefaults = map[string]string{
	"pypi":     "https://upload.pypi.org/legacy/",
	"testpypi": "https://test.pypi.org/legacy/",
}

// iniOption is one option of an INI file, as Python's configparser reads
// it: its section, its key (lower case), its value and where it lies.
type iniOption struct {
	section, key, value string
	start, end          int // the value's bytes (first line)
	continued           bool
	line                int
}

// parseINI reads src as Python's RawConfigParser does, with its defaults
// (twine's and distutils' reader): "[section]" lines, "key = value" or
// "key: value" (the first '=' or ':'), '#' and ';' comment lines, no
// inline comments, keys folded to lower case, a line indented deeper than
// its option's continuing the value (blank lines between included). A line
// it cannot read, a section twice or an option twice is an error, as it is
// for configparser.
func parseINI(src string) ([]*iniOption, error) {
	var out []*iniOption
	var cur *iniOption
	section, curIndent := "", 0
	sections := map[string]bool{}
	options := map[string]bool{}
	at := 0
	for n, line := range strings.SplitAfter(src, "\n") {
		start := at
		at += len(line)
		body := strings.TrimRight(line, "\r\n")
		t := strings.TrimSpace(body)
		if t == "" {
			continue
		}
		if t[0] == '#' || t[0] == ';' {
			continue
		}
		indent := len(body) - len(strings.TrimLeft(body, " \t\f\v"))
		if cur != nil && indent > curIndent {
			cur.continued = true
			continue
		}
		cur, curIndent = nil, indent
		if t[0] == '[' {
			if !strings.HasSuffix(t, "]") || len(t) < 3 {
				return nil, fmt.Errorf("line %d: not a section header", n+1)
			}
			section = t[1 : len(t)-1]
			if sections[section] {
				return nil, fmt.Errorf("line %d: a section twice", n+1)
			}
			sections[section] = true
			continue
		}
		if section == "" {
			return nil, fmt.Errorf("line %d: an option before any section", n+1)
		}
		d := strings.IndexAny(body, "=:")
		if d < 0 {
			return nil, fmt.Errorf("line %d: not an option", n+1)
		}
		key := strings.ToLower(strings.TrimSpace(body[:d]))
		raw := body[d+1:]
		lead, v := trimValue(raw)
		if options[section+"\x00"+key] {
			return nil, fmt.Errorf("line %d: an option twice", n+1)
		}
		options[section+"\x00"+key] = true
		vstart := start + d + 1 + lead
		cur = &iniOption{section: section, key: key, value: v, start: vstart, end: vstart + len(v), line: n + 1}
		out = append(out, cur)
	}
	return out, nil
}

// fakePypirc fakes a .pypirc: each index section's "password" (an API
// token with the user "__token__", or a password) becomes a fake bound to
// the host of the section's "repository" (pypi: upload.pypi.org; testpypi:
// test.pypi.org, when they name none). twine sends it in Basic auth, where
// the broker swaps it after decoding. Everything else passes. A password
// in [DEFAULT] (it applies to every section) or [distutils], in a section
// with no repository of its own, or spread over several lines, and a
// repository that is not a URL with a host (or holds a user and password),
// are errors.
func fakePypirc(real []byte, fake Faker) ([]byte, []Cred, error) {
	src := string(real)
	opts, err := parseINI(src)
	if err != nil {
		return nil, nil, fmt.Errorf("pypirc: %w", err)
	}
	repos := map[string]string{}
	for _, o := range opts {
		if o.key == "repository" {
			if _, err := hostOfURL(o.value); err != nil && o.value != "" {
				// A password in the URL is sent too (requests' Basic auth).
				return nil, nil, fmt.Errorf("pypirc: line %d: repository: %w", o.line, err)
			}
			repos[o.section] = o.value
		}
	}
	var edits []edit
	var creds []Cred
	for _, o := range opts {
		if o.key != "password" || (o.value == "" && !o.continued) {
			continue
		}
		if o.continued {
			return nil, nil, fmt.Errorf("pypirc: line %d: a password over several lines", o.line)
		}
		if o.section == "DEFAULT" || o.section == "distutils" {
			return nil, nil, fmt.Errorf("pypirc: line %d: a password in [%s]: %w", o.line, o.section, errNoHost)
		}
		repo, ok := repos[o.section]
		if !ok {
			repo, ok = pypiDefaults[o.section]
		}
		if !ok {
			return nil, nil, fmt.Errorf("pypirc: line %d: a password in a section with no repository: %w", o.line, errNoHost)
		}
		host, err := hostOfURL(repo)
		if err != nil {
			return nil, nil, fmt.Errorf("pypirc: line %d: repository: %w", o.line, err)
		}
		name := "pypirc:" + o.section
		edits = append(edits, edit{o.start, o.end, fake(name, o.value)})
		creds = append(creds, Cred{Name: name, Real: o.value, Hosts: []string{host}})
	}
	return []byte(applyEdits(src, edits)), creds, nil
}
