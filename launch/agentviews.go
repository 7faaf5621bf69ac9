package launch

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/envsieve/envsieve/internal/login"
	"github.com/envsieve/envsieve/seal"
)

// The agents' own logins (docs/design.md section 9.6, docs/agents.md
// "Logins"): Claude Code's ~/.claude/.credentials.json, Codex's
// ~/.codex/auth.json, Gemini CLI's ~/.gemini/oauth_creds.json lie in the
// agent's state dir, which the tree writes, and which the agent outside
// envsieve rewrites (by rename) at the same time. A mount over the file
// alone is undone when the file is renamed over outside, and Landlock
// cannot deny a file in a directory it grants; so the seal masks the
// real file by holding the state dir's top level (seal.Default's agent login files:
// a namespace seal's held copy, Landlock's grants entry by entry), and
// the agent works in a per-launch view of its state dir instead, named
// by its own variable: a directory inside the state dir holding the fake
// login file (a regular file the agent may rewrite when it refreshes),
// a copy of each other small file of the state dir, and a link to each
// other entry (what the agent writes beneath them stays where it is).
// A view is made with no login in it too (an agent used with an API
// key). Beside it lies its lock, held by the launcher while it lives and
// masked by the seal, which then holds the state dir by both mechanisms:
// a login made outside during the session does not show in the tree. At
// the end of the launch, what the agent made, replaced or deleted at the
// view's top level is done in the state dir (never to the login file:
// the broker writes the real one back), and the view is removed; a later
// launch removes the views whose lock no launcher holds (killed).

// agentView is how one agent's login file is shown: its state dir
// (relative to HOME), the variable that moves the agent's state dir, and
// whether the variable names a home the state dir's name lies in (Gemini
// CLI's GEMINI_CLI_HOME) rather than the state dir itself.
type agentView struct {
	dir, env string
	home     bool
	// homeFiles are files the agent keeps in HOME by default and in the
	// directory its variable names once set (Claude Code's .claude.json):
	// the view links each to its place in HOME, and what the tree makes
	// of it moves there at the end.
	homeFiles []string
}

// agentViews are the agents' login formats (package login) by name.
var agentViews = map[string]agentView{
	"claude-credentials": {dir: ".claude", env: "CLAUDE_CONFIG_DIR", homeFiles: []string{".claude.json"}},
	"codex-auth":         {dir: ".codex", env: "CODEX_HOME"},
	"gemini-oauth":       {dir: ".gemini", env: "GEMINI_CLI_HOME", home: true},
	// The MCP servers' OAuth tokens, faked in the same view (agentown.go).
	"codex-mcp-oauth":  {dir: ".codex", env: "CODEX_HOME"},
	"gemini-mcp-oauth": {dir: ".gemini", env: "GEMINI_CLI_HOME", home: true},
}

// viewPrefix begins the name of a launch's view in an agent's state dir;
// lockSuffix ends the name of its lock beside it (the view's name and
// lockSuffix), which its launcher holds (lockView) while it lives.
// Not ".lock": Claude Code takes its lock for a refresh by making the
// directory CLAUDE_CONFIG_DIR+".lock" (proper-lockfile), and takes a file
// there for another process holding it.
const (
	viewPrefix = ".envsieve-view-"
	lockSuffix = "-lock"
)

// loginView is a launch's view of one agent's state dir.
type loginView struct {
	// state is the real state dir; root the view's directory in it
	// (removed at the end); dir the agent's state dir in the view: root,
	// or root/<state's name> for a home variable.
	state, root, dir string
	// cred is the login file's name; fakes the other fake files' (addFake).
	cred  string
	fakes []string
	// links are the links made in dir, by name, to their targets (an
	// entry of state, or of HOME: agentView.homeFiles); seen the targets
	// as they were when they were linked.
	links map[string]string
	seen  map[string]fs.FileInfo
	// copies are the entries copied rather than linked, as written.
	copies map[string]fs.FileInfo
	// dirInfo is dir as it was made: the tree may replace a dir below
	// root (a link to another directory, whose entries would then move).
	dirInfo fs.FileInfo
	// lock is the view's lock file beside root, held open (and locked)
	// in lockF while the launcher lives: a later launch takes a view
	// whose lock it can take for one left by a launcher that was killed
	// (cleanStaleViews). The seal masks it, so that the state dir is
	// held by both mechanisms (a login made there during the session
	// does not show in the tree).
	lock  string
	lockF *os.File
}

