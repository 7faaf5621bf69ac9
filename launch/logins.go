package launch

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/envsieve/envsieve/internal/fake"
	"github.com/envsieve/envsieve/internal/login"
	"github.com/envsieve/envsieve/policy"
	"github.com/envsieve/envsieve/seal"
)

// LoginFile is a credential file of HOME whose sealed view is a fake
// (docs/design.md section 9.5, "Logins as fakes"): the broker re-reads it when it changes, so
// that a new login of the user's reaches the broker (LoginReloader).
type LoginFile struct {
	// Path is the real file's absolute path.
	Path string `json:"path"`
	// Format is its login.Format's name.
	Format string `json:"format"`
	// Names are the names of its credentials among the brokered secrets.
	Names []string `json:"names"`
	// Renews are, by the name of each refresh token of the file, the
	// secrets its token endpoint's response renews (login.Cred.Renews):
	// the broker's binding of that name gets them, and the refresh is
	// written back to the file (WriteBack).
	Renews map[string]map[string]string `json:"renews,omitempty"`
}

// LoginState is what the sealed tree sees of one credential file that
// package login understands, for explain and the debug output.
type LoginState struct {
	Path   string `json:"path"`
	Format string `json:"format"`
	// Seen is "fake", "masked" (Why says why: the file could not be
	// understood, no broker can run, or the seal cannot show other
	// content there, and what serves the fake then), or "passed" (the
	// launch is not sealed: the tree reads the real file).
	Seen string `json:"seen"`
	Why  string `json:"why,omitempty"`
	// Hosts are the hosts its fakes are bound to.
	Hosts []string `json:"hosts,omitempty"`
	// AWS are the AWS profiles faked in it, each with the hosts it is
	// re-signed for (a fake ~/.aws/credentials).
	AWS []AWSState `json:"aws,omitempty"`
}

// LoginPreview says, for explain, what a launch's tree would see of each
// credential file under home that package login understands: sealed or
// not, by which mechanism, whether a broker could run, and whether the
// launch is nested (it then passes the outer seal's view: outer.go). An
// agent's files are listed where the agent reads them: in the state dir
// its variable names in env (the tree's environment), if it does. It
// reads and parses the files, and writes nothing.
func LoginPreview(home string, env []string, sealed bool, by seal.Mechanism, broker, nested bool) []LoginState {
	var out []LoginState
	if home == "" {
		return nil
	}
	anyFake := func(_, real string) string { return strings.Repeat("x", len(real)) }
	for _, f := range login.Formats() {
		for _, rel := range f.Paths {
			p := filepath.Join(home, rel)
			if av, ok := agentViews[f.Name]; ok {
				if dir, own := agentStateDirIn(home, av, env); own {
					if st, ok := agentDefaultMoved(p, av); ok && sealed {
						st.Format = f.Name
						out = append(out, st)
					}
					p = filepath.Join(dir, filepath.Base(rel))
				}
			}
			userSet := false
			if f.Name == "aws-credentials" {
				// The file the user's AWS_SHARED_CREDENTIALS_FILE names,
				// faked in its place (fakeLogins).
				if u := awsCredentialsPath(home, os.Environ()); u != p {
					p, userSet = u, true
				}
			}
			real, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				continue
			}
			st := LoginState{Path: p, Format: f.Name, Seen: "masked"}
			if seen, why, ok := outerView(nested && sealed && slices.Contains(seal.CredentialFiles(), rel), p, err); ok {
				st.Seen, st.Why = seen, why
				out = append(out, st)
				continue
			}
			var creds []login.Cred
			if err == nil {
				_, creds, err = f.Fake(real, anyFake)
			}
			if err == nil && len(creds) == 0 {
				err = errors.New("no credential in it")
			}
			for _, c := range creds {
				for _, h := range c.Hosts {
					if !slices.Contains(st.Hosts, h) { // each AWS profile's are AWS's
						st.Hosts = append(st.Hosts, h)
					}
				}
			}
			_, agent := agentViews[f.Name]
			switch v, hasVar := toolVars[f.Name]; {
			case !sealed:
				st.Seen, st.Hosts = "passed", nil
			case !agent && !userSet && !slices.Contains(seal.CredentialFiles(), rel):
				st.Seen, st.Why, st.Hosts = "passed", "not on the seal's list", nil
			case err != nil:
				st.Why, st.Hosts = err.Error(), nil
			case !broker:
				st.Why, st.Hosts = "no broker can run", nil
			case agent:
				st.Seen, st.Why = "fake", agentWhy(f.Name)
			case by == seal.Namespaces:
				st.Seen = "fake"
			case hasVar:
				st.Seen, st.Why = "fake", "Landlock masks the file; "+v.name+" names the fake"
			case f.Name == "git-credentials":
				st.Why = "Landlock masks the file; git's credential helper answers the fake"
			default:
				st.Why = "Landlock cannot show a fake at the path"
			}
			if st.Seen == "fake" {
				st.AWS = awsStates(creds, home)
			}
			out = append(out, st)
		}
	}
	return out
}

