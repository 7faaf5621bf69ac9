package broker

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Binding is one brokered secret: where its fake is swapped for the real
// value (policy: secrets.NAME.broker, or a binding of the catalog).
type Binding struct {
	// Name is the secret's variable name (GITHUB_TOKEN).
	Name string
	// Hosts are the hosts the real value goes to in proxy mode: "host"
	// (any port), "host:port", or "*.suffix". None means base-URL mode
	// only.
	Hosts []string
	// In are the places of a request where the fake is swapped: "header:NAME",
	// "query:NAME", or a body field of a token endpoint, "form:NAME" or
	// "json:NAME" (then Paths are required: refresh.go). Nil means the
	// authorization headers (defaultIn).
	In []string
	// Renews, on a binding with a body place, names the secrets its
	// endpoint's JSON token response renews, by the response's field
	// ("access_token" -> that token's binding name; "id_token" may name
	// no binding: its fake keeps the JWT decodable).
	Renews map[string]string
	// Methods, when set, are the only request methods the real value is
	// given to; Paths, when set, the only path prefixes.
	Methods, Paths []string
	// BaseURL names the endpoint variable of base-URL mode
	// (ANTHROPIC_BASE_URL): the child gets it pointed at the broker. ""
	// means proxy mode only.
	BaseURL string
	// Upstream is where base-URL mode forwards when the user's environment
	// does not set BaseURL: an https URL, or http on loopback.
	Upstream string
}

// defaultIn are the places a fake is swapped in when a binding names none:
// the authorization headers of the common APIs (a Basic credential's user
// or password included).
var defaultIn = []string{"header:Authorization", "header:X-Api-Key", "header:X-Goog-Api-Key", "header:Private-Token"}

// Event is one thing the broker did or refused, for the audit log. It
// names the secret, never a value.
type Event struct {
	// Kind is "refused" (a fake sent where its secret is not bound),
	// "unswapped" (a fake in a place of its own host that is not swapped:
	// it went through as the fake), "denied" (a request the broker does
	// not serve: another user, no or a wrong credential, a method or path
	// the binding does not allow, egress), "swapped", "reloaded" (the
	// secret's real value read anew, Config.Reload), or "renewed" (a
	// token endpoint's response gave a secret a new real value; the child
	// got a new fake), or "minted" (an answer from AWS held new AWS keys:
	// the child got fakes, the broker keeps the keys; awsmint.go).
	Kind string
	// Secret is the secret's name; "" when none is concerned.
	Secret string
	// Host is the request's target host.
	Host string
	// Place is where in the request: "header:NAME", "query:NAME", "path",
	// "body", or the reason of a denial ("peer-uid", "peer-unknown",
	// "connection-limit", "content-encoding", "decoded-size", ...).
	Place string
}

// Config is one broker's setting. The zero value of each field is
// documented; Secrets and Key are required.
type Config struct {
	// Bindings are the brokered secrets.
	Bindings []Binding
	// Secrets are the real values by name; the child never gets them.
	Secrets map[string]string
	// Key derives the fakes (the install key; see Fake).
	Key []byte
	// BoundOnly refuses a CONNECT to a host no binding names; false
	// tunnels it untouched (policy broker.egress: open).
	BoundOnly bool
	// UpstreamRoots are the roots the broker trusts upstream; nil means the
	// system's.
	UpstreamRoots *x509.CertPool
	// UpstreamProxy is the proxy the broker goes through (the user's own
	// HTTPS_PROXY); nil means none.
	UpstreamProxy *url.URL
	// UID is the only user whose connections are served; -1 serves any
	// (never in a launch: for tests of the other checks).
	UID int
	// Dir is a private directory (0700) for the CA bundle the child trusts.
	// Required.
	Dir string
	// SystemRoots is the PEM bundle of system roots the child's bundle
	// starts with; "" looks in the usual places.
	SystemRoots string
	// SystemPEM is that bundle's content where the caller has read it
	// already (for UserRoots): it is not read again. nil reads it.
	SystemPEM []byte
	// UserRoots are PEM certificates the child's clients trust besides:
	// the CA files the user's own environment names (a company CA). They
	// go in the bundle and in the file of the launch CA alone.
	UserRoots []byte
	// Reload, when set, is asked for a secret's current real value before
	// its fake is swapped (a credential file the user may log in again to
	// during the session): a value that differs replaces the one the
	// broker holds, the fake staying the same; false keeps the one held.
	Reload func(name string) (real string, ok bool)
	// Env is the user's environment: the original values of base-URL
	// variables and NO_PROXY.
	Env map[string]string
	// Audit receives events; nil discards them.
	Audit func(Event)
	// MaxDecoded caps the bytes a compressed response (each layer of a
	// stacked encoding) decodes to; past it the response is cut and a
	// "denied" event with Place "decoded-size" is audited. 0 means
	// defaultMaxDecoded (256 MiB).
	MaxDecoded int64
	// HandshakeTimeout bounds an intercepted CONNECT's TLS handshake with
	// the child, from the broker's 200: a child that never starts TLS is
	// dropped. 0 means 10 s
	// (defaultHandshakeTimeout).
	HandshakeTimeout time.Duration
	// HeaderTimeout bounds the reading of a request's headers on a child's
	// connection: from the connection's start for its first request, from
	// the first byte for a later one. 0 means 10 s
	// (defaultHeaderTimeout).
	HeaderTimeout time.Duration
	// IdleTimeout closes a child's kept-alive connection that has waited
	// that long for its next request. 0 means 120 s
	// (defaultIdleTimeout).
	IdleTimeout time.Duration
	// OnRefresh is called with the new real tokens (by the response's
	// field, expires_in included) when a token endpoint's response renewed
	// secret's tokens, before the response reaches the child: the
	// launcher writes them back to the user's real file. nil discards them.
	OnRefresh func(secret string, tokens map[string]string)
	// MaxConns caps the child connections open at once (a CONNECT's counts
	// until it ends); one more is answered 503 and closed, with a "denied"
	// event of Place "connection-limit". 0 means 4096
	// (defaultMaxConns).
	MaxConns int
	// AWS are the AWS keys the tree holds fakes of: requests signed with
	// them are verified and re-signed (aws.go). None means no AWS endpoint
	// is intercepted for them.
	AWS []AWSCred
}

