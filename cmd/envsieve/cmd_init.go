package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/cmd/internal/cli"
	"github.com/envsieve/envsieve/internal/detect"
	"github.com/envsieve/envsieve/policy"
)

func init() {
	verbs = append(verbs, struct {
		name string
		cmd  func(*cli.UI) *cobra.Command
	}{"init", initCmd})
}

type initOptions struct {
	fromAudit string
	profile   string
	output    string
}

func initCmd(u *cli.UI) *cobra.Command {
	var o initOptions
	c := &cobra.Command{
		Use:   "init --from-audit LOG [--profile NAME] [-o FILE]",
		Short: "Write a starter policy from what an audit log shows a session read and was denied",
		Long: `init --from-audit reads an audit log (envsieve run --audit LOG, with the shim
loaded so that reads are logged) and writes a starter policy for you to
review: a profile that allows the ordinary variables the programs read and
were denied (extending the built-in profile the launches used), each
credential they read and were denied as a secret to hand over by name, and
a rule for each program that read a credential, when the log names the
program. Every entry carries a comment with what the log showed. The log
holds names, never values, and so does the policy.

The policy goes to stdout, or to FILE (-o), which must not exist yet. It is
checked by the same parser as every policy before it is written. Nothing is
granted until you load it: read it, then 'envsieve check --policy FILE' and
'envsieve explain --policy FILE --profile NAME -- CMD'.`,
		Example: `  envsieve run --audit session.log --profile claude --mode audit -- claude
  envsieve init --from-audit session.log -o ~/.config/envsieve/policy.yaml`,
		Args: cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if o.fromAudit == "" {
				return cli.UsageError{Err: errors.New("init: --from-audit LOG is required (a starter policy is made from what a session did)")}
			}
			if !policy.ValidName(strings.ReplaceAll(o.profile, "-", "_")) {
				return cli.UsageError{Err: fmt.Errorf("init: --profile %q: want a name of letters, digits, _ and -", o.profile)}
			}
			return runInit(u, &o)
		},
	}
	c.Flags().StringVar(&o.fromAudit, "from-audit", "", "the audit `LOG` to read (JSON lines, as --audit writes them)")
	c.Flags().StringVar(&o.profile, "profile", "starter", "the `NAME` of the profile to write")
	c.Flags().StringVarP(&o.output, "output", "o", "", "write the policy to `FILE` (it must not exist) instead of stdout")
	return c
}

// auditEvent is the part of an audit line init reads (docs/audit.md).
type auditEvent struct {
	Msg       string   `json:"msg"`
	Launch    string   `json:"launch"`
	Argv      []string `json:"argv"`
	Profile   string   `json:"profile"`
	Pid       int      `json:"pid"`
	Key       string   `json:"key"`
	Verdict   string   `json:"verdict"`
	Path      string   `json:"path"`
	Kept      *bool    `json:"kept"`
	WouldDrop bool     `json:"would_drop"`
}

// sessionSummary is what init learns from a log.
type sessionSummary struct {
	launches int
	commands []string       // argv[0] of each launch, first seen first
	profiles []string       // the profiles the launches asked for
	programs []string       // programs the log names (grant, no_grant)
	read     map[string]int // key -> times read and dropped (or would-drop)
	// readBy are the programs that read a dropped key, by key; "" for
	// one the log does not name.
	readBy  map[string][]string
	dropped map[string]bool // keys dropped at launch, whether read or not
	skipped int             // lines that are not whole JSON objects
}

