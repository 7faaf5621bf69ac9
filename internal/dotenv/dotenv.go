// Package dotenv reads dotenv files (envsieve run --env-file) strictly: a
// line that does not parse is an error naming the file, line and column,
// and never the value.
package dotenv

import (
	"bytes"
	"fmt"
	"strings"
)

// Entry is one KEY=VALUE of a dotenv file, with the line and column
// (1-based, in bytes) where its key starts.
type Entry struct {
	Key       string
	Value     string
	Line, Col int
}

// dotenvError is a line of a dotenv file that does not parse: it names the
// file, line and column (1-based, in bytes), never a value.
type dotenvError struct {
	File      string
	Line, Col int
	Msg       string
}

func (e *dotenvError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

// Parse parses data, the contents of the dotenv file named file (for
// errors), as `docker run --env-file` and `op run --env-file` read one,
// strictly:
//
//   - a line is blank, a comment (its first non-blank byte is #), or
//     [export ]KEY=VALUE, with blanks (space, tab) allowed before it;
//   - KEY is a variable name ([A-Za-z_][A-Za-z0-9_]*), written right
//     before the =;
//   - an unquoted VALUE runs to the end of the line, less trailing blanks
//     and a comment that starts with a blank and #; it may not start with
//     a blank (quote it);
//   - a 'single-quoted' VALUE is taken as written, up to the next ', and
//     may span lines;
//   - a "double-quoted" VALUE may span lines and knows the escapes \n, \r,
//     \t, \\, \", \' and \$ (any other is an error); $ is not expanded;
//   - after a closing quote only blanks and a comment may follow;
//   - a key given twice, a NUL byte, or anything else is an error at its
//     position. Lines end in \n or \r\n.
//
// Entries come back in file order.
func Parse(file string, data []byte) ([]Entry, error) {
	p := &dotenvParser{file: file, src: data, line: 1, lineStart: 0}
	if i := bytes.IndexByte(data, 0); i >= 0 {
		p.pos = i
		p.fixLine()
		return nil, p.errorf("NUL byte")
	}
	var out []Entry
	seen := map[string]int{}
	for p.pos < len(p.src) {
		e, err := p.entry()
		if err != nil {
			return nil, err
		}
		if e == nil {
			continue
		}
		if first, ok := seen[e.Key]; ok {
			return nil, &dotenvError{File: file, Line: e.Line, Col: e.Col, Msg: fmt.Sprintf("%s is given twice (first on line %d)", e.Key, first)}
		}
		seen[e.Key] = e.Line
		out = append(out, *e)
	}
	return out, nil
}

type dotenvParser struct {
	file            string
	src             []byte
	pos             int
	line, lineStart int
}

// fixLine sets line and lineStart for pos, counting from the start.
func (p *dotenvParser) fixLine() {
	p.line, p.lineStart = 1, 0
	for i := 0; i < p.pos; i++ {
		if p.src[i] == '\n' {
			p.line, p.lineStart = p.line+1, i+1
		}
	}
}

func (p *dotenvParser) errorf(format string, args ...any) error {
	return &dotenvError{File: p.file, Line: p.line, Col: p.pos - p.lineStart + 1, Msg: fmt.Sprintf(format, args...)}
}

func (p *dotenvParser) peek() (byte, bool) {
	if p.pos < len(p.src) {
		return p.src[p.pos], true
	}
	return 0, false
}

func (p *dotenvParser) skipBlanks() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

// newline consumes the end of a line (\n, \r\n, or the end of the data)
// and reports whether there was one at pos.
func (p *dotenvParser) newline() bool {
	switch {
	case p.pos >= len(p.src):
		return true
	case p.src[p.pos] == '\n':
		p.pos++
	case p.src[p.pos] == '\r' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '\n':
		p.pos += 2
	default:
		return false
	}
	p.line, p.lineStart = p.line+1, p.pos
	return true
}

// rest consumes blanks and a comment up to the end of the line; anything
// else is an error.
func (p *dotenvParser) rest(what string) error {
	p.skipBlanks()
	if c, ok := p.peek(); ok && c == '#' {
		for p.pos < len(p.src) && p.src[p.pos] != '\n' {
			p.pos++
		}
	}
	if !p.newline() {
		return p.errorf("unexpected %q after %s", p.src[p.pos], what)
	}
	return nil
}

// entry parses one line (or, with a quoted value, more); nil for a blank
// or comment line.
func (p *dotenvParser) entry() (*Entry, error) {
	p.skipBlanks()
	if c, ok := p.peek(); !ok || c == '#' || c == '\n' || c == '\r' {
		return nil, p.rest("a blank")
	}
	if bytes.HasPrefix(p.src[p.pos:], []byte("export")) && p.pos+6 < len(p.src) && (p.src[p.pos+6] == ' ' || p.src[p.pos+6] == '\t') {
		p.pos += 6
		p.skipBlanks()
	}
	e := &Entry{Line: p.line, Col: p.pos - p.lineStart + 1}
	start := p.pos
	for p.pos < len(p.src) && isNameByte(p.src[p.pos], p.pos == start) {
		p.pos++
	}
	e.Key = string(p.src[start:p.pos])
	c, ok := p.peek()
	switch {
	case e.Key == "" && ok && c >= '0' && c <= '9':
		return nil, p.errorf("a variable name does not start with a digit")
	case e.Key == "":
		return nil, p.errorf("want KEY=VALUE")
	case !ok || c == '\n' || c == '\r':
		return nil, p.errorf("%s has no = and no value", e.Key)
	case c == ' ' || c == '\t':
		return nil, p.errorf("blank after %s: want %s=VALUE, with no blank before the =", e.Key, e.Key)
	case c != '=':
		return nil, p.errorf("%q in a variable name", c)
	}
	p.pos++ // =
	var err error
	switch c, _ := p.peek(); c {
	case '\'':
		e.Value, err = p.single()
	case '"':
		e.Value, err = p.double()
	default:
		e.Value, err = p.unquoted()
	}
	if err != nil {
		return nil, err
	}
	return e, nil
}

func isNameByte(c byte, first bool) bool {
	return c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || !first && c >= '0' && c <= '9'
}

func (p *dotenvParser) unquoted() (string, error) {
	start := p.pos
	end := p.pos
	for p.pos < len(p.src) && p.src[p.pos] != '\n' && !(p.src[p.pos] == '\r' && p.pos+1 < len(p.src) && p.src[p.pos+1] == '\n') {
		c := p.src[p.pos]
		if c == '\r' {
			return "", p.errorf("a carriage return in an unquoted value (quote it, as \"\\r\")")
		}
		if c == '#' && p.pos > start && (p.src[p.pos-1] == ' ' || p.src[p.pos-1] == '\t') {
			break
		}
		p.pos++
		if c != ' ' && c != '\t' {
			end = p.pos
		}
	}
	if end > start && (p.src[start] == ' ' || p.src[start] == '\t') {
		p.pos = start
		return "", p.errorf("blank after the =: quote a value that starts with a blank")
	}
	v := string(p.src[start:end])
	return v, p.rest("the value")
}

// advance moves pos over one byte, keeping the line count.
func (p *dotenvParser) advance() {
	if p.src[p.pos] == '\n' {
		p.line, p.lineStart = p.line+1, p.pos+1
	}
	p.pos++
}

func (p *dotenvParser) single() (string, error) {
	open := *p
	p.pos++
	start := p.pos
	for p.pos < len(p.src) && p.src[p.pos] != '\'' {
		p.advance()
	}
	if p.pos >= len(p.src) {
		return "", open.errorf("the ' here is not closed")
	}
	v := string(p.src[start:p.pos])
	p.pos++
	return v, p.rest("the closing '")
}

func (p *dotenvParser) double() (string, error) {
	open := *p
	p.pos++
	var b strings.Builder
	for {
		if p.pos >= len(p.src) {
			return "", open.errorf(`the " here is not closed`)
		}
		c := p.src[p.pos]
		switch c {
		case '"':
			p.pos++
			return b.String(), p.rest(`the closing "`)
		case '\\':
			if p.pos+1 >= len(p.src) {
				return "", open.errorf(`the " here is not closed`)
			}
			esc := p.src[p.pos+1]
			switch esc {
			case 'n':
				b.WriteByte('\n')
			case 'r':
				b.WriteByte('\r')
			case 't':
				b.WriteByte('\t')
			case '\\', '"', '\'', '$':
				b.WriteByte(esc)
			default:
				return "", p.errorf(`unknown escape %q in a "-quoted value (\n \r \t \\ \" \' \$ are known)`, []byte{'\\', esc})
			}
			p.pos += 2
		default:
			b.WriteByte(c)
			p.advance()
		}
	}
}