// loginFakes are a launch's fake credential files.
type loginFakes struct {
	// dir holds the fake files (outside HOME; removed at the end).
	dir string
	// fake maps a real file to its fake.
	fake  map[string]string
	files []LoginFile
	creds []login.Cred
	// names holds the credentials' names, which are not variables of
	// the child's environment.
	names  map[string]bool
	states []LoginState
	// vars name the fakes for the tools that take their file's place from
	// a variable (toolVars): the tree reads them there when a Landlock
	// seal masks the file itself.
	vars map[string]string
	// outer is set when a nested launch found the outer seal's view at a
	// file (outer.go): its tree keeps the outer broker's variables
	// (outerEnv). passed are those files that show the outer fake: the
	// seal leaves them as they are.
	outer  bool
	passed []string
	// env is what the tree keeps of the outer broker's (outerEnv), set
	// by StartBroker when outer.
	env map[string]string
	// views are the per-launch views of the agents' state dirs
	// (agentviews.go); viewVars their variables (in vars too), which the
	// tree gets even when no broker runs.
	views    []*loginView
	viewVars map[string]string
	// aws are the profiles of ~/.aws/config whose keys the broker
	// fetches, masks the files faked beyond the seal's list
	// (fakeAWSConfig).
	aws   []AWSLogin
	masks []string
	// envSet are variables the tree gets in place of envDrop, which it
	// does not (fakeAWSWebIdentityEnv).
	envSet  map[string]string
	envDrop []string
	// userSet are the variables of vars the user's environment set to
	// the real file that was faked: the tree's copy names the fake, even
	// where its environment holds the user's value (toolEnv).
	userSet map[string]bool
}

// userVar marks name, when the user's environment (parent) sets it, as
// naming a file lf faked (see userSet).
func (lf *loginFakes) userVar(parent []string, name string) {
	if !slices.ContainsFunc(parent, func(kv string) bool { return strings.HasPrefix(kv, name+"=") && len(kv) > len(name)+1 }) {
		return
	}
	if lf.userSet == nil {
		lf.userSet = map[string]bool{}
	}
	lf.userSet[name] = true
}

// toolVars are the variables that name a faked file's place, by format:
// the file itself, or (dir) a directory that holds it under its own
// name, the real directory's other entries linked beside it. A tool with
// none (git's store: its helper, gitHelperEnv) finds its fake only at
// the real path, which a Landlock seal masks.
var toolVars = map[string]struct {
	name string
	dir  bool
}{
	"npmrc":           {"NPM_CONFIG_USERCONFIG", false},
	"gh-hosts":        {"GH_CONFIG_DIR", true},
	"docker-config":   {"DOCKER_CONFIG", true},
	"aws-credentials": {"AWS_SHARED_CREDENTIALS_FILE", false},
}

