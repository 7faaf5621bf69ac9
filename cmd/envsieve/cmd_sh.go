package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/proc"
	"github.com/envsieve/envsieve/internal/shellcmd"
	"github.com/envsieve/envsieve/launch"
)

// defaultShell runs shell strings when the policy names no shell.
const defaultShell = "/bin/sh"

// shArgs is a parsed `envsieve sh` command line.
type shArgs struct {
	flags   policyFlags
	command string   // the -c string
	hasC    bool     // -c was given
	opts    []string // options passed on to the real shell, such as -l, -e
	rest    []string // operands after the -c string ($0 $1 ...), or a script and its arguments
	// noSeal turns off sh's own seal (--no-seal): sh exists to be an
	// agent's shell, so it seals by default; a policy's seal still holds.
	noSeal bool
}

// parseShArgs parses arguments the way a POSIX shell does, so envsieve sh can
// be an agent's SHELL: single-letter options, combined or not (-lc, -c -l),
// until the first operand or "--"; with -c, the first operand is the command
// string. envsieve's own --policy, --profile and --mode may come first.
func parseShArgs(args []string) (*shArgs, error) {
	a := &shArgs{}
	i := 0
	long := func(name string, dst *string) (bool, error) {
		arg := args[i]
		if v, ok := strings.CutPrefix(arg, "--"+name+"="); ok {
			*dst = v
			return true, nil
		}
		if arg != "--"+name {
			return false, nil
		}
		if i+1 >= len(args) {
			return false, cli.UsageError{Err: fmt.Errorf("sh: --%s needs a value", name)}
		}
		i++
		*dst = args[i]
		return true, nil
	}
	for ; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			i++
			break
		}
		if !strings.HasPrefix(arg, "-") && !strings.HasPrefix(arg, "+") || arg == "-" || arg == "+" {
			break
		}
		if strings.HasPrefix(arg, "--") {
			matched := false
			for _, l := range []struct {
				name string
				dst  *string
			}{{"policy", &a.flags.policy}, {"profile", &a.flags.profile}, {"mode", &a.flags.mode}} {
				ok, err := long(l.name, l.dst)
				if err != nil {
					return nil, err
				}
				matched = matched || ok
				if ok {
					break
				}
			}
			switch {
			case matched:
			case arg == "--isolate":
				a.flags.isolate = true
			case arg == "--seal":
				a.noSeal = false
			case arg == "--no-seal":
				a.noSeal = true
			case arg == "--no-shim":
				a.flags.noShim = true
			case arg == "--login":
				a.opts = append(a.opts, "-l")
			case arg == "--noprofile" || arg == "--norc":
				a.opts = append(a.opts, arg)
			default:
				return nil, cli.UsageError{Err: fmt.Errorf("sh: unknown option %s", arg)}
			}
			continue
		}
		for _, ch := range arg[1:] {
			switch ch {
			case 'c':
				if arg[0] == '+' {
					return nil, cli.UsageError{Err: fmt.Errorf("sh: +c is not an option")}
				}
				a.hasC = true
			case 'l', 'i', 'e', 'u', 'x', 'v', 'f', 'n':
				a.opts = append(a.opts, string(arg[0])+string(ch))
			case 'o':
				if i+1 >= len(args) {
					return nil, cli.UsageError{Err: fmt.Errorf("sh: %co needs an option name", arg[0])}
				}
				i++
				a.opts = append(a.opts, string(arg[0])+"o", args[i])
			default:
				return nil, cli.UsageError{Err: fmt.Errorf("sh: unknown option %c%c", arg[0], ch)}
			}
		}
	}
	a.rest = args[i:]
	a.flags.seal = !a.noSeal
	if a.hasC {
		if len(a.rest) == 0 {
			return nil, cli.UsageError{Err: fmt.Errorf("sh: -c needs a command string")}
		}
		a.command, a.rest = a.rest[0], a.rest[1:]
	}
	return a, nil
}

// startupFiles reports whether the shell will run startup files (a login
// shell's ~/.profile, an interactive one's ~/.bashrc): files the tree can
// write, so a shell that reads them must hold no rule's keys.
func (a *shArgs) startupFiles() bool {
	for _, o := range a.opts {
		if o == "-l" || o == "-i" {
			return true
		}
	}
	return false
}

