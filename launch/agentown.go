package launch

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/envsieve/envsieve/seal"
)

// The agents' state dirs the user moved with their own variable
// (CLAUDE_CONFIG_DIR, CODEX_HOME, GEMINI_CLI_HOME), and a view holding
// several fakes (the agent's login and its MCP servers' token files):
// docs/design.md section 9.6, "The agents' own logins in a launch".

// agentStateDir returns the state dir the agent av of this launch's tree
// reads: the directory its variable names in the tree's environment (the
// user's, passed by the profile), else in the launcher's (the view's
// variable then names it for the tree all the same), else HOME/av.dir;
// and whether it is the user's own. A relative value is taken from the
// launcher's working directory.
func (l *Plan) agentStateDir(av agentView) (string, bool) {
	env := l.Env
	if l.logins != nil && l.logins.viewVars[av.env] != "" && envValueIn(env, av.env) == l.logins.viewVars[av.env] {
		env = nil // this launch's own view, set for the tree once the broker started
	}
	return agentStateDirIn(l.host.Home, av, env, l.opt.Parent)
}

func agentStateDirIn(home string, av agentView, envs ...[]string) (string, bool) {
	for _, env := range envs {
		if v := envValueIn(env, av.env); v != "" {
			dir, err := filepath.Abs(v)
			if err != nil {
				continue
			}
			if av.home {
				dir = filepath.Join(dir, av.dir)
			}
			return dir, true
		}
	}
	return filepath.Join(home, av.dir), false
}

// ownStateDirs returns the user's own state dirs of the agents whose
// default state dir this launch's tree writes: each stands in for the
// default one, and is a write place of the launch as it would be. A
// directory that would open what the seal base keeps is left out (its
// login stays masked there, and the tree cannot write it): HOME or one
// above it, one above a masked or read-only path (~/.config, ~/.local)
// but the agent's own files in it, or one holding a directory of PATH
// (the tree would plant programs the user runs later).
func (l *Plan) ownStateDirs(base seal.Spec) []string {
	own := l.ownStateDirLogins()
	var out []string
	for _, av := range agentViews {
		dir, isOwn := l.agentStateDir(av)
		if !isOwn || slices.Contains(out, dir) || !l.writesStateDir(filepath.Join(l.host.Home, av.dir)) {
			continue
		}
		if reason := l.opensSeal(dir, base, own); reason != "" {
			l.host.warnf("seal: %s (%s) %s: the tree cannot write it, and the agent's login there stays masked", av.env, dir, reason)
			continue
		}
		out = append(out, dir)
	}
	slices.Sort(out)
	return out
}

// opensSeal says why making dir a write place would open what the seal
// base keeps, or "". The agent's own login files in dir and the locks of
// views there (masked to hold dir: agentviews.go) open nothing.
func (l *Plan) opensSeal(dir string, base seal.Spec, own []string) string {
	home := filepath.Clean(l.host.Home)
	if atOrIn(home, []string{dir}) {
		return "is HOME or above it"
	}
	for _, p := range append(slices.Clone(base.Mask), base.ReadOnly...) {
		if p = filepath.Clean(p); p != dir && atOrIn(p, []string{dir}) && !(filepath.Dir(p) == dir && (slices.Contains(own, p) || isViewLock(filepath.Base(p)))) {
			return "holds a sealed path"
		}
	}
	for _, env := range [][]string{l.Env, l.opt.Parent} {
		for _, p := range filepath.SplitList(envValueIn(env, "PATH")) {
			if p != "" && filepath.IsAbs(p) && atOrIn(filepath.Clean(p), []string{dir}) {
				return "holds a directory of PATH"
			}
		}
	}
	return ""
}

// viewOf returns the view of the state dir state among views, or nil.
func viewOf(views []*loginView, state string) *loginView {
	for _, v := range views {
		if v.state == state {
			return v
		}
	}
	return nil
}

// addFake puts the fake file data under name in v, in place of the
// link or copy made for the real file there: a second login file of the
// agent's (its MCP servers' tokens), which the tree may rewrite and which
// never moves back (the broker writes the real one).
func (v *loginView) addFake(name string, data []byte) error {
	p := filepath.Join(v.dir, name)
	if err := os.Remove(p); err != nil && !os.IsNotExist(err) {
		return err
	}
	delete(v.links, name)
	delete(v.seen, name)
	delete(v.copies, name)
	v.fakes = append(v.fakes, name)
	return os.WriteFile(p, data, 0o600)
}

// agentDefaultMoved says, for explain, what the tree sees of the agent's
// file p at its default place when the user's variable moved the state
// dir: masked, if it exists (the agent does not read it).
func agentDefaultMoved(p string, av agentView) (LoginState, bool) {
	if _, err := os.Lstat(p); err != nil {
		return LoginState{}, false
	}
	return LoginState{Path: p, Seen: "masked", Why: av.env + " names another state dir: the agent reads its login there"}, true
}

// isViewLock reports whether name is the name of a view's lock.
func isViewLock(name string) bool {
	return strings.HasPrefix(name, viewPrefix) && strings.HasSuffix(name, lockSuffix)
}