// The defaults of Config's bounds on the child's connections.
const (
	defaultHandshakeTimeout = 10 * time.Second
	defaultHeaderTimeout    = 10 * time.Second
	defaultIdleTimeout      = 120 * time.Second
	defaultMaxConns         = 4096
)

// orDefault returns d, or def when d is 0 or less.
func orDefault[T time.Duration | int](d, def T) T {
	if d > 0 {
		return d
	}
	return def
}

// Broker is a running broker: one loopback listener serving proxy and
// base-URL mode.
type Broker struct {
	cfg    Config
	ln     net.Listener
	srv    *http.Server
	ca     *authority
	cred   string
	bundle string
	// caOnly is the launch CA's certificate alone, for the variables
	// that add to a client's store.
	caOnly string
	// certDir is the system's hashed directory of roots (OpenSSL's
	// c_rehash layout), "" when there is none or SystemRoots names a
	// file: with one, node is given the launch CA without a start cost
	// (ChildEnv, nodeTrust).
	certDir string
	addr    string
	up      *http.Transport
	// smu guards secrets (their real values too), scrub, scrubPairs and
	// fakes, which a token refresh (addGenerations) and a reload
	// (current) change; readers take a snapshot (table).
	smu sync.RWMutex
	// secrets are the brokered secrets, with their fakes: a renewed
	// token is one more of the same name (the older fakes keep working).
	secrets []*brokered
	// nonce makes renewed tokens' fakes this broker's own (refresh.go).
	nonce string
	// routes maps a base-URL route name to its secret and upstream.
	routes map[string]*route
	// scrub replaces real values by fakes in responses, made of
	// scrubPairs: every real value the broker has held (a reload or a
	// renewal adds; none is dropped, so an older real value in a
	// response still reaches the child as a fake).
	scrub      *patterns
	scrubPairs []pair
	// fakes finds fakes in requests.
	fakes *patterns

	mu    sync.Mutex
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
	// open counts the child connections open (see Config.MaxConns).
	open atomic.Int64
	// mint keeps the AWS keys minted for the tree (awsmint.go).
	mint awsMint
}

type brokered struct {
	Binding
	real, fake string
	in         []string
}

type route struct {
	secret   *brokered
	upstream *url.URL
}

// Start starts a broker on a loopback port.
func Start(cfg Config) (*Broker, error) {
	if cfg.Dir == "" {
		return nil, errors.New("broker: no directory for the CA bundle")
	}
	b := &Broker{cfg: cfg, routes: map[string]*route{}, conns: map[net.Conn]struct{}{}, nonce: newNonce()}
	var hosts []string
	var scrub, fakes []pair
	for _, bd := range cfg.Bindings {
		real, ok := cfg.Secrets[bd.Name]
		if !ok || real == "" {
			continue
		}
		s := &brokered{Binding: bd, real: real, fake: Fake(cfg.Key, bd.Name, real), in: bd.In}
		if s.in == nil {
			s.in = defaultIn
		}
		if s.inBody() && len(bd.Paths) == 0 {
			return nil, fmt.Errorf("broker: %s: a body place needs the binding's paths (its token endpoint)", bd.Name)
		}
		b.secrets = append(b.secrets, s)
		hosts = append(hosts, bd.Hosts...)
		scrub = append(scrub, scrubPairs(bd.Name, real, s.fake)...)
		fakes = append(fakes, pair{name: bd.Name, from: []byte(s.fake)})
		if bd.BaseURL != "" {
			up := cfg.Env[bd.BaseURL]
			if up == "" {
				up = bd.Upstream
			}
			u, err := upstreamURL(up)
			if err != nil {
				return nil, fmt.Errorf("broker: %s: %s: %w", bd.Name, bd.BaseURL, err)
			}
			b.routes[strings.ToLower(bd.BaseURL)] = &route{secret: s, upstream: u}
		}
	}
	b.scrub, b.scrubPairs, b.fakes = newPatterns(scrub), scrub, newPatterns(fakes)
	if err := checkAWS(cfg.AWS); err != nil {
		return nil, err
	}
	hosts = append(hosts, awsHosts(cfg.AWS)...)
	var err error
	if b.ca, err = newAuthority(hosts); err != nil {
		return nil, err
	}
	cred := make([]byte, 16)
	if _, err := rand.Read(cred); err != nil {
		return nil, err
	}
	b.cred = hex.EncodeToString(cred)
	if b.bundle, b.caOnly, err = b.writeTrust(); err != nil {
		return nil, err
	}
	if cfg.SystemRoots == "" {
		b.certDir = hashedCertDir(systemCertDirs)
	}
	roots := cfg.UpstreamRoots
	b.up = &http.Transport{
		Proxy:               http.ProxyURL(cfg.UpstreamProxy),
		DialContext:         dialReadAhead,
		TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 16,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		// The broker asks for identity itself (forward), and decodes what
		// still comes compressed under its own cap (decode.go).
		DisableCompression: true,
	}
	if cfg.UpstreamProxy == nil {
		b.up.Proxy = nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("broker: listen: %w", err)
	}
	b.ln = &peerListener{Listener: ln, b: b}
	b.addr = ln.Addr().String()
	b.srv = &http.Server{Handler: b, ErrorLog: discardLog,
		ReadHeaderTimeout: orDefault(cfg.HeaderTimeout, defaultHeaderTimeout),
		IdleTimeout:       orDefault(cfg.IdleTimeout, defaultIdleTimeout),
		ConnContext:       func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) }}
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		_ = b.srv.Serve(b.ln)
	}()
	return b, nil
}