// viewCopyMax is the largest file of a state dir that its view copies
// rather than links (agents append to their larger ones, a history, in
// place).
const viewCopyMax = 1 << 20

// copyRegular copies the regular file from (not followed) to the new file
// to, and returns what it wrote.
func copyRegular(from, to string, perm fs.FileMode) (fs.FileInfo, error) {
	f, err := os.OpenFile(from, os.O_RDONLY|openNoFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	b, err := io.ReadAll(io.LimitReader(f, viewCopyMax+1))
	if err != nil || len(b) > viewCopyMax {
		return nil, errors.New("cannot be copied")
	}
	w, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(b); err != nil {
		w.Close()
		os.Remove(to)
		return nil, err
	}
	if err := w.Close(); err != nil {
		os.Remove(to)
		return nil, err
	}
	return os.Lstat(to)
}

// writesStateDir reports whether the sealed tree of this launch writes
// the state dir dir (absolute): the profile's state_dirs or the policy's
// seal.write name it or a directory above it.
func (l *Plan) writesStateDir(dir string) bool {
	var named []string
	if l.opt.Policy != nil {
		if plan, err := l.opt.Policy.Effective(l.Result.Profile); err == nil {
			for _, d := range plan.StateDirs {
				named = append(named, filepath.Join(l.host.Home, strings.TrimPrefix(d, "~/")))
			}
		}
	}
	for _, w := range l.Result.SealWrite {
		if p, err := l.host.expandHome(w); err == nil {
			named = append(named, p)
		}
	}
	return atOrIn(filepath.Clean(dir), named)
}

// ownStateDirLogins returns the agents' login and token files in the
// state dirs the user's own variables name (CLAUDE_CONFIG_DIR, CODEX_HOME,
// GEMINI_CLI_HOME, set in the launcher's environment or the tree's): the
// agent keeps its login there, not at the default path, so the seal masks
// them too (never this launch's own view, which the tree's variable names
// then). They are not faked (no view): the agent in the tree that reads
// its login there is not logged in. A relative value is taken from the
// launcher's working directory.
func (l *Plan) ownStateDirLogins() []string {
	var out []string
	for _, av := range agentViews {
		for _, env := range [][]string{l.opt.Parent, l.Env} {
			v := envValueIn(env, av.env)
			if v == "" || (l.logins != nil && l.logins.viewVars[av.env] == v) { // this launch's own view
				continue
			}
			dir, err := filepath.Abs(v)
			if err != nil {
				continue
			}
			if av.home {
				dir = filepath.Join(dir, av.dir)
			}
			for _, p := range seal.AgentLogins(av.dir, dir) {
				if !slices.Contains(out, p) {
					out = append(out, p)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// envValueIn returns the value of the last name=value of env.
func envValueIn(env []string, name string) string {
	v := ""
	for _, kv := range env {
		if rest, ok := strings.CutPrefix(kv, name+"="); ok {
			v = rest
		}
	}
	return v
}

// makeView makes the view of state for the agent av, holding fake (nil:
// none, the agent has no login in the tree) under the name cred. A file
// at or in one of masks (the seal's) is linked, never copied: the copy
// would not be masked.
func makeView(av agentView, state, cred string, fake []byte, masks []string) (v *loginView, err error) {
	cleanStaleViews(state)
	lockF, err := newViewLock(state)
	if err != nil {
		return nil, err
	}
	root := strings.TrimSuffix(lockF.Name(), lockSuffix)
	if err := os.Mkdir(root, 0o700); err != nil {
		os.Remove(lockF.Name())
		lockF.Close()
		return nil, err
	}
	v = &loginView{state: state, root: root, dir: root, cred: cred, links: map[string]string{}, seen: map[string]fs.FileInfo{}, copies: map[string]fs.FileInfo{},
		lock: lockF.Name(), lockF: lockF}
	defer func() {
		if err != nil {
			v.remove()
		}
	}()
	if av.home {
		v.dir = filepath.Join(root, filepath.Base(state))
		if err := os.Mkdir(v.dir, 0o700); err != nil {
			return nil, err
		}
	}
	ents, err := os.ReadDir(state)
	if err != nil {
		return nil, err
	}
	targets := map[string]string{}
	for _, e := range ents {
		if name := e.Name(); name != cred && !strings.HasPrefix(name, viewPrefix) { // nor their locks
			targets[name] = filepath.Join(state, name) // not the login, nor the views of launches (this one's too)
		}
	}
	for _, name := range av.homeFiles {
		if _, ok := targets[name]; !ok { // the state dir's own wins, as in the agent
			targets[name] = filepath.Join(filepath.Dir(state), name)
		}
	}
	for name, target := range targets {
		fi, err := os.Lstat(target)
		if err == nil {
			v.seen[name] = fi
		}
		v.links[name] = target
		if err == nil && fi.Mode().IsRegular() && fi.Size() <= viewCopyMax && !atOrIn(target, masks) {
			// A copy: the agents replace their small files by a temporary
			// file beside the link's target, in the held state dir or the
			// read-only HOME, where it cannot be made.
			if c, err := copyRegular(target, filepath.Join(v.dir, name), fi.Mode().Perm()); err == nil {
				v.copies[name] = c
				continue
			}
		}
		if err := os.Symlink(target, filepath.Join(v.dir, name)); err != nil {
			return nil, err
		}
	}
	if fake != nil {
		if err := os.WriteFile(filepath.Join(v.dir, cred), fake, 0o600); err != nil {
			return nil, err
		}
	}
	if v.dirInfo, err = os.Lstat(v.dir); err != nil {
		return nil, err
	}
	return v, nil
}

// remove removes the view and its lock, and lets the lock go.
func (v *loginView) remove() {
	os.RemoveAll(v.root) // not followed: a link in it is removed, not its target
	os.Remove(v.lock)
	v.lockF.Close()
}

// newViewLock makes a new view's lock file in state and takes it (the
// view's name is its own without lockSuffix). The lock is made before
// the view, and checked to be still in place once taken: a later launch
// that took it between (for a stale one) removed it.
func newViewLock(state string) (*os.File, error) {
	for range 8 {
		f, err := os.CreateTemp(state, viewPrefix+"*"+lockSuffix)
		if err != nil {
			return nil, err
		}
		err = lockView(f)
		if err == nil && sameOpen(f) {
			return f, nil
		}
		f.Close() // taken by another launch for a stale one, which removes it
		if err != nil && !errors.Is(err, syscall.EWOULDBLOCK) {
			os.Remove(f.Name())
			return nil, fmt.Errorf("lock the view: %w", err)
		}
	}
	return nil, errors.New("lock the view: taken or removed as soon as made")
}

// sameOpen reports whether the open file f is still the file at its name.
func sameOpen(f *os.File) bool {
	a, err1 := f.Stat()
	b, err2 := os.Lstat(f.Name())
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// cleanStaleViews removes the views in state left by launchers that
// ended without removing them (killed): those whose lock no launcher
// holds. A view without a lock beside it (being made, or made by an
// envsieve before locks) is left as it is. Nothing is followed; the
// tree's work in a stale view is lost (what it would move back cannot be
// told from the user's own changes without the launcher's record).
func cleanStaleViews(state string) {
	ents, err := os.ReadDir(state)
	if err != nil {
		return
	}
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, viewPrefix) || !strings.HasSuffix(name, lockSuffix) || !e.Type().IsRegular() {
			continue
		}
		lock := filepath.Join(state, name)
		f, err := os.OpenFile(lock, os.O_RDONLY|openNoFollow, 0)
		if err != nil {
			continue
		}
		if lockView(f) == nil && sameOpen(f) {
			os.RemoveAll(strings.TrimSuffix(lock, lockSuffix))
			os.Remove(lock)
		}
		f.Close()
	}
}

// sameStamp reports whether a and b are the same file, not changed.
func sameStamp(a, b fs.FileInfo) bool {
	return os.SameFile(a, b) && a.ModTime().Equal(b.ModTime()) && a.Size() == b.Size() && a.Mode() == b.Mode()
}

// envValue is the value of the agent's variable for the view.
func (v *loginView) envValue() string { return v.root }

// syncBack moves what the tree made or replaced at the view's top level
// into the state dir, deletes there what it deleted (a file, never a
// directory), and removes the view. An entry is moved or deleted when the
// state dir's entry of that name is as it was when the view was made (or
// still absent): what the user's own agent wrote there meanwhile wins. The
// login file never moves (the real one is the broker's to write back), a
// link left as it was made is dropped, and nothing is followed: a link
// the tree made moves as a link. It returns the names left behind.
func (v *loginView) syncBack() []string {
	var left []string
	defer v.remove()
	if fi, err := os.Lstat(v.dir); err != nil || !fi.IsDir() || !os.SameFile(fi, v.dirInfo) {
		return []string{filepath.Base(v.dir)} // replaced by the tree: nothing of it moves
	}
	ents, err := os.ReadDir(v.dir)
	if err != nil {
		return []string{filepath.Base(v.dir)} // nothing can be told of it
	}
	present := map[string]bool{}
	for _, e := range ents {
		name := e.Name()
		present[name] = true
		if name == v.cred || slices.Contains(v.fakes, name) {
			continue
		}
		from := filepath.Join(v.dir, name)
		if c, ok := v.copies[name]; ok {
			if now, err := os.Lstat(from); err == nil && sameStamp(now, c) {
				continue // the copy, as it was made
			}
		} else if t, ok := v.links[name]; ok {
			if got, err := os.Readlink(from); err == nil && got == t {
				continue
			}
		}
		to := filepath.Join(v.state, name)
		if t, ok := v.links[name]; ok {
			to = t // where the agent keeps it outside (agentView.homeFiles)
		}
		now, err := os.Lstat(to)
		was, existed := v.seen[name]
		unchanged := errors.Is(err, fs.ErrNotExist) && !existed || err == nil && existed && sameStamp(now, was)
		if !unchanged {
			left = append(left, name)
			continue
		}
		if now != nil && now.IsDir() {
			// A directory is replaced only by another rename of the tree's
			// (the agent's own temp-and-rename of a file never is one).
			if fi, err := os.Lstat(from); err != nil || !fi.IsDir() {
				left = append(left, name)
				continue
			}
			if err := os.RemoveAll(to); err != nil {
				left = append(left, name)
				continue
			}
		}
		if err := os.Rename(from, to); err != nil {
			left = append(left, name)
		}
	}
	// What the tree deleted: a file (or link) of the state dir as it was
	// when the view was made is deleted there too; a directory never is
	// (the tree could only remove the link to it).
	for name, to := range v.links {
		was, existed := v.seen[name]
		if present[name] || !existed {
			continue
		}
		now, err := os.Lstat(to)
		switch {
		case errors.Is(err, fs.ErrNotExist): // gone outside too
		case err != nil || now.IsDir() || !sameStamp(now, was):
			left = append(left, name)
		default:
			if err := os.Remove(to); err != nil {
				left = append(left, name)
			}
		}
	}
	return left
}

// agentLogin shows the agent's login file p (of format name, real
// contents faked as out, or an error) in a view (agentViews), and
// returns the view, or why the file stays masked. The seal masks p
// whatever this returns (seal.Default's agent login files).
func (l *Plan) agentLogin(name, p string, fakeErr error, out []byte) (*loginView, error) {
	av := agentViews[name]
	state, _ := l.agentStateDir(av)
	switch {
	case filepath.Dir(p) != state:
		return nil, fmt.Errorf("not in the agent's state dir %s", state)
	case !l.writesStateDir(filepath.Join(l.host.Home, av.dir)):
		return nil, fmt.Errorf("~/%s is not a state dir of this launch", av.dir)
	}
	if fakeErr != nil {
		out = nil
	}
	if err := os.Mkdir(state, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("make ~/%s: %w", av.dir, err) // made for the tree anyway (writePlaces)
	}
	extra := make([]string, 0, len(l.Result.SealMask))
	for _, m := range l.Result.SealMask {
		if e, err := l.host.expandHome(m); err == nil {
			extra = append(extra, e)
		}
	}
	def := seal.Default(l.host.Home, l.host.ConfigDir, l.host.DataDir, extra)
	masks := append(def.Mask, l.ownStateDirLogins()...)
	if _, own := l.agentStateDir(av); own {
		if why := l.opensSeal(state, seal.Spec{Mask: masks, ReadOnly: def.ReadOnly}, l.ownStateDirLogins()); why != "" {
			return nil, fmt.Errorf("%s %s %s", av.env, state, why)
		}
	}
	v, err := makeView(av, state, filepath.Base(p), out, masks)
	if err != nil {
		return nil, fmt.Errorf("the view of %s: %w", state, err)
	}
	if fakeErr != nil {
		return v, fakeErr
	}
	return v, nil
}

// agentWhy says, for explain, where the agent reads its login's fake.
func agentWhy(name string) string {
	av := agentViews[name]
	return "the agent's own copy, in a per-launch view of its state dir (~/" + av.dir + ", or the user's " + av.env + ") that " + av.env + " names, when ~/" + av.dir + " is a state dir of the launch (else masked)"
}

// fakeAgentLogin fakes the agent's login file rel of format f, if it
// exists, in a view of its state dir (agentLogin), and records it in lf:
// a fake, or masked and why. With no faker (no broker can run) the view
// is made all the same, with no login in it.
func (l *Plan) fakeAgentLogin(lf *loginFakes, f login.Format, rel string, faker login.Faker) {
	state, _ := l.agentStateDir(agentViews[f.Name])
	p := filepath.Join(state, filepath.Base(rel)) // in the user's own state dir when its variable names one
	real, err := os.ReadFile(p)
	if errors.Is(err, syscall.ENOTDIR) {
		return
	}
	if errors.Is(err, fs.ErrNotExist) {
		// No login (an API key, or none yet): the agent works in a view
		// all the same, so that its state dir's top level and Claude
		// Code's ~/.claude.json stay writable, and the state dir is held
		// (the view's lock is masked): a login made outside during the
		// session does not show in the tree. One view a state dir: its
		// login or another token file of the agent may have made it.
		if viewOf(lf.views, state) != nil {
			return
		}
		if v, err := l.agentLogin(f.Name, p, nil, nil); err != nil {
			l.host.debugf("login: no view of ~/%s: %v", agentViews[f.Name].dir, err)
		} else {
			lf.addView(f.Name, v)
			l.host.debugf("login: %s does not exist: a view with none in %s", p, v.dir)
		}
		return
	}
	st := LoginState{Path: p, Format: f.Name, Seen: "masked"}
	var out []byte
	var creds []login.Cred
	if faker == nil {
		err = errors.New("no broker can run") // the view holds no login (fakeLogins)
	}
	if err == nil {
		out, creds, err = f.Fake(real, faker)
	}
	if err == nil && len(creds) == 0 {
		err = errors.New("no credential in it")
	}
	if v := viewOf(lf.views, state); v != nil {
		// The agent's view is made (its login, or another token file):
		// this fake joins it, or the file stays masked (linked there).
		if err == nil {
			err = v.addFake(filepath.Base(p), out)
		}
		if err != nil {
			st.Why = err.Error()
			l.host.warnf("login: %s stays masked in the sealed tree (%v)", p, err)
			lf.states = append(lf.states, st)
			return
		}
		st.Why = "the agent's own copy, in " + agentViews[f.Name].env + "'s view"
		lf.add(LoginFile{Path: p, Format: f.Name}, creds, st)
		return
	}
	v, err := l.agentLogin(f.Name, p, err, out)
	if v != nil {
		lf.addView(f.Name, v)
	}
	if err != nil {
		st.Why = err.Error()
		if v != nil {
			// The agent's launch, and its login is not shown: say so, or
			// the agent just asks for a login.
			l.host.warnf("login: %s stays masked in the sealed tree (%v): the agent there is not logged in by it", p, err)
		} else {
			l.host.debugf("login: %s stays masked: %v", p, err)
		}
		lf.states = append(lf.states, st)
		return
	}
	st.Why = "the agent's own copy, in " + agentViews[f.Name].env + "'s view"
	lf.add(LoginFile{Path: p, Format: f.Name}, creds, st)
	l.host.debugf("login: %s is a fake the agent may rewrite, in %s", p, v.dir)
}

// addView records the view v of the agent of format name: its variable
// for the tree, and its lock for the seal to mask.
func (lf *loginFakes) addView(name string, v *loginView) {
	lf.views = append(lf.views, v)
	lf.vars[agentViews[name].env] = v.envValue()
	lf.viewVars[agentViews[name].env] = v.envValue()
	lf.masks = append(lf.masks, v.lock)
}