// readAudit reads an audit log. A line that is not a JSON object (one a
// full disk cut short) is counted and skipped; names that are not variable
// names, and paths that are not absolute, are ignored: the log could have
// been written by anyone, and nothing of it reaches the policy unchecked.
func readAudit(r io.Reader) (*sessionSummary, error) {
	s := &sessionSummary{read: map[string]int{}, readBy: map[string][]string{}, dropped: map[string]bool{}}
	type proc struct {
		launch string
		pid    int
	}
	paths := map[proc]string{}
	var events []auditEvent
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(strings.TrimSpace(string(line))) == 0 {
			continue
		}
		var e auditEvent
		if err := json.Unmarshal(line, &e); err != nil || e.Msg == "" {
			s.skipped++
			continue
		}
		switch e.Msg {
		case "launch":
			s.launches++
			if len(e.Argv) > 0 && e.Argv[0] != "" {
				s.commands = appendNew(s.commands, filepath.Base(e.Argv[0]))
			}
			if e.Profile != "" {
				s.profiles = appendNew(s.profiles, e.Profile)
			}
		case "grant", "no_grant":
			if filepath.IsAbs(e.Path) && printable(e.Path) {
				paths[proc{e.Launch, e.Pid}] = filepath.Clean(e.Path)
				s.programs = appendNew(s.programs, filepath.Clean(e.Path))
			}
		}
		events = append(events, e)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, e := range events {
		if !policy.ValidName(e.Key) {
			continue
		}
		switch {
		case e.Msg == "access" && (e.Verdict == "dropped" || e.Verdict == "withheld" || e.Verdict == "would-drop"): // "withheld": dropped, in logs written before the word changed
			s.read[e.Key]++
			s.readBy[e.Key] = appendNew(s.readBy[e.Key], paths[proc{e.Launch, e.Pid}])
		case e.Msg == "decision" && ((e.Kept != nil && !*e.Kept) || e.WouldDrop):
			s.dropped[e.Key] = true
		}
	}
	return s, nil
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// printable reports whether s is safe to write into a comment or a quoted
// scalar: no control characters.
func printable(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// starterPolicy renders the summary as a policy for the profile name.
func starterPolicy(s *sessionSummary, log, name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# A starter policy that 'envsieve init' made from the audit log\n# %s", quoteYAML(log))
	fmt.Fprintf(&b, ": %s", plural(s.launches, "launch", "launches"))
	if len(s.commands) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(quoteAll(s.commands), ", "))
	}
	fmt.Fprintf(&b, ".\n# Review every line: nothing is granted until you load it.\n")
	fmt.Fprintf(&b, "#   envsieve check --policy FILE\n#   envsieve explain --policy FILE --profile %s -- CMD\n", name)
	if len(s.read) == 0 {
		b.WriteString("# The log shows no read of a dropped variable (access events come from the\n" +
			"# shim: run the session with it loaded, in audit mode, to see them).\n")
	}
	b.WriteString("version: 1\n")

	var plain, creds []string
	for k := range s.read {
		if _, ok := detect.SensitiveName(k); ok {
			creds = append(creds, k)
		} else {
			plain = append(plain, k)
		}
	}
	sort.Strings(plain)
	sort.Strings(creds)

	// The profile: the built-in one the launches used, and the ordinary
	// variables they read.
	desc := "from the audit log " + filepath.Base(log)
	if !printable(desc) || !utf8.ValidString(desc) {
		desc = "from an audit log"
	}
	fmt.Fprintf(&b, "profiles:\n  %s:\n    description: %s\n", name, quoteYAML(desc))
	var builtins, others []string
	def, _ := policy.Default()
	for _, p := range s.profiles {
		p = strings.TrimPrefix(p, "builtin:")
		if _, ok := def.Profile("builtin:" + p); ok && def != nil {
			builtins = append(builtins, "builtin:"+p)
		} else {
			others = append(others, p)
		}
	}
	if len(builtins) > 0 {
		fmt.Fprintf(&b, "    extends: [%s]   # the built-in profile the launches used\n", strings.Join(builtins, ", "))
	}
	if len(others) > 0 {
		fmt.Fprintf(&b, "    # The launches also used: %s (not built in: extend yours, or merge)\n", wrapComment(quoteAll(others)))
	}
	if len(plain) > 0 {
		b.WriteString("    allow:\n")
		for _, k := range plain {
			fmt.Fprintf(&b, "      - %s   # read %s and dropped%s\n", k, times(s.read[k]), by(s.readBy[k]))
		}
	}

	// Credentials: never allowed by the profile; declared, to be handed
	// over by name, or by the rule of the program that read them.
	rules := map[string][]string{}
	if len(creds) > 0 {
		b.WriteString("# Credentials the programs read and were denied. Hand one over by name\n" +
			"# (envsieve run --secret NAME), broker it (brokered: [NAME] in the profile),\n" +
			"# or keep it from the agent: delete its line.\n" +
			"secrets:\n")
		for _, k := range creds {
			fmt.Fprintf(&b, "  %s: {}   # read %s and dropped%s\n", k, times(s.read[k]), by(s.readBy[k]))
			for _, p := range s.readBy[k] {
				if p != "" {
					rules[p] = append(rules[p], k)
				}
			}
		}
	}
	if len(rules) > 0 {
		b.WriteString("# Rules: each program that read a credential gets it, and only it.\n" +
			"rules:\n")
		progs := slices.Sorted(func(yield func(string) bool) {
			for p := range rules {
				if !yield(p) {
					return
				}
			}
		})
		for _, p := range progs {
			fmt.Fprintf(&b, "  - match: {path: %s}\n    allow: [%s]\n", quoteYAML(p), strings.Join(rules[p], ", "))
		}
	}
	var quiet []string
	for k := range s.dropped {
		if s.read[k] == 0 {
			quiet = append(quiet, k)
		}
	}
	if len(quiet) > 0 {
		sort.Strings(quiet)
		fmt.Fprintf(&b, "# Dropped at launch and never seen read (%d): %s\n", len(quiet), wrapComment(quiet))
	}
	if len(s.programs) > 0 {
		fmt.Fprintf(&b, "# Programs the log names: %s\n", wrapComment(quoteAll(s.programs)))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return fmt.Sprintf("%d times", n)
}

func by(progs []string) string {
	var named []string
	for _, p := range progs {
		if p != "" {
			named = append(named, p)
		}
	}
	if len(named) == 0 {
		return ""
	}
	return " by " + strings.Join(quoteAll(named), ", ")
}

// quoteYAML quotes s as a YAML double-quoted scalar (JSON's escapes are
// YAML's).
func quoteYAML(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = s
		if !printable(s) || strings.ContainsAny(s, " #\"'") {
			out[i] = quoteYAML(s)
		}
	}
	return out
}

