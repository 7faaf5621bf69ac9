package launch

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The outer seal's view (docs/design.md section 9.5, "Logins as fakes"): an agent runs
// `envsieve sh` per tool call inside a sealed `envsieve run`, so a nested
// sealed launch finds at each credential file what the outer seal shows
// there: the outer launch's fake (a namespace seal binds it over the
// file), or nothing it may read (Landlock masks it). Faking that again
// would start a second broker per tool call, chained behind the outer
// one, and protect nothing: the nested tree is part of the outer tree,
// which reads that view already. So a nested launch passes the outer
// seal's view as it is, and keeps the outer broker's variables (proxy,
// CA files, the variables that name the outer fakes, git's helper), so
// that its tree's requests still go through the outer broker.
//
// How it knows: the launch is nested (Host.Nested), and the file is a
// mount point in this mount namespace whose source is a file in an
// envsieve-logins- directory (the outer fake, outerFake), or reading it
// is refused (EACCES: masked by a Landlock seal, or not the user's to
// read; either way there is nothing to fake). A tree that forges either
// (its own marker, its own user namespace and bind mount) gains nothing:
// the nested launch then shows its tree what the forging tree reads
// itself. A stray ENVSIEVE_TREE in a top-level environment alone does not
// make a real file the outer view: it is not such a mount point.

// loginsDirPrefix begins the name of a launch's directory of fake files
// (fakeLogins).
const loginsDirPrefix = "envsieve-logins-"

// outerView says what a nested launch found at the credential file p,
// given the error reading it: "passed" when it is the outer seal's fake,
// "masked" when the outer seal masks it (reading it is refused), with why;
// ok is false when it is neither (a real file), and at once, reading
// nothing, where nested says the launch is not in an outer tree (mountinfo
// would be read for each credential file that exists).
func outerView(nested bool, p string, readErr error) (seen, why string, ok bool) {
	switch {
	case !nested:
		return "", "", false
	case errors.Is(readErr, fs.ErrPermission):
		return "masked", "the outer seal masks it", true
	case readErr == nil && outerFake(mountInfo(), p):
		return "passed", "the outer seal's fake", true
	}
	return "", "", false
}

// outerFake reports whether mountinfo (the text of /proc/self/mountinfo)
// says that path is a mount point whose source is a file in a directory
// of fake files (loginsDirPrefix): the view of an outer namespace seal.
// The last mount at path is the one seen. Lines it cannot parse are
// skipped.
func outerFake(mountinfo []byte, path string) bool {
	path = filepath.Clean(path)
	found := false
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 5 {
			continue
		}
		mp, ok1 := unescapeMount(f[4])
		root, ok2 := unescapeMount(f[3])
		if !ok1 || !ok2 || mp != path {
			continue
		}
		found = slices.ContainsFunc(strings.Split(filepath.Dir(root), "/"), func(e string) bool {
			return strings.HasPrefix(e, loginsDirPrefix)
		})
	}
	return found
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space, \011,
// \012, \134); false for a malformed escape.
func unescapeMount(s string) (string, bool) {
	if !strings.Contains(s, `\`) {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		if i+4 > len(s) {
			return "", false
		}
		n, err := strconv.ParseUint(s[i+1:i+4], 8, 8)
		if err != nil {
			return "", false
		}
		b.WriteByte(byte(n))
		i += 3
	}
	return b.String(), true
}

// outerVars are the variables an outer broker sets for its tree that a
// nested launch which passes the outer seal's view keeps from its parent
// (the policy admits none of them by default): the proxy and CA
// variables, and those naming the outer fakes (toolVars).
func outerVars() []string {
	vars := slices.Clone(brokerVars)
	for _, v := range toolVars {
		vars = append(vars, v.name)
	}
	return vars
}

// outerEnv returns what of parent (a nested launch's environment) its
// tree keeps when the launch passes the outer seal's view: outerVars as
// they are, and git's configuration variables when every entry is one the
// outer launcher sets (gitHelperEnv: a helper reading a file in a
// directory of fake files, and credentialstore.locktimeoutms); none of
// git's when any other is there (GIT_CONFIG_* can run code, and the
// policy decides those).
func outerEnv(parent []string) map[string]string {
	keep := outerVars()
	out := map[string]string{}
	git := map[string]string{}
	for _, kv := range parent {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if _, seen := out[k]; !seen && slices.Contains(keep, k) {
			out[k] = v
		}
		if _, seen := git[k]; !seen && strings.HasPrefix(k, "GIT_CONFIG_") {
			git[k] = v
		}
	}
	n, err := strconv.Atoi(git["GIT_CONFIG_COUNT"])
	if err != nil || n <= 0 || strconv.Itoa(n) != git["GIT_CONFIG_COUNT"] || len(git) != 2*n+1 {
		return out
	}
	helper := `!f() { test "$1" = get && exec git credential-store --file=`
	for i := range n {
		key, val := git["GIT_CONFIG_KEY_"+strconv.Itoa(i)], git["GIT_CONFIG_VALUE_"+strconv.Itoa(i)]
		switch {
		case key == "credentialstore.locktimeoutms" && val == "0":
		case strings.HasPrefix(key, "credential.") && strings.HasSuffix(key, ".helper") && strings.HasPrefix(val, helper):
			file, ok := strings.CutSuffix(strings.TrimPrefix(val, helper), " get; }; f")
			if !ok || !filepath.IsAbs(file) || strings.ContainsAny(file, " \t\n\"'\\;&|$`") ||
				!strings.HasPrefix(filepath.Base(filepath.Dir(file)), loginsDirPrefix) {
				return out
			}
		default:
			return out
		}
	}
	for k, v := range git {
		out[k] = v
	}
	return out
}
