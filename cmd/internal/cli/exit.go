package cli

import (
	"errors"
	"fmt"

	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/sieve"
)

// ExitStatus carries an exit status decided by a command that has already
// said everything it had to say.
type ExitStatus int

func (e ExitStatus) Error() string { return fmt.Sprintf("exit status %d", int(e)) }

// UsageError marks a mistake on the command line.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// ExitCode is the one place that maps errors to exit statuses and prints
// them: 0 for nil, an ExitStatus's own, 127 for a program not found, 126 for
// one that cannot be executed, 125 for everything else.
func ExitCode(u *UI, err error) int {
	if err == nil {
		return 0
	}
	var st ExitStatus
	if errors.As(err, &st) {
		return int(st)
	}
	u.PrintError(err)
	var nf *launch.NotFoundError
	switch {
	case errors.As(err, &nf):
		return 127
	case errors.Is(err, launch.ErrNotExecutable):
		return 126
	}
	return 125
}

// hint returns the advice line printed under an error, or "".
func hint(err error) string {
	var nf *launch.NotFoundError
	var le *sieve.LimitError
	var pe policy.ErrorList
	var se *sieve.SecretError
	switch {
	case skippedUserPolicy && (errors.Is(err, policy.ErrUnknownProfile) || errors.Is(err, sieve.ErrUnknownTool)):
		return "inside an envsieve tree the user's policy file is not loaded (the tree could have written it); name a policy with --policy"
	case errors.Is(err, launch.ErrNested):
		name := "NAME"
		if fe := (*launch.FetchError)(nil); errors.As(err, &fe) {
			name = fe.Name
		}
		return "hand " + name + " over in the outer launch (envsieve run --secret " + name + " -- AGENT), or run this outside the agent's tree"
	case errors.Is(err, ErrInTree):
		return "run 'envsieve secrets' outside the agent's tree"
	case errors.Is(err, policy.ErrUnknownProfile):
		return "'envsieve profiles' lists the profiles"
	case errors.Is(err, sieve.ErrUnknownTool):
		return "tools are declared under tools: in the policy"
	case errors.As(err, &nf):
		return "the program is looked up in the child's PATH; relative PATH entries such as '.' are ignored"
	case errors.As(err, &le):
		return fmt.Sprintf("raise limits.%s in the policy, or deny the variables you do not need", le.Limit)
	case errors.As(err, &pe):
		return "'envsieve check' validates a policy; docs/policy.md is the reference"
	case errors.As(err, &se) && se.Reason == "denied":
		return "a deny entry wins over every request; remove it from the policy to hand this secret over"
	case errors.As(err, new(UsageError)):
		return "'envsieve help' lists the commands and their flags"
	}
	return ""
}