// fakeLogins reads each credential file of HOME that package login
// understands and writes its fake in a private directory (once; nil when
// the launch is not sealed or has no HOME; only the agents' views, with
// no login in them, when no broker can run: then the files stay masked). A file that cannot be read or understood stays
// masked, and the debug output says why (never a value).
func (l *Plan) fakeLogins() (*loginFakes, error) {
	if l.logins != nil || !l.sealed || l.host.Home == "" {
		return l.logins, nil
	}
	if l.opt.NoBroker || l.host.Broker == nil {
		// No fakes: every login stays masked. The agents still work in
		// views of their state dirs, holding no login, so that a login
		// the user makes outside during the session does not show in the
		// tree either (the view's lock holds the state dir).
		lf := &loginFakes{fake: map[string]string{}, names: map[string]bool{}, vars: map[string]string{}, viewVars: map[string]string{}}
		for _, f := range login.Formats() {
			if _, ok := agentViews[f.Name]; ok {
				for _, rel := range f.Paths {
					l.fakeAgentLogin(lf, f, rel, nil)
				}
			}
		}
		l.logins = lf
		return lf, nil
	}
	lf := &loginFakes{fake: map[string]string{}, names: map[string]bool{}, vars: map[string]string{}, viewVars: map[string]string{}}
	// The key of the fakes is read at the first fake: a HOME whose login
	// files hold no credential needs none. Where it cannot be read, the
	// launch fails (keyFailed, after each step that may have faked).
	var key []byte
	var keyErr error
	faker := func(name, real string) string {
		if key == nil && keyErr == nil {
			key, keyErr = l.key()
		}
		if keyErr != nil {
			return ""
		}
		return fake.Of(key, name, real)
	}
	keyFailed := func() error {
		if keyErr == nil {
			return nil
		}
		os.RemoveAll(lf.dir)
		return fmt.Errorf("login fakes: %w", keyErr)
	}
	masked := seal.CredentialFiles()
	for _, f := range login.Formats() {
		for _, rel := range f.Paths {
			if _, ok := agentViews[f.Name]; ok {
				// An agent's own login, in its state dir: a fake in a
				// view of that dir (agentviews.go).
				l.fakeAgentLogin(lf, f, rel, faker)
				if err := keyFailed(); err != nil {
					return nil, err
				}
				continue
			}
			p := filepath.Join(l.host.Home, rel)
			userSet := false
			if f.Name == "aws-credentials" {
				// The file the user's AWS_SHARED_CREDENTIALS_FILE names,
				// where it does: what the user's aws reads, faked and
				// masked the same way (~/.aws/credentials stays masked).
				if u := awsCredentialsPath(l.host.Home, l.opt.Parent); u != p {
					p, userSet = u, true
				}
			}
			if !slices.Contains(masked, rel) && !userSet {
				// Only a file the seal masks is shown as a fake.
				l.host.debugf("login: ~/%s is not on the seal's list: not faked", rel)
				continue
			}
			real, err := os.ReadFile(p)
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				continue
			}
			st := LoginState{Path: p, Format: f.Name, Seen: "masked"}
			if seen, why, ok := outerView(l.host.Nested != "", p, err); ok {
				// The outer seal's view (outer.go): no fake, no broker.
				st.Seen, st.Why = seen, why
				if seen == "passed" {
					lf.passed = append(lf.passed, p)
				}
				lf.outer = true
				l.host.debugf("login: %s passes as the outer seal shows it (%s)", p, st.Why)
				lf.states = append(lf.states, st)
				continue
			}
			var out []byte
			var creds []login.Cred
			if err == nil {
				out, creds, err = f.Fake(real, faker)
			}
			if kerr := keyFailed(); kerr != nil {
				return nil, kerr
			}
			if err == nil && len(creds) == 0 {
				err = errors.New("no credential in it")
			}
			if err != nil {
				st.Why = err.Error()
				l.host.debugf("login: %s stays masked: %v", p, err)
				lf.states = append(lf.states, st)
				continue
			}
			if lf.dir == "" {
				// $XDG_RUNTIME_DIR (a tmpfs), else /tmp: where the tree
				// reads them too (git's helper, under Landlock), as it
				// reaches the shim's socket; not /dev/shm, which an
				// agent's own sandbox may replace.
				if lf.dir, err = os.MkdirTemp(l.host.socketDir(), loginsDirPrefix); err != nil {
					return nil, fmt.Errorf("login fakes: %w", err)
				}
			}
			dst := filepath.Join(lf.dir, strconv.Itoa(len(lf.files))+"-"+filepath.Base(p))
			if err := os.WriteFile(dst, out, 0o400); err != nil {
				os.RemoveAll(lf.dir)
				return nil, fmt.Errorf("login fakes: %w", err)
			}
			if v, ok := toolVars[f.Name]; ok {
				if err := lf.pointVar(v.name, v.dir, p, dst); err != nil {
					os.RemoveAll(lf.dir)
					return nil, fmt.Errorf("login fakes: %w", err)
				}
			}
			lf.fake[p] = dst
			if userSet {
				lf.masks = append(lf.masks, p)
				lf.userVar(l.opt.Parent, "AWS_SHARED_CREDENTIALS_FILE")
			}
			lf.add(LoginFile{Path: p, Format: f.Name}, creds, st)
		}
	}
	if err := l.fakeAWSConfig(lf, faker); err != nil {
		os.RemoveAll(lf.dir)
		return nil, err
	}
	if err := keyFailed(); err != nil {
		return nil, err
	}
	if err := l.fakeAWSWebIdentityEnv(lf, faker); err != nil {
		os.RemoveAll(lf.dir)
		return nil, err
	}
	if err := keyFailed(); err != nil {
		return nil, err
	}
	if lf.dir != "" {
		// Neither the tree nor git's store helper (erase) changes them.
		if err := os.Chmod(lf.dir, 0o500); err != nil {
			os.RemoveAll(lf.dir)
			return nil, fmt.Errorf("login fakes: %w", err)
		}
	}
	l.logins = lf
	return lf, nil
}

