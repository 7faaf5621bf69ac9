package login

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// The YAML formats (gh's hosts.yml, .yarnrc.yml) replace a secret's scalar
// in place, at the bytes the parser read it from, so comments, order and
// formatting pass as they are; a marshaller would rewrite the file. The
// fake file is then parsed again and must hold the fakes where the real
// file held the secrets.

// yamlDoc is a parsed YAML file and where each of its tokens lies.
type yamlDoc struct {
	src  string
	body ast.Node // nil for an empty file or one of comments only
	off  map[*token.Token]int
}

// parseYAML parses one YAML document. Anchors, aliases, merge keys, tags
// and several documents are refused: each can make a value appear where
// the format's reader does not look for it.
func parseYAML(src []byte) (d *yamlDoc, err error) {
	defer func() {
		// The parser is not ours: a panic on a hostile file masks it.
		if recover() != nil {
			d, err = nil, errors.New("not YAML")
		}
	}()
	s := string(src)
	toks := lexer.Tokenize(s)
	d = &yamlDoc{src: s, off: map[*token.Token]int{}}
	at := 0
	for _, tk := range toks {
		if tk.Type == token.InvalidType {
			return nil, errors.New("not YAML")
		}
		d.off[tk] = at
		at += len(tk.Origin)
	}
	f, err := parser.Parse(toks, parser.ParseComments)
	if err != nil {
		return nil, errors.New("not YAML")
	}
	if len(f.Docs) > 1 {
		return nil, errors.New("several YAML documents")
	}
	if len(f.Docs) == 1 {
		d.body = f.Docs[0].Body
		if _, ok := d.body.(*ast.CommentGroupNode); ok {
			d.body = nil
		}
	}
	if d.body != nil {
		var bad error
		ast.Walk(yamlVisitor(func(n ast.Node) {
			switch n.(type) {
			case *ast.AnchorNode, *ast.AliasNode, *ast.MergeKeyNode, *ast.TagNode, *ast.DirectiveNode:
				bad = errors.New("YAML anchors, aliases, tags and directives are not understood")
			}
		}), d.body)
		if bad != nil {
			return nil, bad
		}
	}
	return d, nil
}

type yamlVisitor func(ast.Node)

func (v yamlVisitor) Visit(n ast.Node) ast.Visitor {
	v(n)
	return v
}

// yamlMap returns the entries of a mapping node (block or flow); ok is
// false for any other node. A key that is not a string, or a key twice,
// is an error.
func yamlMap(n ast.Node) (keys []string, values []ast.Node, ok bool, err error) {
	var entries []*ast.MappingValueNode
	switch m := n.(type) {
	case *ast.MappingNode:
		entries = m.Values
	case *ast.MappingValueNode:
		entries = []*ast.MappingValueNode{m}
	default:
		return nil, nil, false, nil
	}
	seen := map[string]bool{}
	for _, e := range entries {
		k, isStr := e.Key.(*ast.StringNode)
		if !isStr {
			return nil, nil, true, errors.New("a mapping key that is not a string")
		}
		if seen[k.Value] {
			return nil, nil, true, fmt.Errorf("the key %q twice", k.Value)
		}
		seen[k.Value] = true
		keys = append(keys, k.Value)
		values = append(values, e.Value)
	}
	return keys, values, true, nil
}

// isYAMLNull reports whether n is an empty value ("key:" or "key: null").
func isYAMLNull(n ast.Node) bool {
	_, ok := n.(*ast.NullNode)
	return n == nil || ok
}

// yamlScalar is a string scalar of the file: its value and its raw bytes.
type yamlScalar struct {
	value      string
	start, end int
	style      token.Type // StringType (plain), SingleQuoteType or DoubleQuoteType
}

