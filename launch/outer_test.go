package launch

import (
	"slices"
	"strings"
	"testing"
)

func TestOuterFake(t *testing.T) {
	const home = "/home/u"
	line := func(root, mp string) string {
		return "812 790 0:31 " + root + " " + mp + " ro,nosuid,nodev,relatime - tmpfs tmpfs rw\n"
	}
	base := "25 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
	for _, tc := range []struct {
		name, info, path string
		want             bool
	}{
		{"outer fake", base + line("/envsieve-logins-123/0-.git-credentials", home+"/.git-credentials"), home + "/.git-credentials", true},
		{"outer fake, /tmp on the root fs", base + line("/tmp/envsieve-logins-9/2-hosts.yml", home+"/.config/gh/hosts.yml"), home + "/.config/gh/hosts.yml", true},
		{"escaped space", base + line(`/envsieve-logins-1/0-.netrc`, `/home/a\040b/.netrc`), "/home/a b/.netrc", true},
		{"not a mount point", base, home + "/.git-credentials", false},
		{"a user's bind mount (a devcontainer)", base + line("/secrets/git-credentials", home+"/.git-credentials"), home + "/.git-credentials", false},
		{"masked with /dev/null", base + "813 790 0:5 /null " + home + "/.git-credentials ro - devtmpfs udev rw\n", home + "/.git-credentials", false},
		{"the last mount wins", base + line("/envsieve-logins-1/0-.netrc", home+"/.netrc") + line("/other/netrc", home+"/.netrc"), home + "/.netrc", false},
		{"prefix in the file's own name only", base + line("/x/envsieve-logins-.netrc", home+"/.netrc"), home + "/.netrc", false},
		{"another path", base + line("/envsieve-logins-1/0-.netrc", home+"/.netrc"), home + "/.git-credentials", false},
		{"malformed escape", base + line(`/envsieve-logins-1/0-.netrc`, `/home/u/.ne\04`), "/home/u/.ne\x04", false},
		{"short line", "1 2 3 4\n", "4", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := outerFake([]byte(tc.info), tc.path); got != tc.want {
				t.Errorf("outerFake = %v, want %v", got, tc.want)
			}
		})
	}
}

