package launch

import (
	"os"
	"path/filepath"
	"strings"

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
