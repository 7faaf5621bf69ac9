// Package shellcmd lists the simple commands of a shell string, so that a
// command rule can be applied to `envsieve sh -c STRING` only when every
// command in the string is one the rule is meant for.
//
// The analysis is static and strict, because a rule's keys would be in the
// shell that expands the string: any expansion anywhere (a variable, a
// command substitution, a glob, a tilde, a backslash, in a program, an
// argument or a redirection's target), any assignment (PATH=./evil changes
// which program runs), any here-document or here-string, case, for, select
// and time, and every command that is not a program call (declarations such
// as export, arithmetic, [[ tests ]], function definitions) makes the whole
// string unknowable, and Commands reports ok=false. The caller then applies
// no rule: the string runs with the global and profile levels only.
package shellcmd

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Commands parses src as bash and returns the argv of each simple command, in
// source order, including those inside command substitutions, pipelines,
// conditionals and loops. ok is false when the string does not parse or holds
// anything that cannot be known statically; see the package comment.
func Commands(src string) (cmds [][]string, ok bool) {
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(src), "")
	if err != nil {
		return nil, false
	}
	ok = true
	syntax.Walk(f, func(n syntax.Node) bool {
		if !ok {
			return false
		}
		switch n := n.(type) {
		case *syntax.CallExpr:
			if len(n.Assigns) > 0 || len(n.Args) == 0 {
				ok = false
				return false
			}
			argv := make([]string, 0, len(n.Args))
			for _, w := range n.Args {
				s, lit := literal(w)
				if !lit {
					ok = false
					return false
				}
				argv = append(argv, s)
			}
			cmds = append(cmds, argv)
		case *syntax.Redirect:
			if n.Hdoc != nil || n.Op == syntax.WordHdoc {
				ok = false
				return false
			}
			if n.Word == nil {
				return true
			}
			if _, lit := literal(n.Word); !lit {
				ok = false
				return false
			}
		case *syntax.DeclClause, *syntax.LetClause, *syntax.ArithmCmd, *syntax.TestClause,
			*syntax.TestDecl, *syntax.FuncDecl, *syntax.CoprocClause, *syntax.CaseClause,
			*syntax.ForClause, *syntax.TimeClause, *syntax.Assign,
			*syntax.ParamExp, *syntax.CmdSubst, *syntax.ArithmExp, *syntax.ProcSubst, *syntax.ExtGlob,
			*syntax.BraceExp:
			ok = false
			return false
		}
		return true
	})
	if !ok {
		return nil, false
	}
	return cmds, true
}

// literal returns the word's value when it holds no expansion of any kind.
func literal(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, part := range w.Parts {
		switch p := part.(type) {
		case *syntax.Lit:
			if strings.ContainsAny(p.Value, "\\*?[{~") {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			for _, q := range p.Parts {
				lit, isLit := q.(*syntax.Lit)
				if !isLit || strings.ContainsRune(lit.Value, '\\') {
					return "", false
				}
				b.WriteString(lit.Value)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}