// upstreamURL parses a base-URL upstream: https, or http to loopback only
// (a local model server): the real value never crosses a network in the
// clear.
func upstreamURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("upstream %q is not an absolute URL", s)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !isLoopback(u.Hostname()) {
			return nil, fmt.Errorf("upstream %s is plain http to a host that is not loopback: the real value would cross the network in the clear", u.Redacted())
		}
	default:
		return nil, fmt.Errorf("upstream %q: want https (or http on loopback)", s)
	}
	return u, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// systemBundles are where Linux distributions and macOS keep the roots.
var systemBundles = []string{
	"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt",
	"/etc/ssl/ca-bundle.pem", "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
	"/etc/ssl/cert.pem", "/usr/local/etc/openssl/cert.pem",
}

// systemCertDirs are where distributions keep the roots one file each,
// named by subject hash, for OpenSSL's lazy lookup.
var systemCertDirs = []string{"/etc/ssl/certs", "/etc/pki/tls/certs", "/usr/local/etc/openssl/certs"}

// hashedCertDir returns the first of dirs that holds a root under
// OpenSSL's hashed name (8 hex digits, a dot, a digit: "002c0b4f.0"),
// or "". OpenSSL reads such a directory only for the issuer it looks
// for, on a TLS connection, never at a client's start.
func hashedCertDir(dirs []string) string {
	for _, d := range dirs {
		ents, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if hashedName(e.Name()) {
				return d
			}
		}
	}
	return ""
}