// wrapComment joins names into comment lines of about 76 characters.
func wrapComment(names []string) string {
	var b strings.Builder
	n := 0
	for i, s := range names {
		if i > 0 {
			b.WriteString(",")
			n++
			if n+len(s) > 70 {
				b.WriteString("\n#   ")
				n = 0
			} else {
				b.WriteString(" ")
			}
		}
		b.WriteString(s)
		n += len(s) + 1
	}
	return b.String()
}

func runInit(u *cli.UI, o *initOptions) error {
	f, err := os.Open(o.fromAudit)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	defer f.Close()
	s, err := readAudit(f)
	if err != nil {
		return fmt.Errorf("init: read %s: %w", o.fromAudit, err)
	}
	if s.skipped > 0 {
		u.Warnf("init: %s: skipped %d lines that are not whole JSON events", o.fromAudit, s.skipped)
	}
	if s.launches == 0 && len(s.read) == 0 && len(s.dropped) == 0 {
		return fmt.Errorf("init: %s holds no envsieve audit event (write one with envsieve run --audit LOG)", o.fromAudit)
	}
	out := starterPolicy(s, o.fromAudit, o.profile)
	// What init writes must be a policy envsieve loads.
	if _, err := policy.Parse("init", []byte(out)); err != nil {
		return fmt.Errorf("init: the starter policy does not load (a bug in init): %w", err)
	}
	if o.output == "" {
		_, err = io.WriteString(u.Out, out)
		return err
	}
	w, err := os.OpenFile(o.output, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("init: %w (init never overwrites a policy)", err)
	}
	if _, err := io.WriteString(w, out); err != nil {
		w.Close()
		return fmt.Errorf("init: write %s: %w", o.output, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("init: write %s: %w", o.output, err)
	}
	fmt.Fprintf(u.Err, "envsieve: wrote %s: review it, then envsieve check --policy %s\n", o.output, o.output)
	return nil
}