func FuzzOuterFake(f *testing.F) {
	f.Add([]byte("812 790 0:31 /envsieve-logins-1/0-.netrc /home/a\\040b/.netrc ro - tmpfs tmpfs rw\n"), "/home/a b/.netrc")
	f.Add([]byte("1 2 3 \\ \\1\n"), "x")
	f.Fuzz(func(t *testing.T, info []byte, path string) {
		outerFake(info, path)
		for _, field := range strings.Fields(string(info)) {
			if s, ok := unescapeMount(field); ok && !strings.Contains(field, `\`) && s != field {
				t.Fatalf("unescapeMount changed %q without an escape", field)
			}
		}
	})
}

func TestOuterEnv(t *testing.T) {
	helper := func(file string) string {
		return `!f() { test "$1" = get && exec git credential-store --file=` + file + ` get; }; f`
	}
	ours := []string{"GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=credential.https://git.example.helper", "GIT_CONFIG_VALUE_0=" + helper("/run/user/1/envsieve-logins-7/0-.git-credentials"),
		"GIT_CONFIG_KEY_1=credentialstore.locktimeoutms", "GIT_CONFIG_VALUE_1=0"}
	common := []string{"HTTPS_PROXY=http://127.0.0.1:4000", "GIT_SSL_CAINFO=/tmp/envsieve-broker-1/ca.pem",
		"NPM_CONFIG_USERCONFIG=/tmp/envsieve-logins-7/1-.npmrc", "PATH=/bin", "LD_PRELOAD=/x.so", "NODE_OPTIONS=--require /x"}
	for _, tc := range []struct {
		name    string
		parent  []string
		wantGit bool
	}{
		{"the outer launcher's git helper", append(append([]string{}, common...), ours...), true},
		{"no git configuration", common, false},
		{"another git setting among them", append(append([]string{}, common...), "GIT_CONFIG_COUNT=3",
			ours[1], ours[2], ours[3], ours[4], "GIT_CONFIG_KEY_2=core.fsmonitor", "GIT_CONFIG_VALUE_2=/x"), false},
		{"a helper outside a fake directory", append(append([]string{}, common...), "GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=credential.https://h.helper", "GIT_CONFIG_VALUE_0="+helper("/home/u/.git-credentials")), false},
		{"a helper with a command after it", append(append([]string{}, common...), "GIT_CONFIG_COUNT=1",
			"GIT_CONFIG_KEY_0=credential.https://h.helper", "GIT_CONFIG_VALUE_0="+helper("/tmp/envsieve-logins-1/x;touch${IFS}/tmp/p")), false},
		{"an extra entry past the count", append(append([]string{}, common...), append(append([]string{}, ours...), "GIT_CONFIG_KEY_5=core.pager")...), false},
		{"a count that is not one", append(append([]string{}, common...), "GIT_CONFIG_COUNT=01", ours[1], ours[2]), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := outerEnv(tc.parent)
			for _, k := range []string{"HTTPS_PROXY", "GIT_SSL_CAINFO", "NPM_CONFIG_USERCONFIG"} {
				if got[k] == "" {
					t.Errorf("%s not kept", k)
				}
			}
			for _, k := range []string{"PATH", "LD_PRELOAD", "NODE_OPTIONS"} {
				if _, ok := got[k]; ok {
					t.Errorf("%s kept", k)
				}
			}
			if _, has := got["GIT_CONFIG_COUNT"]; has != tc.wantGit {
				t.Errorf("git's configuration kept: %v, want %v (%v)", has, tc.wantGit, got)
			}
			for k := range got {
				if strings.HasPrefix(k, "GIT_CONFIG_") && !tc.wantGit {
					t.Errorf("%s kept", k)
				}
			}
		})
	}
}

// TestNestedOuterView: a nested launch that found the outer seal's view
// of a credential file starts no broker for it, leaves the outer fake out
// of its seal's mask, and gives its tree, and each program it starts for
// a rule, the outer broker's variables from its parent.
func TestNestedOuterView(t *testing.T) {
	home := t.TempDir()
	p := home + "/.git-credentials"
	started := 0
	l := loginPlan(home)
	l.host.Nested = "a test"
	l.host.Broker = func(BrokerRequest, func(BrokerEvent)) (BrokerRun, error) { started++; return nil, nil }
	l.logins = &loginFakes{outer: true, passed: []string{p}, fake: map[string]string{}, names: map[string]bool{}}
	l.opt.Parent = []string{"HTTPS_PROXY=http://127.0.0.1:4000", "SSL_CERT_FILE=/tmp/envsieve-broker-1/bundle.pem", "PATH=/bin"}
	l.Env = []string{"PATH=/bin"}
	if err := l.startBroker(); err != nil {
		t.Fatal(err)
	}
	if started != 0 {
		t.Errorf("a broker started")
	}
	for _, want := range []string{"HTTPS_PROXY=http://127.0.0.1:4000", "SSL_CERT_FILE=/tmp/envsieve-broker-1/bundle.pem", "PATH=/bin"} {
		if !slices.Contains(l.Env, want) {
			t.Errorf("the tree lacks %s: %q", want, l.Env)
		}
		if got := l.brokerOverlay([]string{"PATH=/bin"}); !slices.Contains(got, want) {
			t.Errorf("a program started for a rule lacks %s: %q", want, got)
		}
	}
	spec, err := l.sealSpec()
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(spec.Mask, p) || spec.Fake[p] != "" {
		t.Errorf("the seal masks or fakes the outer fake %s", p)
	}
	if !slices.Contains(spec.Mask, home+"/.netrc") {
		t.Errorf("the seal no longer masks the rest of its list")
	}
}

// FuzzOuterEnv: git's configuration passes only as the outer launcher
// sets it: a credential helper reading a file in a directory of fake
// files, or the lock timeout.
func FuzzOuterEnv(f *testing.F) {
	f.Add("GIT_CONFIG_COUNT=1\x00GIT_CONFIG_KEY_0=credentialstore.locktimeoutms\x00GIT_CONFIG_VALUE_0=0")
	f.Add("GIT_CONFIG_COUNT=1\x00GIT_CONFIG_KEY_0=credential.https://h.helper\x00GIT_CONFIG_VALUE_0=!f() { test \"$1\" = get && exec git credential-store --file=/tmp/envsieve-logins-1/0-x get; }; f")
	f.Fuzz(func(t *testing.T, env string) {
		got := outerEnv(strings.Split(env, "\x00"))
		for k, v := range got {
			switch {
			case !strings.HasPrefix(k, "GIT_CONFIG_"):
				if !slices.Contains(outerVars(), k) {
					t.Fatalf("%s kept", k)
				}
			case strings.HasPrefix(k, "GIT_CONFIG_VALUE_"):
				if v != "0" && (!strings.Contains(v, "/"+loginsDirPrefix) || strings.ContainsAny(strings.TrimSuffix(strings.TrimPrefix(v, `!f() { test "$1" = get && exec git credential-store --file=`), " get; }; f"), " ;&|$`'\"\\\n")) {
					t.Fatalf("git value %q kept", v)
				}
			case strings.HasPrefix(k, "GIT_CONFIG_KEY_"):
				if v != "credentialstore.locktimeoutms" && (!strings.HasPrefix(v, "credential.") || !strings.HasSuffix(v, ".helper")) {
					t.Fatalf("git key %q kept", v)
				}
			case k != "GIT_CONFIG_COUNT":
				t.Fatalf("%s kept", k)
			}
		}
	})
}