// hashedName reports whether name is a c_rehash name of a certificate.
func hashedName(name string) bool {
	h, n, ok := strings.Cut(name, ".")
	if !ok || len(h) != 8 || n == "" {
		return false
	}
	for _, c := range h {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	for _, c := range n {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// writeTrust writes what the child's TLS clients trust in proxy mode to
// the broker's directory: the bundle (the system roots, then the launch
// CA) for the variables that replace a client's store, and the launch CA
// alone for those that add to one (caAddVars). The bundle is built here
// and nowhere else.
func (b *Broker) writeTrust() (bundle, caOnly string, err error) {
	sys := b.cfg.SystemPEM
	if sys == nil {
		sys = SystemRoots(b.cfg.SystemRoots)
	}
	sys = withNewline(sys)
	user := withNewline(b.cfg.UserRoots)
	bundle = filepath.Join(b.cfg.Dir, "broker-ca.pem")
	// The bundle holds each of the user's roots the system's do not (a
	// user's variable often names the system bundle itself); the launch
	// CA's file holds them all, as the user's variable did.
	if err := os.WriteFile(bundle, slices.Concat(sys, notIn(user, sys), b.ca.pem), 0o600); err != nil {
		return "", "", fmt.Errorf("broker: CA bundle: %w", err)
	}
	caOnly = filepath.Join(b.cfg.Dir, "broker-launch-ca.pem")
	if err := os.WriteFile(caOnly, slices.Concat(user, b.ca.pem), 0o600); err != nil {
		return "", "", fmt.Errorf("broker: launch CA: %w", err)
	}
	return bundle, caOnly, nil
}

// CAPEM returns the launch CA's certificate.
func (b *Broker) CAPEM() []byte { return b.ca.pem }

// Addr returns the listener's address (127.0.0.1:PORT).
func (b *Broker) Addr() string { return b.addr }

// table returns the brokered secrets and their patterns as they are now.
func (b *Broker) table() ([]*brokered, *patterns, *patterns) {
	b.smu.RLock()
	defer b.smu.RUnlock()
	return b.secrets, b.scrub, b.fakes
}

// maxGenerations is how many values of one secret the broker keeps: the
// newest, and the one it renewed, whose fake keeps working (a request the
// tree made before the refresh, another process that read the file
// before); an older one is dropped, renewed twice over. Each refresh
// recompiles the patterns of what is kept (the cost of a refresh through
// the broker: docs/benchmarks.md).
const maxGenerations = 2

// addGenerations adds renewed tokens: each a new real value and fake of
// a secret already brokered.
func (b *Broker) addGenerations(gens []*brokered) {
	if len(gens) == 0 {
		return
	}
	b.smu.Lock()
	defer b.smu.Unlock()
	all := append(slices.Clip(b.secrets), gens...)
	count := map[string]int{}
	var keep []*brokered
	for i := len(all) - 1; i >= 0; i-- {
		if count[all[i].Name]++; count[all[i].Name] <= maxGenerations {
			keep = append(keep, all[i])
		}
	}
	slices.Reverse(keep)
	var fakes []pair
	for _, s := range keep {
		fakes = append(fakes, pair{name: s.Name, from: []byte(s.fake)})
	}
	for _, g := range gens {
		b.scrubPairs = append(b.scrubPairs, scrubPairs(g.Name, g.real, g.fake)...)
	}
	b.secrets, b.scrub, b.fakes = keep, newPatterns(b.scrubPairs), newPatterns(fakes)
}

// Fakes returns the fake of each brokered secret by name: a renewed
// token's newest.
func (b *Broker) Fakes() map[string]string {
	secrets, _, _ := b.table()
	m := make(map[string]string, len(secrets))
	for _, s := range secrets {
		m[s.Name] = s.fake
	}
	return m
}

// caVars are the variables through which TLS clients take a bundle of
// roots (docs/design.md, "The credential broker"): each replaces its client's store, so it
// gets the whole bundle.
var caVars = []string{"SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE",
	"GIT_SSL_CAINFO", "AWS_CA_BUNDLE", "npm_config_cafile", "PIP_CERT", "DENO_CERT", "CARGO_HTTP_CAINFO",
	"GRPC_DEFAULT_SSL_ROOTS_FILE_PATH", "CODEX_CA_CERTIFICATE"}

// caAddVars are the variables whose client adds their certificates to
// its own store: they get the launch CA alone (node parses the file at
// every start; Bun reads the same variable).
var caAddVars = []string{"NODE_EXTRA_CA_CERTS"}

// ChildEnv returns what the child's environment gets from the broker, by
// name: each brokered secret's fake, each base-URL variable pointed at the
// broker, the proxy variables (both cases, with the launch's credential)
// when a binding has hosts, NO_PROXY without the bound hosts, and the CA
// variables (the bundle, or the launch CA alone: caVars, caAddVars).
func (b *Broker) ChildEnv() map[string]string {
	env := map[string]string{}
	proxy := false
	var bound []string
	secrets, _, _ := b.table()
	for _, s := range secrets {
		if !strings.ContainsAny(s.Name, ":#/") {
			// A login file's credential ("claude:accessToken") reaches
			// the tree in its file, not in the environment.
			env[s.Name] = s.fake
		}
		if s.BaseURL != "" {
			env[s.BaseURL] = "http://" + b.addr + "/" + b.cred + "/" + strings.ToLower(s.BaseURL)
		}
		if len(s.Hosts) > 0 {
			proxy = true
			for _, h := range s.Hosts {
				bound = append(bound, strings.TrimPrefix(hostOnly(h), "*."))
			}
		}
	}
	if awsEnv(b.cfg.AWS, env) {
		proxy = true
		for _, h := range awsHosts(b.cfg.AWS) {
			bound = append(bound, strings.TrimPrefix(hostOnly(h), "*."))
		}
	}
	if !proxy {
		return env
	}
	pu := "http://envsieve:" + b.cred + "@" + b.addr
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		env[k] = pu
	}
	noProxy := b.cfg.Env["NO_PROXY"]
	if noProxy == "" {
		noProxy = b.cfg.Env["no_proxy"]
	}
	var keep []string
	for _, e := range strings.Split(noProxy, ",") {
		e = strings.TrimSpace(e)
		if e == "" || e == "*" || slices.ContainsFunc(bound, func(h string) bool {
			e := strings.TrimPrefix(e, ".")
			return e == h || strings.HasSuffix(h, "."+e) || strings.HasSuffix(e, "."+h)
		}) {
			continue // a bound host must go through the broker
		}
		keep = append(keep, e)
	}
	env["NO_PROXY"] = strings.Join(keep, ",")
	env["no_proxy"] = env["NO_PROXY"]
	for _, k := range caVars {
		env[k] = b.bundle
	}
	for _, k := range caAddVars {
		env[k] = b.caOnly
	}
	b.nodeTrust(env)
	return env
}

// NodeOpenSSLCA is the node option the broker's proxy mode asks for
// (NODE_OPTIONS) where the system keeps a hashed directory of roots.
const NodeOpenSSLCA = "--use-openssl-ca"

// nodeTrust gives node the launch CA without a cost at every start,
// where the system keeps a hashed directory of roots (certDir). node 20
// to 24 read any NODE_EXTRA_CA_CERTS at start and then build their whole
// root store first (+30-40 ms of CPU a start on the development VM,
// docs/benchmarks.md). With --use-openssl-ca node's store is OpenSSL's:
// SSL_CERT_FILE, read whole, and SSL_CERT_DIR, read one issuer at a time
// on a TLS connection. So SSL_CERT_FILE names the launch CA (and the
// user's CAs) alone, SSL_CERT_DIR the system's directory (after the
// user's own), and node's start costs what it does bare. Every OpenSSL
// client (Python's ssl, Ruby, curl without CURL_CA_BUNDLE), Go and
// rustls-native-certs read both variables, so they trust what they did;
// the variables that name one file (CURL_CA_BUNDLE, REQUESTS_CA_BUNDLE,
// GIT_SSL_CAINFO, ...) keep the bundle. NODE_EXTRA_CA_CERTS stays for
// Bun, which reads it; the launcher adds the option to a NODE_OPTIONS
// the policy passes (launch: nodeOptions).
func (b *Broker) nodeTrust(env map[string]string) {
	if b.certDir == "" {
		return
	}
	env["SSL_CERT_FILE"] = b.caOnly
	dir := b.certDir
	if u := b.cfg.Env["SSL_CERT_DIR"]; u != "" {
		dir = u + ":" + dir
	}
	env["SSL_CERT_DIR"] = dir
	env["NODE_OPTIONS"] = NodeOpenSSLCA
}

// Close stops the broker and removes its CA files.
func (b *Broker) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := b.srv.Shutdown(ctx)
	b.mu.Lock()
	for c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
	b.up.CloseIdleConnections()
	os.Remove(b.bundle)
	os.Remove(b.caOnly)
	return err
}

func (b *Broker) maxDecoded() int64 {
	if b.cfg.MaxDecoded > 0 {
		return b.cfg.MaxDecoded
	}
	return defaultMaxDecoded
}

func (b *Broker) audit(e Event) {
	if b.cfg.Audit != nil {
		b.cfg.Audit(e)
	}
}

func (b *Broker) track(c net.Conn, on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if on {
		b.conns[c] = struct{}{}
	} else {
		delete(b.conns, c)
	}
}

// ServeHTTP serves the listener: CONNECT and absolute-form requests are
// proxy mode, the rest base-URL mode.
func (b *Broker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if bc, ok := r.Context().Value(connKey{}).(*batchConn); ok && r.Method != http.MethodConnect && r.ProtoMajor == 1 {
		w = batchedWriter{ResponseWriter: w, c: bc}
	}
	switch {
	case r.Method == http.MethodConnect:
		if !b.proxyAuth(w, r) {
			return
		}
		b.connect(w, r)
	case r.URL.IsAbs():
		if !b.proxyAuth(w, r) {
			return
		}
		if r.URL.Scheme != "http" {
			http.Error(w, "envsieve broker: only http:// is proxied without CONNECT", http.StatusBadRequest)
			return
		}
		host := withPort(r.URL.Host, "80")
		if host == b.addr {
			// A base-URL request that came through the proxy variables
			// (they point at the broker too): serve it as one.
			r.URL = &url.URL{Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery}
			b.base(w, r)
			return
		}
		if !b.cfg.BoundOnly || b.boundHost(host) {
			b.forward(w, r, "http", host, nil)
			return
		}
		b.audit(Event{Kind: "denied", Host: host, Place: "egress"})
		http.Error(w, "envsieve broker: egress to "+host+" is refused (broker.egress: bound-only)", http.StatusForbidden)
	default:
		b.base(w, r)
	}
}

// proxyAuth checks the launch's credential in Proxy-Authorization.
func (b *Broker) proxyAuth(w http.ResponseWriter, r *http.Request) bool {
	got := r.Header.Get("Proxy-Authorization")
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("envsieve:"+b.cred))
	if subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1 {
		return true
	}
	b.audit(Event{Kind: "denied", Host: r.Host, Place: "proxy-credential"})
	w.Header().Set("Proxy-Authenticate", `Basic realm="envsieve broker"`)
	http.Error(w, "envsieve broker: proxy credential required", http.StatusProxyAuthRequired)
	return false
}

