package launch

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/envsieve/envsieve/login"
)

// AWSLogin is one AWS profile's keys, which the broker re-signs with
// rather than swaps (broker.AWSCred, docs/broker.md "AWS"): the real keys,
// the fakes the tree's ~/.aws/credentials holds, and the hosts besides
// AWS's own its requests are re-signed for (the profile's endpoint_url
// hosts in ~/.aws/config).
type AWSLogin struct {
	Name  string       `json:"name"`
	Real  login.AWSKey `json:"real"`
	Fake  login.AWSKey `json:"fake"`
	Hosts []string     `json:"hosts,omitempty"`
}

// awsLogins returns the AWS profiles among creds, each with the
// endpoint_url hosts ~/.aws/config (under home, read here, outside the
// tree) gives its profile. A config that cannot be read or understood
// adds no host: the profile is re-signed for AWS's endpoints only.
func awsLogins(creds []login.Cred, home string) []AWSLogin {
	var out []AWSLogin
	var hosts map[string][]string
	for _, c := range creds {
		if c.AWS == nil {
			continue
		}
		if hosts == nil {
			hosts = map[string][]string{}
			if data, err := os.ReadFile(filepath.Join(home, ".aws", "config")); err == nil {
				if h, err := login.AWSEndpointHosts(data); err == nil {
					hosts = h
				}
			}
		}
		profile := strings.TrimPrefix(c.Name, "aws:")
		out = append(out, AWSLogin{Name: c.Name, Real: c.AWS.Real, Fake: c.AWS.Fake, Hosts: hosts[profile]})
	}
	return out
}

// AWSReloader returns, for the broker, the current real keys of an AWS
// profile of the faked files: it stats the real ~/.aws/credentials at
// each call, and re-reads and parses it when it changed (a tool such as
// saml2aws writing new temporary keys in the user's terminal). It answers
// the keys and true, or false when it has nothing newer to say (the file
// is gone, cannot be read or understood, or no longer holds the profile):
// the broker then keeps the keys it has.
func AWSReloader(files []LoginFile) func(name string) (login.AWSKey, bool) {
	f, _ := login.ByPath(".aws/credentials")
	type state struct {
		path  string
		stamp [5]int64
		keys  map[string]login.AWSKey
		ok    bool
	}
	byName := map[string]*state{}
	for _, lf := range files {
		if lf.Format != f.Name {
			continue
		}
		s := &state{path: lf.Path}
		for _, n := range lf.Names {
			byName[n] = s
		}
	}
	var mu sync.Mutex
	anyFake := func(_, real string) string { return strings.Repeat("x", len(real)) }
	return func(name string) (login.AWSKey, bool) {
		s := byName[name]
		if s == nil {
			return login.AWSKey{}, false
		}
		mu.Lock()
		defer mu.Unlock()
		stamp, err := fileStamp(s.path)
		if err != nil {
			return login.AWSKey{}, false
		}
		if !s.ok || stamp != s.stamp {
			real, err := os.ReadFile(s.path)
			if err != nil {
				return login.AWSKey{}, false
			}
			_, creds, err := f.Fake(real, anyFake)
			if err != nil {
				return login.AWSKey{}, false
			}
			s.keys = map[string]login.AWSKey{}
			for _, c := range creds {
				if c.AWS != nil {
					s.keys[c.Name] = c.AWS.Real
				}
			}
			s.stamp, s.ok = stamp, true
		}
		k, ok := s.keys[name]
		return k, ok
	}
}