// shimLoads reports whether the shim will load into the shell (found, not
// turned off, the shell dynamic), looking the shell up in the launcher's
// PATH as the child's will be: then the shell never gets a rule's keys,
// and each program gets its grant at its exec.
func shimLoads(h *launch.Host, shell string, noShim bool) bool {
	if noShim {
		return false
	}
	path, err := proc.LookPath(shell, os.Environ())
	if err != nil {
		return false
	}
	_, static, err := h.FindShim(path)
	return err == nil && !static
}

func shCmd(u *cli.UI) *cobra.Command {
	c := &cobra.Command{
		Use:   "sh [flags] [-lieuxvfn] [-o NAME] [-c STRING [NAME [ARGS...]] | SCRIPT [ARGS...]]",
		Short: "Run a shell string with the environment the policy allows (a drop-in SHELL)",
		Long: `sh runs a shell with the environment the policy allows. It takes the options
agents hand a shell (-c, -l, -i, -e, combined as in -lc) and the policy from
ENVSIEVE_POLICY and the profile from ENVSIEVE_PROFILE, so a link to envsieve
named envsieve-sh can be an agent's SHELL.

With -c, STRING is parsed as shell; a command rule applies only when every
simple command in it matches that same rule. A string that does not parse, or
holds anything the shell would expand (a variable, a substitution, a glob, an
assignment, a redirection to a built name, a here-document), gets no rule,
and so does a login or interactive shell (it runs startup files) and a script
from a file or stdin. Where the shim loads into the shell, the shell itself
never gets a rule's keys: each program gets its grant at its exec. The
string runs with the policy's shell (default /bin/sh).

sh seals by default, as run --seal does (it exists to be an agent's shell):
the credential files, envsieve's store and keys and the policy are out of
the tree's reach. --no-seal turns sh's own seal off; a seal the policy asks
for still holds.`,
		Example: `  envsieve sh -c 'gh pr list'
  ln -s "$(command -v envsieve)" ~/bin/envsieve-sh && SHELL=~/bin/envsieve-sh ENVSIEVE_PROFILE=claude claude`,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 && (args[0] == "--help" || args[0] == "-h") {
				return cmd.Help()
			}
			a, err := parseShArgs(args)
			if err != nil {
				return err
			}
			if !a.flags.noShim {
				proc.EarlySignals() // as run does
			}
			p, err := cli.LoadPolicy(u, a.flags.policy)
			if err != nil {
				return err
			}
			shell := p.Shell
			if shell == "" {
				shell = defaultShell
			}
			var commands [][]string
			switch {
			case !a.hasC:
			case a.startupFiles():
				u.Debugf("sh: a login or interactive shell runs files the tree can write: no rule applies")
			case shimLoads(host(u, &a.flags), shell, a.flags.noShim):
				u.Debugf("sh: the shim loads: rules apply at the exec of each program, never to the shell")
			default:
				if cmds, ok := shellcmd.Commands(a.command); ok {
					commands = cmds
				} else {
					u.Debugf("sh: the string cannot be analysed statically: no rule applies")
				}
			}
			argv := append([]string{shell}, a.opts...)
			if a.hasC {
				argv = append(argv, "-c", a.command)
			}
			argv = append(argv, a.rest...)
			l, err := buildWith(u, p, &a.flags, commands, argv, 0)
			if err != nil {
				return err
			}
			return start(l)
		},
	}
	// sh parses its own arguments (parseShArgs), as a shell does; these
	// are registered for its help only, so that it lists what sh takes.
	fs := c.Flags()
	fs.String("policy", "", "policy `file` (default: $ENVSIEVE_POLICY, then $XDG_CONFIG_HOME/envsieve/policy.yaml, then the embedded default)")
	fs.String("profile", "", "profile `name` (default: $ENVSIEVE_PROFILE)")
	fs.String("mode", "", "override the policy's mode: enforce or audit")
	fs.Bool("isolate", false, "run in new user, pid and mount namespaces (implied: sh seals by default)")
	fs.Bool("seal", true, "seal the tree, as run --seal does (sh's default; undoes an earlier --no-seal)")
	fs.Bool("no-seal", false, "turn sh's own seal off (a seal the policy asks for still holds)")
	fs.Bool("no-shim", false, "do not load the shim (libenvsieve.so)")
	fs.Bool("login", false, "a login shell, as -l: it runs startup files, so no rule applies")
	fs.Bool("noprofile", false, "passed to the shell (bash's)")
	fs.Bool("norc", false, "passed to the shell (bash's)")
	// The one-letter options (-c -l -i -e -u -x -v -f -n -o NAME) have no
	// long names for pflag to list: the usage line and Long name them.
	return c
}