// base serves base-URL mode: /CRED/ROUTE/rest goes to the route's
// upstream + rest.
func (b *Broker) base(w http.ResponseWriter, r *http.Request) {
	p, n := r.URL.Path, len(b.cred)
	if len(p) < n+2 || p[0] != '/' || p[n+1] != '/' || subtle.ConstantTimeCompare([]byte(p[1:1+n]), []byte(b.cred)) != 1 {
		b.audit(Event{Kind: "denied", Host: r.Host, Place: "base-url-credential"})
		http.Error(w, "envsieve broker: not found", http.StatusForbidden)
		return
	}
	name, rest, _ := strings.Cut(p[n+2:], "/")
	rt := b.routes[name]
	if rt == nil {
		http.Error(w, "envsieve broker: no such endpoint", http.StatusNotFound)
		return
	}
	r.URL.Path = strings.TrimSuffix(rt.upstream.Path, "/") + "/" + rest
	r.URL.RawPath = ""
	r.Host = rt.upstream.Host
	host := withPort(rt.upstream.Host, map[string]string{"https": "443", "http": "80"}[rt.upstream.Scheme])
	b.forward(w, r, rt.upstream.Scheme, host, rt.secret)
}

// withPort adds the default port to a host without one.
func withPort(host, port string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), port)
}

// matchHost reports whether pattern ("host", "host:port", "*.suffix")
// names target ("host:port").
func matchHost(pattern, target string) bool {
	th, tp, _ := net.SplitHostPort(target)
	ph, pp, err := net.SplitHostPort(pattern)
	if err != nil {
		ph, pp = strings.Trim(pattern, "[]"), ""
	}
	if pp != "" && pp != tp {
		return false
	}
	th, ph = strings.ToLower(th), strings.ToLower(ph)
	if s, ok := strings.CutPrefix(ph, "*."); ok {
		return strings.HasSuffix(th, "."+s)
	}
	return th == ph
}

// boundTo reports whether s's real value may go to target.
func (s *brokered) boundTo(target string) bool {
	for _, h := range s.Hosts {
		if matchHost(h, target) {
			return true
		}
	}
	return false
}

func (b *Broker) boundHost(target string) bool {
	secrets, _, _ := b.table()
	for _, s := range secrets {
		if s.boundTo(target) {
			return true
		}
	}
	return b.awsBound(target)
}

