package policy

import (
	"fmt"
	"strings"
)

// Error is one problem in a policy source. Excerpt is the offending source line
// followed by a caret line under the column; it is empty when there is no source.
type Error struct {
	Pos     Pos
	Msg     string
	Excerpt string
}

func (e *Error) Error() string { return e.Pos.String() + ": " + e.Msg }

// ErrorList is every problem found while loading a policy, in source order.
// Loading reports all bad entries at once rather than stopping at the first.
type ErrorList []*Error

func (l ErrorList) Error() string {
	switch len(l) {
	case 0:
		return "no errors"
	case 1:
		return l[0].Error()
	}
	return fmt.Sprintf("%s (and %d more errors)", l[0].Error(), len(l)-1)
}

// Detail returns every error with its source excerpt, one block per error,
// ready to print.
func (l ErrorList) Detail() string {
	var b strings.Builder
	for _, e := range l {
		b.WriteString(e.Error())
		b.WriteByte('\n')
		if e.Excerpt != "" {
			b.WriteString(e.Excerpt)
		}
	}
	return b.String()
}

// excerpt returns the source line of pos with a caret under its column.
func excerpt(src []byte, pos Pos) string {
	if !pos.IsValid() || len(src) == 0 {
		return ""
	}
	lines := strings.Split(string(src), "\n")
	if pos.Line > len(lines) {
		return ""
	}
	line := strings.TrimRight(lines[pos.Line-1], "\r")
	const max = 120
	if len(line) > max {
		line = line[:max] + "..."
	}
	col := pos.Col
	if col < 1 {
		col = 1
	}
	if col > len(line)+1 {
		col = len(line) + 1
	}
	gutter := fmt.Sprintf("%5d | ", pos.Line)
	pad := strings.Repeat(" ", len(gutter)-2) + "| "
	// Keep tabs so the caret lines up under the same column.
	var caret strings.Builder
	for i := 0; i < col-1 && i < len(line); i++ {
		if line[i] == '\t' {
			caret.WriteByte('\t')
		} else {
			caret.WriteByte(' ')
		}
	}
	return gutter + line + "\n" + pad + caret.String() + "^\n"
}