// add records the fake file of file's real one, holding creds, as st.
func (lf *loginFakes) add(file LoginFile, creds []login.Cred, st LoginState) {
	for _, c := range creds {
		file.Names = append(file.Names, c.Name)
		if len(c.Renews) > 0 {
			if file.Renews == nil {
				file.Renews = map[string]map[string]string{}
			}
			file.Renews[c.Name] = c.Renews
		}
		lf.names[c.Name] = true
		st.Hosts = append(st.Hosts, c.Hosts...)
	}
	st.Seen = "fake"
	lf.files = append(lf.files, file)
	lf.creds = append(lf.creds, creds...)
	lf.states = append(lf.states, st)
}

// pointVar sets the variable name to the fake dst of the real file p: dst
// itself, or for a directory variable a directory in lf.dir holding a copy
// of dst under p's name and a link to each other entry of p's directory.
func (lf *loginFakes) pointVar(name string, dir bool, p, dst string) error {
	if !dir {
		lf.vars[name] = dst
		return nil
	}
	d := filepath.Join(lf.dir, name)
	if err := os.Mkdir(d, 0o700); err != nil {
		return err
	}
	data, err := os.ReadFile(dst)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(d, filepath.Base(p)), data, 0o400); err != nil {
		return err
	}
	entries, _ := os.ReadDir(filepath.Dir(p)) // what cannot be listed is not linked
	for _, e := range entries {
		if e.Name() != filepath.Base(p) {
			if err := os.Symlink(filepath.Join(filepath.Dir(p), e.Name()), filepath.Join(d, e.Name())); err != nil {
				return err
			}
		}
	}
	lf.vars[name] = d
	return nil
}

// toolEnv returns the variables of toolVars for the tree, but for those
// the user's environment (parent) or the tree's (env) already sets: a
// tool told elsewhere does not read the file at the real path anyway.
// A variable the user set to the very file faked (userSet) names the
// fake all the same, and an agent's view is of the state dir the user's
// variable names, if it does (agentStateDir): its variable is always set.
func (lf *loginFakes) toolEnv(parent, env []string) map[string]string {
	out := map[string]string{}
	for k, v := range lf.vars {
		set := func(kv string) bool { return strings.HasPrefix(kv, k+"=") }
		if lf.userSet[k] || lf.viewVars[k] == v || !slices.ContainsFunc(parent, set) && !slices.ContainsFunc(env, set) {
			out[k] = v
		}
	}
	return out
}

// removeLogins removes the fake files, and the views of the agents' state
// dirs once what the tree made there moved into them (syncBack).
func (l *Plan) removeLogins() {
	if l.logins != nil {
		for _, v := range l.logins.views {
			if left := v.syncBack(); len(left) > 0 {
				l.host.debugf("login: %s: changed outside meanwhile, the tree's left out: %s", v.state, strings.Join(left, ", "))
			}
		}
		l.logins.views = nil
	}
	if l.logins != nil && l.logins.dir != "" {
		os.Chmod(l.logins.dir, 0o700)
		os.RemoveAll(l.logins.dir)
		l.logins.dir = ""
	}
}

// loginStates returns what the sealed tree sees of each credential file
// package login understands (fake or masked, and the hosts bound), once
// the broker started; nil before, or when the launch fakes none.
func (l *Plan) loginStates() []LoginState {
	if l.logins == nil {
		return nil
	}
	return l.logins.states
}

// addLogins adds the fake files' credentials to a broker request: their
// real values, and a binding for each from the file (its hosts, places
// and paths).
func (lf *loginFakes) addLogins(req *BrokerRequest) {
	for _, c := range lf.creds {
		req.Secrets[c.Name] = c.Real
		req.Bindings = append(req.Bindings, &policy.Binding{Name: c.Name, Hosts: c.Hosts, In: c.In, Paths: c.Paths})
	}
	req.Logins = lf.files
}