// connect serves a CONNECT: a bound host is terminated with the launch
// CA's certificate and served as requests; any other is tunnelled
// untouched, or refused under BoundOnly.
func (b *Broker) connect(w http.ResponseWriter, r *http.Request) {
	target := withPort(r.Host, "443")
	bound := b.boundHost(target)
	if !bound && b.cfg.BoundOnly {
		b.audit(Event{Kind: "denied", Host: target, Place: "egress"})
		http.Error(w, "envsieve broker: egress to "+target+" is refused (broker.egress: bound-only)", http.StatusForbidden)
		return
	}
	var upstream net.Conn
	if !bound {
		var err error
		if upstream, err = b.dialTunnel(r.Context(), target); err != nil {
			http.Error(w, "envsieve broker: "+err.Error(), http.StatusBadGateway)
			return
		}
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "envsieve broker: cannot take over the connection", http.StatusInternalServerError)
		return
	}
	conn, rw, err := hj.Hijack()
	if err != nil {
		if upstream != nil {
			upstream.Close()
		}
		return
	}
	b.track(conn, true)
	defer b.track(conn, false)
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		conn.Close()
		return
	}
	client := bufferedConn{Conn: conn, r: rw.Reader}
	if !bound {
		tunnel(client, upstream)
		return
	}
	host := hostOnly(target)
	bc := batchOf(client)
	tc := tls.Server(bc, &tls.Config{
		MinVersion: tls.VersionTLS12,
		// HTTP/1.1 first: a client that offers both (curl, git, gh) gets
		// it, and streams through the broker half as fast again as over
		// net/http's HTTP/2 server (docs/benchmarks.md); a client that
		// offers only h2 (gRPC) still gets HTTP/2. The host is spoken to
		// in whatever it chooses, whichever this is.
		NextProtos: []string{"http/1.1", "h2"},
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return b.ca.leaf(host)
		},
	})
	// A child that never starts TLS (or stops halfway) is dropped.
	conn.SetDeadline(time.Now().Add(orDefault(b.cfg.HandshakeTimeout, defaultHandshakeTimeout)))
	if err := tc.HandshakeContext(r.Context()); err != nil {
		tc.Close()
		return
	}
	conn.SetDeadline(time.Time{})
	ln := newOneConnListener(tc)
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ProtoMajor == 1 {
				// HTTP/2 gathers its own frames; its connection's writes
				// come from its serving goroutine, not this one.
				w = batchedWriter{ResponseWriter: w, c: bc}
			}
			b.forward(w, r, "https", target, nil)
		}),
		ReadHeaderTimeout: orDefault(b.cfg.HeaderTimeout, defaultHeaderTimeout),
		IdleTimeout:       orDefault(b.cfg.IdleTimeout, defaultIdleTimeout),
		ErrorLog:          discardLog,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateClosed || st == http.StateHijacked {
				ln.Close()
			}
		},
	}
	srv.Protocols = new(http.Protocols)
	srv.Protocols.SetHTTP1(true)
	srv.Protocols.SetHTTP2(true)
	_ = srv.Serve(ln)
}

// dialTunnel connects to target, through the upstream proxy when there is
// one.
func (b *Broker) dialTunnel(ctx context.Context, target string) (net.Conn, error) {
	var d net.Dialer
	d.Timeout = 30 * time.Second
	pu := b.cfg.UpstreamProxy
	if pu == nil {
		return d.DialContext(ctx, "tcp", target)
	}
	c, err := d.DialContext(ctx, "tcp", withPort(pu.Host, "80"))
	if err != nil {
		return nil, fmt.Errorf("upstream proxy: %w", err)
	}
	req := &http.Request{Method: http.MethodConnect, URL: &url.URL{Opaque: target}, Host: target, Header: http.Header{}}
	if u := pu.User; u != nil {
		pw, _ := u.Password()
		req.Header.Set("Proxy-Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(u.Username()+":"+pw)))
	}
	if err := req.Write(c); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, req)
	if err != nil {
		c.Close()
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		c.Close()
		return nil, fmt.Errorf("upstream proxy: CONNECT %s: %s", target, resp.Status)
	}
	return bufferedConn{Conn: c, r: br}, nil
}

// tunnel copies both ways until either side ends.
func tunnel(a, b net.Conn) {
	done := make(chan struct{}, 2)
	cp := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go cp(a, b)
	go cp(b, a)
	<-done
	<-done
	a.Close()
	b.Close()
}

