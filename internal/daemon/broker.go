package daemon

import (
	"context"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/envsieve/envsieve/internal/broker"
	"github.com/envsieve/envsieve/internal/sigv4"
	"github.com/envsieve/envsieve/launch"
)

// StartBroker runs a credential broker for a launch's request in this
// process: the daemon's own sessions use it, and `envsieve-daemon
// __broker` serves `envsieve run` with it (the envsieve launcher does not
// link net/http; see lean_test.go).
func StartBroker(req launch.BrokerRequest, events func(launch.BrokerEvent)) (launch.BrokerRun, error) {
	cfg := broker.Config{Secrets: req.Secrets, Key: req.Key, BoundOnly: req.BoundOnly, UID: req.UID, Dir: req.Dir, Env: req.Env}
	for _, b := range req.Bindings {
		if b == nil {
			continue
		}
		bd := broker.Binding{Name: b.Name, Hosts: b.Hosts, In: b.In, Methods: b.Methods,
			Paths: b.Paths, BaseURL: b.BaseURL, Upstream: b.Upstream}
		for _, lf := range req.Logins {
			if r := lf.Renews[b.Name]; r != nil {
				bd.Renews = r
			}
		}
		cfg.Bindings = append(cfg.Bindings, bd)
	}
	if len(req.Logins) > 0 {
		cfg.OnRefresh = func(secret string, tokens map[string]string) {
			for _, lf := range req.Logins {
				if lf.Renews[secret] == nil {
					continue
				}
				if err := launch.WriteBack(lf, secret, tokens, time.Now()); err != nil && events != nil {
					// The tree still works (the broker keeps the new
					// tokens); the user's file keeps the old ones.
					events(launch.BrokerEvent{Kind: "denied", Secret: secret, Place: "write-back"})
				}
			}
		}
	}
	if len(req.Logins) > 0 {
		cfg.Reload = launch.LoginReloader(req.Logins)
	}
	// The CA files the user's own environment names (a company CA): the
	// tree's clients trust them in the bundle, and the broker upstream
	// (broker.UserRoots: each file read once, each certificate kept once).
	var files []string
	for _, k := range launch.UserCAVars() {
		if f := req.Env[k]; f != "" {
			files = append(files, f)
		}
	}
	var extra []*x509.Certificate
	if len(files) > 0 {
		cfg.SystemPEM = broker.SystemRoots("")
		cfg.UserRoots, extra = broker.UserRoots(files, cfg.SystemPEM)
	}
	if len(req.UpstreamCA) > 0 || len(extra) > 0 {
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		for _, c := range extra {
			pool.AddCert(c)
		}
		for _, f := range req.UpstreamCA {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("broker: upstream_ca: %w", err)
			}
			if !pool.AppendCertsFromPEM(data) {
				return nil, fmt.Errorf("broker: upstream_ca %s: no PEM certificate in it", f)
			}
		}
		cfg.UpstreamRoots = pool
	}
	for _, k := range []string{"HTTPS_PROXY", "https_proxy"} {
		if v := req.Env[k]; v != "" {
			u, err := url.Parse(v)
			if err != nil || u.Host == "" {
				return nil, fmt.Errorf("broker: %s is not a proxy URL", k)
			}
			cfg.UpstreamProxy = u
			break
		}
	}
	reloadAWS := launch.AWSReloader(req.Logins)
	for _, a := range req.AWS {
		real := awsFetched(a.Name, a.Fetch, &cfg) // a profile that fetches its keys, else nil
		if real == nil {
			real = broker.AWSFunc(func(context.Context) (sigv4.Credentials, error) {
				if k, ok := reloadAWS(a.Name); ok {
					return sigv4.Credentials(k), nil // the file as it is now
				}
				return sigv4.Credentials(a.Real), nil
			})
		}
		cfg.AWS = append(cfg.AWS, broker.AWSCred{Name: a.Name, Fake: sigv4.Credentials(a.Fake), Hosts: a.Hosts, Real: real})
	}
	if events != nil {
		cfg.Audit = func(e broker.Event) {
			events(launch.BrokerEvent{Kind: e.Kind, Secret: e.Secret, Host: e.Host, Place: e.Place})
		}
	}
	return broker.Start(cfg)
}
