package daemoncli

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/envsieve/envsieve/internal/sigv4"
)

// StandInArg is the hidden verb behind `envsieve verify`'s stand-in for
// the hosts of its canary logins (envsieve links no TLS: it lives here).
const StandInArg = "__verify-standin"

// StandInLogin is one canary login the stand-in checks: Basic auth of
// User and Password on Host or, with AWSKeyID set, a SigV4 signature of
// that access key id and the secret Password. It comes over stdin, never
// argv.
type StandInLogin struct {
	Host     string `json:"host"`
	User     string `json:"user,omitempty"`
	Password string `json:"password"`
	AWSKeyID string `json:"aws_key_id,omitempty"`
}

// StandInReady is the stand-in's first line: the HTTP proxy through which
// its hosts are reached (CONNECT to HOST:443, then TLS with a certificate
// of CA's), or an error.
type StandInReady struct {
	Proxy string `json:"proxy,omitempty"`
	CA    string `json:"ca,omitempty"`
	Error string `json:"error,omitempty"`
}

// StandInSeen is one request the stand-in answered: to which host, and
// whether it carried the login's real value ("real"), another Basic
// credential ("other") or none ("none"). Never a value.
type StandInSeen struct {
	Host  string `json:"host"`
	Login string `json:"login"`
}

func standInCmd() *cobra.Command {
	return &cobra.Command{
		Use:    StandInArg,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return runStandIn(os.Stdin, os.Stdout)
		},
	}
}

// runStandIn reads the logins from in (one JSON array), serves them until
// in closes, and writes to out its StandInReady, then one StandInSeen a
// request.
func runStandIn(in io.Reader, out io.Writer) error {
	var mu sync.Mutex
	enc := json.NewEncoder(out)
	send := func(v any) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(v)
	}
	r := bufio.NewReader(in)
	var logins []StandInLogin
	if err := json.NewDecoder(r).Decode(&logins); err != nil {
		send(StandInReady{Error: "stand-in: read the logins: " + err.Error()})
		return nil
	}
	byHost := map[string]StandInLogin{}
	var names []string
	for _, l := range logins {
		if l.Host == "" || l.Password == "" {
			send(StandInReady{Error: "stand-in: a login without host or password"})
			return nil
		}
		byHost[l.Host] = l
		names = append(names, l.Host)
	}
	caPEM, leaf, err := standInCerts(names)
	if err != nil {
		send(StandInReady{Error: "stand-in: " + err.Error()})
		return nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		send(StandInReady{Error: "stand-in: " + err.Error()})
		return nil
	}
	defer ln.Close()
	// Behind CONNECT, each tunnel is one TLS connection served by srv.
	tunnels := make(chan net.Conn)
	tl := &chanListener{c: tunnels, addr: ln.Addr(), done: make(chan struct{})}
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			host, _, err := net.SplitHostPort(req.Host)
			if err != nil {
				host = req.Host
			}
			l, ok := byHost[host]
			seen := StandInSeen{Host: host, Login: "none"}
			if ok && l.AWSKeyID != "" {
				seen.Login = awsLogin(req, l)
			} else if u, pw, has := req.BasicAuth(); has {
				seen.Login = "other"
				if ok && u == l.User && subtle.ConstantTimeCompare([]byte(pw), []byte(l.Password)) == 1 {
					seen.Login = "real"
				}
			}
			send(seen)
			if seen.Login != "real" {
				w.Header().Set("WWW-Authenticate", `Basic realm="envsieve verify"`)
				http.Error(w, "bad credentials", http.StatusUnauthorized)
				return
			}
			// A dumb-HTTP git repository with no refs; AWS's answer
			// does not matter.
			w.Header().Set("Content-Type", "text/plain")
		})}
	go srv.Serve(tls.NewListener(tl, &tls.Config{Certificates: []tls.Certificate{leaf}, MinVersion: tls.VersionTLS12}))
	proxy := &http.Server{ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			host, port, err := net.SplitHostPort(req.Host)
			if req.Method != http.MethodConnect || err != nil || port != "443" || byHost[host].Host == "" {
				http.Error(w, "the stand-in serves only its own hosts", http.StatusForbidden)
				return
			}
			hj, ok := w.(http.Hijacker)
			if !ok {
				http.Error(w, "no hijack", http.StatusInternalServerError)
				return
			}
			c, buf, err := hj.Hijack()
			if err != nil || buf.Reader.Buffered() > 0 {
				if c != nil {
					c.Close()
				}
				return
			}
			if _, err := c.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
				c.Close()
				return
			}
			select {
			case tunnels <- c:
			case <-tl.done:
				c.Close()
			}
		})}
	go proxy.Serve(ln)
	send(StandInReady{Proxy: "http://" + ln.Addr().String(), CA: string(caPEM)})
	// Until verify closes its end (or dies).
	_, _ = io.Copy(io.Discard, r)
	proxy.Close()
	tl.Close()
	srv.Close()
	return nil
}

// chanListener is a net.Listener of the connections sent on c.
type chanListener struct {
	c    chan net.Conn
	addr net.Addr
	once sync.Once
	done chan struct{}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.c:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }

// standInCerts makes a CA and a leaf of it for names, both for this run
// only.
func standInCerts(names []string) ([]byte, tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "envsieve verify stand-in CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("make the CA: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, err
	}
	der, err := x509.CreateCertificate(rand.Reader, &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "envsieve verify stand-in"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour), DNSNames: names, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("make the leaf: %w", err)
	}
	if len(names) == 0 {
		return nil, tls.Certificate{}, errors.New("no host to serve")
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// awsLogin says whether req is signed (SigV4, in its headers) with l's
// access key id and real secret: "real", "other" (another key, or a
// signature that does not verify), or "none".
func awsLogin(req *http.Request, l StandInLogin) string {
	if req.Header.Get("Authorization") == "" {
		return "none"
	}
	s, err := sigv4.Parse(req)
	if err != nil || s.AccessKeyID != l.AWSKeyID {
		return "other"
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		return "other"
	}
	sum := sha256.Sum256(body)
	if s.Verify(req, l.Password, hex.EncodeToString(sum[:])) != nil {
		return "other"
	}
	return "real"
}
