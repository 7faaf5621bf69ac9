package main

import (
	"errors"
	"os"
	"path/filepath"
	"sort"

	"golang.org/x/term"

	"github.com/envsieve/envsieve/internal/detect"
	"github.com/envsieve/envsieve/internal/envknob"
	"github.com/envsieve/envsieve/launch"
	"github.com/envsieve/envsieve/redact"
	"github.com/envsieve/envsieve/secret"
)

// hidden returns the values to mask in the child's output: every value the
// policy withheld from the parent environment that is sensitive (by name or
// by value), and every injected secret. The first decisions of a result are
// the parent's entries, in order.
func (l *launchPlan) hidden() []redact.Secret {
	var out []redact.Secret
	seen := map[string]bool{}
	add := func(name, value string) {
		if value != "" && !seen[value] {
			seen[value] = true
			out = append(out, redact.Secret{Name: name, Value: []byte(value)})
		}
	}
	for i, kv := range l.parent {
		if i >= len(l.res.Decisions) {
			break
		}
		d := l.res.Decisions[i]
		if d.Kept || d.Key == "" {
			continue
		}
		_, val, _ := cutEnv(kv)
		_, byName := detect.SensitiveName(d.Key)
		_, byValue := detect.Value(val)
		if byName || byValue {
			add(d.Key, val)
		}
	}
	names := make([]string, 0, len(l.injected))
	for n := range l.injected {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		add(n, l.injected[n])
	}
	return out
}

func cutEnv(kv string) (string, string, bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// redactionSet compiles the values to hide under the install's key; nil when
// redaction is off or there is nothing to hide.
func (l *launchPlan) redactionSet(u *ui) (*redact.Set, error) {
	if !l.policy.Redact.Enabled {
		return nil, nil
	}
	hide := l.hidden()
	if len(hide) == 0 {
		return nil, nil
	}
	dir := envknob.DataDir()
	if dir == "" {
		return nil, errors.New("redaction: set HOME (or XDG_DATA_HOME) to an absolute path for the install key")
	}
	key, err := secret.InstallKey(filepath.Join(dir, "redact.key"))
	if err != nil {
		return nil, err
	}
	set, err := redact.Compile(key, hide, redact.Options{MinLen: l.policy.Redact.MinSecretLen})
	if err != nil {
		return nil, err
	}
	if skipped := set.Skipped(); len(skipped) > 0 {
		u.debugf("redaction: not masked, shorter than min_secret_len %d: %v", l.policy.Redact.MinSecretLen, skipped)
	}
	if set.Len() == 0 {
		return nil, nil
	}
	u.debugf("redaction: %d values, %d patterns", len(hide)-len(set.Skipped()), set.Len())
	return set, nil
}

// start runs the planned launch: in place (exec) when nothing needs the
// launcher afterwards, else as a resident, non-dumpable launcher that
// redacts the child's output and removes file-delivered secrets when the
// child exits. It returns only on failure or with the child's exit status.
func start(u *ui, l *launchPlan, path string, argv []string) error {
	set, err := l.redactionSet(u)
	if err != nil {
		l.cleanup()
		return err
	}
	if set == nil && l.files == nil {
		u.debugf("exec %s", path)
		return launch.Exec(path, argv, l.res.Env)
	}
	defer l.cleanup()
	if err := launch.MakeNonDumpable(); err != nil {
		return err
	}
	c := &launch.Cmd{Path: path, Args: argv, Env: l.res.Env}
	r := launch.Resident{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
	var outW, errW *redact.Writer
	if set != nil {
		outW, errW = redact.NewWriter(os.Stdout, set), redact.NewWriter(os.Stderr, set)
		r.Stdout, r.Stderr = outW, errW
		if term.IsTerminal(int(os.Stdout.Fd())) {
			r.PTY, r.TTY = true, os.Stdout
		}
	}
	u.debugf("resident launcher: redaction %v, pty %v, secret files %v", set != nil, r.PTY, l.files != nil)
	status, err := launch.Supervise(c, r)
	if outW != nil {
		outW.Close()
		errW.Close()
	}
	if err != nil {
		return err
	}
	if status != 0 {
		return exitStatus(status)
	}
	return nil
}
