package daemon

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/envsieve/envsieve/internal/broker"
	"github.com/envsieve/envsieve/internal/login"
	"github.com/envsieve/envsieve/internal/sigv4"
	"github.com/envsieve/envsieve/launch"
)

// awsFetched returns the broker's source of a profile's real keys that
// it fetches outside the tree (launch.AWSFetch): its credential_process,
// run with the user's environment, or its IAM Identity Center role,
// through the broker's own upstream (cfg's roots and proxy). Nil when f
// is nil.
func awsFetched(name string, f *launch.AWSFetch, cfg *broker.Config) broker.AWSSource {
	switch {
	case f == nil:
		return nil
	case f.Static != nil && f.ConfigFile != "":
		return &awsConfigStatic{path: f.ConfigFile, profile: strings.TrimPrefix(name, "aws:"), keys: sigv4.Credentials(*f.Static)}
	case f.Static != nil:
		return broker.AWSStatic(*f.Static)
	case f.Role != nil:
		r := f.Role
		a := &broker.AWSAssumeRole{RoleARN: r.ARN, SessionName: r.SessionName, ExternalID: r.ExternalID, Duration: r.Duration,
			Region: r.Region, Endpoint: strings.TrimSuffix(f.STS, "/"), Client: &http.Client{Transport: upstreamTransport(cfg)}}
		if r.TokenFile != "" {
			a.TokenFile = r.TokenFile // a web identity: no source profile
		} else {
			a.Source = awsNamed{cfg, "aws:" + r.Source}
		}
		return a
	case f.SSO != nil:
		tr := upstreamTransport(cfg)
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

// awsConfigStatic is a profile's static keys in the user's config file,
// re-read when the file changes (a new size or modification time) during
// the session, as the credentials file's are (launch.AWSReloader): the
// keys it holds now, or the last ones when it is gone, cannot be read or
// understood, or no longer gives the profile static keys.
type awsConfigStatic struct {
	path, profile string

	mu    sync.Mutex
	keys  sigv4.Credentials
	size  int64
	mtime time.Time
	seen  bool
}

func (s *awsConfigStatic) Credentials(context.Context) (sigv4.Credentials, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fi, err := os.Stat(s.path)
	if err != nil || s.seen && fi.Size() == s.size && fi.ModTime().Equal(s.mtime) {
		return s.keys, nil
	}
	s.seen, s.size, s.mtime = true, fi.Size(), fi.ModTime()
	data, err := os.ReadFile(s.path)
	if err != nil {
		return s.keys, nil
	}
	_, fetchers, err := login.AWSConfigFake(data, nil)
	if err != nil {
		return s.keys, nil
	}
	for _, f := range fetchers {
		if f.Profile == s.profile && f.Static != nil {
			s.keys = sigv4.Credentials(*f.Static)
		}
	}
	return s.keys, nil
}

// upstreamTransport reaches AWS as the broker does: cfg's roots and
// proxy.
func upstreamTransport(cfg *broker.Config) *http.Transport {
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: cfg.UpstreamRoots, MinVersion: tls.VersionTLS12}}
	if cfg.UpstreamProxy != nil {
		tr.Proxy = http.ProxyURL(cfg.UpstreamProxy)
	}
	return tr
}

// awsNamed is the real keys of the launch's AWS credential of that name
// (an assume-role profile's source profile), looked up when asked: its
// source is set once the broker's credentials are all made.
type awsNamed struct {
	cfg  *broker.Config
	name string
}

func (n awsNamed) Credentials(ctx context.Context) (sigv4.Credentials, error) {
	for _, c := range n.cfg.AWS {
		if c.Name == n.name {
			return c.Real.Credentials(ctx)
		}
	}
	return sigv4.Credentials{}, errors.New("the source profile " + n.name + " is not among the launch's AWS profiles")
}