// gitHelperEnv returns the variables that make git in the tree answer
// https credentials from the fake git credential store with no file of
// its own (docs/design.md section 9.5, "Logins as fakes"): credential.URL.helper for each
// URL a faked git credential store names, through GIT_CONFIG_COUNT,
// GIT_CONFIG_KEY_n and GIT_CONFIG_VALUE_n, after any the environment env
// holds. Nil when there is none, or env's GIT_CONFIG_COUNT is not a
// count (git would refuse it, and envsieve does not guess).
func (lf *loginFakes) gitHelperEnv(env []string) map[string]string {
	type helper struct{ url, file string }
	var hs []helper
	for _, f := range lf.files {
		if f.Format != "git-credentials" {
			continue
		}
		for _, n := range f.Names {
			u, ok := strings.CutPrefix(n, "git-credentials:")
			if !ok || strings.Contains(u, "#") || strings.ContainsAny(lf.fake[f.Path], " \t\n\"'\\") {
				continue // a later line of one host, never used; a path git's helper parsing would split
			}
			hs = append(hs, helper{u, lf.fake[f.Path]})
		}
	}
	if len(hs) == 0 {
		return nil
	}
	sort.SliceStable(hs, func(i, j int) bool { return hs[i].url < hs[j].url })
	n := 0
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "GIT_CONFIG_COUNT="); ok {
			c, err := strconv.Atoi(v)
			if err != nil || c < 0 || strconv.Itoa(c) != v {
				return nil
			}
			n = c
		}
	}
	out := map[string]string{}
	seen := map[string]bool{}
	for _, h := range hs {
		if seen[h.url] {
			continue // the first file git would read wins, as in git
		}
		seen[h.url] = true
		// It answers; it never stores or erases (the fake file is
		// read-only, and git would wait a second for its lock).
		out["GIT_CONFIG_KEY_"+strconv.Itoa(n)] = "credential." + h.url + ".helper"
		out["GIT_CONFIG_VALUE_"+strconv.Itoa(n)] = `!f() { test "$1" = get && exec git credential-store --file=` + h.file + ` get; }; f`
		n++
	}
	// The user's own store helper cannot lock a file in the read-only
	// HOME: it gives up at once, rather than after a second each time.
	out["GIT_CONFIG_KEY_"+strconv.Itoa(n)] = "credentialstore.locktimeoutms"
	out["GIT_CONFIG_VALUE_"+strconv.Itoa(n)] = "0"
	n++
	out["GIT_CONFIG_COUNT"] = strconv.Itoa(n)
	return out
}

// LoginReloader returns the broker's hook (broker.Config.Reload) for the
// fake files' credentials: asked for a credential's real value before its
// fake is swapped, it stats the real file, and re-reads and parses it when
// it changed (another inode, size, mtime or ctime: a new login in the
// user's terminal, replaced by rename or rewritten). It answers the value
// and true, or false when it has nothing newer to say (the file is gone,
// cannot be read or understood now, or no longer holds the credential):
// the broker then keeps the value it has.
func LoginReloader(files []LoginFile) func(name string) (string, bool) {
	type state struct {
		file  LoginFile
		f     login.Format
		stamp [5]int64
		vals  map[string]string
		ok    bool
	}
	byName := map[string]*state{}
	for _, lf := range files {
		var f login.Format
		found := false
		for _, c := range login.Formats() {
			if c.Name == lf.Format {
				f, found = c, true
			}
		}
		if !found {
			continue
		}
		s := &state{file: lf, f: f}
		for _, n := range lf.Names {
			byName[n] = s
		}
	}
	var mu sync.Mutex
	anyFake := func(_, real string) string { return strings.Repeat("x", len(real)) }
	return func(name string) (string, bool) {
		s := byName[name]
		if s == nil {
			return "", false
		}
		mu.Lock()
		defer mu.Unlock()
		stamp, err := fileStamp(s.file.Path)
		if err != nil {
			return "", false
		}
		if !s.ok || stamp != s.stamp {
			real, err := os.ReadFile(s.file.Path)
			if err != nil {
				return "", false
			}
			_, creds, err := s.f.Fake(real, anyFake)
			if err != nil {
				return "", false
			}
			s.vals = map[string]string{}
			for _, c := range creds {
				s.vals[c.Name] = c.Real
			}
			s.stamp, s.ok = stamp, true
		}
		v, ok := s.vals[name]
		return v, ok && v != ""
	}
}