// forward sends r to scheme://target, the fakes swapped for the real
// values where their bindings allow it, and scrubs the response. base is
// the secret of a base-URL route (bound to its upstream); nil in proxy
// mode.
func (b *Broker) forward(w http.ResponseWriter, r *http.Request, scheme, target string, base *brokered) {
	out := r.Clone(r.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = scheme, target
	if out.Host == "" {
		out.Host = r.URL.Host
	}
	// Swapping in the clear happens only to loopback (tests, local model
	// servers): elsewhere a real value travels only inside TLS.
	secure := scheme == "https" || isLoopback(hostOnly(target))
	signer, ok := b.resignAWS(w, out, target, secure)
	if !ok {
		return
	}
	// Answers of AWS hosts are read for keys AWS minted (awsmint.go).
	awsHost := len(b.cfg.AWS) > 0 && b.awsBound(target)
	secrets, scrub, fakes := b.table()
	var ref *refresh
	if out.Body != nil && out.Body != http.NoBody {
		var code int
		var msg string
		if code, msg, ref = b.swapBody(out, secrets, target, base, secure); code != 0 {
			http.Error(w, "envsieve broker: "+msg, code)
			return
		}
	}
	if code, msg := b.swap(out, secrets, target, base, secure); code != 0 {
		http.Error(w, "envsieve broker: "+msg, code)
		return
	}
	// A response is scrubbed as the child reads it, so ask for it
	// uncompressed; what comes compressed all the same is decoded below.
	// gRPC's own message compression is asked for by another header.
	out.Header.Set("Accept-Encoding", "identity")
	out.Header.Del("Grpc-Accept-Encoding")
	refused := new(atomic.Bool)
	if out.Body != nil && out.Body != http.NoBody {
		out.Body = guardedBody{refused: refused, ReadCloser: newScrubber(out.Body, fakes, func(name string) {
			kind := "unswapped"
			s := b.secret(name)
			if s == nil || !(base != nil && s.Name == base.Name || s.boundTo(target)) || s.inBody() {
				// A refresh token's fake is swapped only in its
				// endpoint's field: anywhere else in a body it is refused.
				kind = "refused"
			}
			if s != nil && s.inBody() {
				refused.Store(true)
			}
			b.audit(Event{Kind: kind, Secret: name, Host: target, Place: "body"})
		})}
	}
	rp := &httputil.ReverseProxy{
		Rewrite:       func(*httputil.ProxyRequest) {}, // out is made; Rewrite drops X-Forwarded-*
		Transport:     b.up,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			for k, vs := range resp.Header {
				for i, v := range vs {
					buf := []byte(v)
					scrub.replace(buf, nil)
					resp.Header[k][i] = string(buf)
				}
			}
			if resp.StatusCode == http.StatusSwitchingProtocols {
				// A websocket (or another upgrade): the handshake's headers
				// were swapped; the connection is tunnelled from here, what
				// the host sends still scrubbed.
				if rwc, ok := resp.Body.(io.ReadWriteCloser); ok {
					resp.Body = upgraded{ReadCloser: newScrubber(rwc, scrub, nil), w: rwc}
				}
				return nil
			}
			var body io.ReadCloser = newAheadReader(resp.Body)
			if !bodiless(resp) {
				codings, err := contentCodings(resp.Header)
				if err != nil {
					b.audit(Event{Kind: "denied", Host: target, Place: "content-encoding"})
					return err
				}
				if len(codings) > 0 {
					body = newDecoded(body, codings, b.maxDecoded(), func(err error) {
						place := "content-encoding"
						if errors.Is(err, errTooLarge) {
							place = "decoded-size"
						}
						b.audit(Event{Kind: "denied", Host: target, Place: place})
					})
					resp.Header.Del("Content-Encoding")
					resp.Header.Del("Content-Length")
					resp.ContentLength = -1
				}
			}
			if ref != nil && resp.StatusCode == http.StatusOK {
				data, err := io.ReadAll(io.LimitReader(body, maxTokenResponse+1))
				body.Close()
				if err != nil || len(data) > maxTokenResponse {
					b.audit(Event{Kind: "denied", Secret: ref.secret.Name, Host: target, Place: "token-response"})
					return errors.New("a token response the broker cannot read whole")
				}
				data = b.renew(ref, data, target)
				_, scrub, _ = b.table()
				body = io.NopCloser(bytes.NewReader(data))
				resp.ContentLength = int64(len(data))
				resp.Header.Set("Content-Length", strconv.Itoa(len(data)))
			}
			if awsHost && !bodiless(resp) {
				var err error
				if body, err = b.awsResponse(resp, body, target, signer); err != nil {
					return err
				}
				_, scrub, _ = b.table()
			}
			resp.Body = newScrubber(body, scrub, nil)
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			if refused.Load() {
				http.Error(w, "envsieve broker: a refresh token's fake is sent only in its token endpoint's field", http.StatusForbidden)
				return
			}
			var mr *mintRefusal
			if errors.As(err, &mr) {
				awsError(w, http.StatusBadGateway, mr.place, mr.msg)
				return
			}
			http.Error(w, "envsieve broker: upstream: "+b.scrubString(err.Error()), http.StatusBadGateway)
		},
		ErrorLog:   discardLog,
		BufferPool: bufferPool{},
	}
	rp.ServeHTTP(w, out)
}

// batchedWriter is an HTTP/1 response writer whose every write is flushed
// to the child at once (as ReverseProxy's FlushInterval -1 asks, so that no
// event is held) and reaches the connection as one write: what the
// response writer and TLS split into several records goes out with one
// system call (see batchConn).
type batchedWriter struct {
	http.ResponseWriter
	c *batchConn
}

func (w batchedWriter) Write(p []byte) (int, error) {
	w.c.hold()
	n, err := w.ResponseWriter.Write(p)
	if f, ok := w.ResponseWriter.(interface{ FlushError() error }); ok && err == nil {
		err = f.FlushError() // net/http's own writer: no controller to make per write
	} else if err == nil {
		err = http.NewResponseController(w.ResponseWriter).Flush()
	}
	if rerr := w.c.release(); err == nil {
		err = rerr
	}
	return n, err
}

