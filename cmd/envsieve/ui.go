package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/envsieve/envsieve/policy"
)

// ui holds envsieve's own output rules: results on stdout; errors, hints and
// debug lines on stderr, each prefixed "envsieve: ", lower case, no final
// period. Nothing printed here ever holds a variable's value.
type ui struct {
	out, err io.Writer
	debug    bool
	start    time.Time
}

func newUI(out, err io.Writer, debug bool) *ui {
	return &ui{out: out, err: err, debug: debug, start: time.Now()}
}

func (u *ui) debugf(format string, args ...any) {
	if !u.debug {
		return
	}
	fmt.Fprintf(u.err, "envsieve: debug: [%s] %s\n", time.Since(u.start).Round(time.Microsecond), fmt.Sprintf(format, args...))
}

func (u *ui) warnf(format string, args ...any) {
	fmt.Fprintf(u.err, "envsieve: warning: %s\n", fmt.Sprintf(format, args...))
}

// printError prints err, every policy error with its source excerpt, and a
// hint line when one helps.
func (u *ui) printError(err error) {
	var pe policy.ErrorList
	if errors.As(err, &pe) {
		for _, e := range pe {
			fmt.Fprintf(u.err, "envsieve: %s\n", e.Error())
			if e.Excerpt != "" {
				fmt.Fprint(u.err, indent(e.Excerpt))
			}
		}
	} else {
		fmt.Fprintf(u.err, "envsieve: %s\n", strings.TrimSuffix(err.Error(), "."))
	}
	if h := hint(err); h != "" {
		fmt.Fprintf(u.err, "envsieve: hint: %s\n", h)
	}
}

func indent(s string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString("  " + l)
		}
	}
	return b.String()
}