// scalar returns the string scalar n: plain, single- or double-quoted, on
// one line. Anything else (a number, a block scalar, a multi-line
// string) is an error: a secret there cannot be replaced in place.
func (d *yamlDoc) scalar(n ast.Node) (yamlScalar, error) {
	s, ok := n.(*ast.StringNode)
	if !ok || s.Token == nil {
		return yamlScalar{}, errors.New("a secret that is not a one-line string")
	}
	tk := s.Token
	off, ok := d.off[tk]
	if !ok || off+len(tk.Origin) > len(d.src) || d.src[off:off+len(tk.Origin)] != tk.Origin {
		return yamlScalar{}, errors.New("a secret whose place in the file is unknown")
	}
	rest := strings.TrimLeft(tk.Origin, " \t\r\n")
	start := off + len(tk.Origin) - len(rest)
	var raw string
	switch tk.Type {
	case token.StringType:
		raw = strings.TrimRight(rest, " \t\r\n")
		if raw != s.Value {
			return yamlScalar{}, errors.New("a secret that is not a one-line string")
		}
	case token.SingleQuoteType:
		j := 1
		for ; j < len(rest); j++ {
			if rest[j] == '\'' {
				if j+1 < len(rest) && rest[j+1] == '\'' {
					j++
					continue
				}
				break
			}
		}
		if j >= len(rest) {
			return yamlScalar{}, errors.New("a secret that is not a one-line string")
		}
		raw = rest[:j+1]
		if strings.ReplaceAll(raw[1:len(raw)-1], "''", "'") != s.Value {
			return yamlScalar{}, errors.New("a secret that is not a one-line string")
		}
	case token.DoubleQuoteType:
		j := 1
		for ; j < len(rest) && rest[j] != '"'; j++ {
			if rest[j] == '\\' {
				j++
			}
		}
		if j >= len(rest) {
			return yamlScalar{}, errors.New("a secret that is not a one-line string")
		}
		raw = rest[:j+1]
	default:
		return yamlScalar{}, errors.New("a secret that is not a one-line string")
	}
	if strings.ContainsAny(raw, "\r\n") {
		return yamlScalar{}, errors.New("a secret that is not a one-line string")
	}
	return yamlScalar{value: s.Value, start: start, end: start + len(raw), style: tk.Type}, nil
}

// yamlQuote writes value as a scalar of style: plain where it reads back
// as the same string, else single-quoted; double-quoted with '\' and '"'
// escaped (a value with a control byte is refused).
func yamlQuote(value string, style token.Type) (string, error) {
	for i := 0; i < len(value); i++ {
		if value[i] < 0x20 || value[i] == 0x7f {
			return "", errors.New("a secret with a control character")
		}
	}
	switch style {
	case token.DoubleQuoteType:
		return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(value) + `"`, nil
	case token.StringType:
		if yamlPlainReadsAs(value) {
			return value, nil
		}
	}
	return "'" + strings.ReplaceAll(value, "'", "''") + "'", nil
}

// yamlPlainReadsAs reports whether value, written plain, reads back as the
// string value.
func yamlPlainReadsAs(value string) bool {
	if value == "" || strings.ContainsAny(value, ",[]{}") {
		return false // flow indicators, in case the scalar is in a flow collection
	}
	f, err := parser.ParseBytes([]byte("k: "+value+"\n"), 0)
	if err != nil || len(f.Docs) != 1 {
		return false
	}
	keys, values, ok, err := yamlMap(f.Docs[0].Body)
	if !ok || err != nil || len(keys) != 1 {
		return false
	}
	s, ok := values[0].(*ast.StringNode)
	return ok && s.Token != nil && s.Token.Type == token.StringType && s.Value == value
}

// edit replaces src[start:end] (every format edits its file in place).
type edit struct {
	start, end int
	text       string
}

// applyEdits returns src with edits made (they do not overlap).
func applyEdits(src string, edits []edit) string {
	sort.Slice(edits, func(i, j int) bool { return edits[i].start < edits[j].start })
	var b strings.Builder
	at := 0
	for _, e := range edits {
		b.WriteString(src[at:e.start])
		b.WriteString(e.text)
		at = e.end
	}
	b.WriteString(src[at:])
	return b.String()
}
