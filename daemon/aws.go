package daemon

import (
	"crypto/tls"
	"net/http"
	"strings"

	"github.com/envsieve/envsieve/broker"
	"github.com/envsieve/envsieve/launch"
)

// awsFetched returns the broker's source of a profile's real keys that
// it fetches outside the tree (launch.AWSFetch): its credential_process,
// run with the user's environment, or its IAM Identity Center role,
// through the broker's own upstream (cfg's roots and proxy). Nil when f
// is nil.
func awsFetched(f *launch.AWSFetch, cfg *broker.Config) broker.AWSSource {
	switch {
	case f == nil:
		return nil
	case f.SSO != nil:
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cfg.UpstreamRoots, MinVersion: tls.VersionTLS12}}
		if cfg.UpstreamProxy != nil {
			tr.Proxy = http.ProxyURL(cfg.UpstreamProxy)
		}
		s := f.SSO
		return &broker.AWSSSO{CacheDir: f.CacheDir, Session: s.Session, StartURL: s.StartURL, Region: s.Region,
			AccountID: s.AccountID, RoleName: s.RoleName, Portal: strings.TrimSuffix(f.Portal, "/"), OIDC: strings.TrimSuffix(f.OIDC, "/"), Client: &http.Client{Transport: tr}}
	default:
		env := f.Env
		if env == nil {
			env = []string{}
		}
		return &broker.AWSProcess{Argv: f.Argv, Env: env, Dir: f.Dir}
	}
}
