package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/policy"
)

// UI holds envsieve's own output rules: results on Out; errors, hints and
// debug lines on Err, each prefixed "envsieve: ", lower case, no final
// period. Nothing printed here ever holds a variable's value.
type UI struct {
	Out, Err io.Writer
	Debug    bool
	start    time.Time
}

// NewUI returns a UI; debug turns the debug lines on.
func NewUI(out, err io.Writer, debug bool) *UI {
	return &UI{Out: out, Err: err, Debug: debug, start: time.Now()}
}

// Debugf prints a debug line, with the time since the UI was made, when
// debug lines are on.
func (u *UI) Debugf(format string, args ...any) {
	if !u.Debug {
		return
	}
	fmt.Fprintf(u.Err, "envsieve: debug: [%s] %s\n", time.Since(u.start).Round(time.Microsecond), fmt.Sprintf(format, args...))
}

// Warnf prints a warning line.
func (u *UI) Warnf(format string, args ...any) {
	fmt.Fprintf(u.Err, "envsieve: warning: %s\n", fmt.Sprintf(format, args...))
}

// PrintError prints err, every policy error with its source excerpt, and a
// hint line when one helps.
func (u *UI) PrintError(err error) {
	var pe policy.ErrorList
	if errors.As(err, &pe) {
		for _, e := range pe {
			fmt.Fprintf(u.Err, "envsieve: %s\n", e.Error())
			if e.Excerpt != "" {
				fmt.Fprint(u.Err, indent(e.Excerpt))
			}
		}
	} else {
		fmt.Fprintf(u.Err, "envsieve: %s\n", strings.TrimSuffix(err.Error(), "."))
	}
	if h := hint(err); h != "" {
		fmt.Fprintf(u.Err, "envsieve: hint: %s\n", h)
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

// Root makes the root command of one of envsieve's programs: its output
// and errors go where u says, it prints neither usage nor errors itself
// (ExitCode does), a flag mistake is a UsageError, and it has no completion
// command. Commands are named envsieve whatever the program, so that usage
// lines read as the user typed them.
func Root(u *UI, program, version, short, long string) *cobra.Command {
	root := &cobra.Command{
		Use:           "envsieve",
		Short:         short,
		Long:          long,
		Version:       version,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(u.Out)
	root.SetErr(u.Err)
	root.SetVersionTemplate(program + " {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return UsageError{Err: err} })
	root.CompletionOptions.DisableDefaultCmd = true
	return root
}