// Unwrap lets ReverseProxy reach the writer's Hijack and Flush.
func (w batchedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// upgraded is an upgraded connection whose reads are scrubbed: what the
// child sends goes to the host as it is, what the host sends comes back
// with real values replaced by their fakes.
type upgraded struct {
	io.ReadCloser
	w io.Writer
}

func (u upgraded) Write(p []byte) (int, error) { return u.w.Write(p) }

// bufferPool lends ReverseProxy 128 KiB copy buffers: fewer, larger writes
// of a streamed body (a write still goes out as soon as it is read).
type bufferPool struct{}

var copyBuffers = sync.Pool{New: func() any { b := make([]byte, 128<<10); return &b }}

func (bufferPool) Get() []byte  { return *(copyBuffers.Get().(*[]byte)) }
func (bufferPool) Put(b []byte) { copyBuffers.Put(&b) }

func (b *Broker) scrubString(s string) string {
	buf := []byte(s)
	_, scrub, _ := b.table()
	scrub.replace(buf, nil)
	return string(buf)
}

func (b *Broker) secret(name string) *brokered {
	secrets, _, _ := b.table()
	for _, s := range secrets {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// decide is the one decision for a fake found in one place of a request,
// each audited: refused (403) where its secret is not bound to target,
// unswapped where its binding does not name the place (a path never is),
// denied where the method, path or channel is not allowed, else swapped.
func (b *Broker) decide(s *brokered, r *http.Request, target, place string, bound, secure bool) (swap bool, code int, msg string) {
	if !bound {
		b.audit(Event{Kind: "refused", Secret: s.Name, Host: target, Place: place})
		return false, http.StatusForbidden, s.Name + "'s fake is not sent to " + target + ": the secret is not bound to it"
	}
	if place == "path" || !s.swapsIn(place) {
		b.audit(Event{Kind: "unswapped", Secret: s.Name, Host: target, Place: place})
		return false, 0, ""
	}
	if code, msg := s.allowed(r, secure); code != 0 {
		b.audit(Event{Kind: "denied", Secret: s.Name, Host: target, Place: msg})
		return false, code, msg
	}
	b.audit(Event{Kind: "swapped", Secret: s.Name, Host: target, Place: place})
	return true, 0, ""
}

// swap replaces, in the request's headers and query, each fake by its real
// value where the fake's binding allows it: a place its In names, on a
// host it is bound to (or its base-URL route), over TLS or to loopback,
// with an allowed method and path. A fake sent where its secret is not
// bound is refused (403); one in another place of its own host goes
// through as the fake. It returns a status and message to refuse with, or
// 0.
func (b *Broker) swap(r *http.Request, secrets []*brokered, target string, base *brokered, secure bool) (int, string) {
	names := make([]string, 0, len(r.Header))
	for k := range r.Header {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, s := range secrets {
		bound := base != nil && s.Name == base.Name || s.boundTo(target)
		for _, k := range names {
			vs := r.Header[k]
			for i, v := range vs {
				if !strings.Contains(v, s.fake) && !basicHolds(v, s.fake) {
					continue
				}
				swap, code, msg := b.decide(s, r, target, "header:"+k, bound, secure)
				if code != 0 {
					return code, msg
				}
				if swap {
					vs[i] = swapValue(v, s.fake, b.current(s))
				}
			}
		}
		q := r.URL.Query()
		changed := false
		for k, vs := range q {
			for i, v := range vs {
				if !strings.Contains(v, s.fake) {
					continue
				}
				swap, code, msg := b.decide(s, r, target, "query:"+k, bound, secure)
				if code != 0 {
					return code, msg
				}
				if swap {
					vs[i] = strings.ReplaceAll(v, s.fake, b.current(s))
					changed = true
				}
			}
		}
		if changed {
			r.URL.RawQuery = q.Encode()
		}
		if strings.Contains(r.URL.Path, s.fake) || strings.Contains(r.URL.RawPath, s.fake) {
			// A path is never a place to swap in: refused or unswapped.
			if _, code, msg := b.decide(s, r, target, "path", bound, secure); code != 0 {
				return code, msg
			}
		}
	}
	return 0, ""
}

// current returns s's real value, asking Config.Reload first: a new value
// replaces the held one, and responses are scrubbed of it as well (to
// the fake, or where its length differs, to a fake of its own shape).
func (b *Broker) current(s *brokered) string {
	if b.cfg.Reload == nil {
		b.smu.RLock()
		defer b.smu.RUnlock()
		return s.real
	}
	v, ok := b.cfg.Reload(s.Name)
	b.smu.RLock()
	cur := s.real
	b.smu.RUnlock()
	if !ok || v == "" || v == cur {
		// The common case, on every swap: nothing changed, and no
		// request waits for another's write lock.
		return cur
	}
	b.smu.Lock()
	defer b.smu.Unlock()
	if v != s.real {
		s.real = v
		to := s.fake
		if len(v) != len(to) {
			to = Fake(b.cfg.Key, s.Name, v)
		}
		b.scrubPairs = append(b.scrubPairs, scrubPairs(s.Name, v, to)...)
		b.scrub = newPatterns(b.scrubPairs)
		b.audit(Event{Kind: "reloaded", Secret: s.Name})
	}
	return s.real
}

// swapsIn reports whether place ("header:Name", "query:name") is one the
// binding swaps in. Header names compare without case.
func (s *brokered) swapsIn(place string) bool {
	kind, name, _ := strings.Cut(place, ":")
	for _, in := range s.in {
		k, n, _ := strings.Cut(in, ":")
		if k != kind {
			continue
		}
		if kind == "header" && strings.EqualFold(n, name) || kind != "header" && n == name {
			return true
		}
	}
	return false
}

// allowed checks the binding's methods and paths, and that the real value
// would not cross a network in the clear.
func (s *brokered) allowed(r *http.Request, secure bool) (int, string) {
	if !secure {
		return http.StatusForbidden, s.Name + " is not sent in the clear: use https"
	}
	if len(s.Methods) > 0 && !slices.ContainsFunc(s.Methods, func(m string) bool { return strings.EqualFold(m, r.Method) }) {
		return http.StatusForbidden, s.Name + " is not given to " + r.Method + " requests"
	}
	if len(s.Paths) > 0 && !slices.ContainsFunc(s.Paths, func(p string) bool { return strings.HasPrefix(r.URL.Path, p) }) {
		return http.StatusForbidden, s.Name + " is not given to " + r.URL.Path
	}
	return 0, ""
}

// basicHolds reports whether v is a Basic credential whose user or
// password holds fake.
func basicHolds(v, fake string) bool {
	scheme, cred, ok := strings.Cut(v, " ")
	if !ok || !strings.EqualFold(scheme, "Basic") {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred))
	return err == nil && strings.Contains(string(raw), fake)
}

// swapValue replaces fake by real in a header value, inside a Basic
// credential's encoding too.
func swapValue(v, fake, real string) string {
	if scheme, cred, ok := strings.Cut(v, " "); ok && strings.EqualFold(scheme, "Basic") {
		if raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(cred)); err == nil && strings.Contains(string(raw), fake) {
			return scheme + " " + base64.StdEncoding.EncodeToString([]byte(strings.ReplaceAll(string(raw), fake, real)))
		}
	}
	return strings.ReplaceAll(v, fake, real)
}
