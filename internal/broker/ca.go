package broker

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync"
	"time"
)

// authority is a launch's certificate authority: its key lives in this
// process's memory only, and its name constraints permit only the bound
// hosts, so that even a stolen certificate of it vouches for nothing else.
type authority struct {
	key  *ecdsa.PrivateKey
	cert *x509.Certificate
	pem  []byte

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// newAuthority makes the CA for hosts (names, IP addresses, or *.suffix
// patterns; ports are ignored).
func newAuthority(hosts []string) (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("broker CA key: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:                serial,
		Subject:                     pkix.Name{CommonName: "envsieve broker (this launch only)", Organization: []string{"envsieve"}},
		NotBefore:                   now.Add(-time.Hour),
		NotAfter:                    now.Add(7 * 24 * time.Hour),
		KeyUsage:                    x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid:       true,
		IsCA:                        true,
		MaxPathLenZero:              true,
		PermittedDNSDomainsCritical: true,
	}
	for _, h := range hosts {
		name := hostOnly(h)
		if ip := net.ParseIP(name); ip != nil {
			bits := 32
			if ip.To4() == nil {
				bits = 128
			}
			tmpl.PermittedIPRanges = append(tmpl.PermittedIPRanges, &net.IPNet{IP: ip, Mask: net.CIDRMask(bits, bits)})
			continue
		}
		// "*.example.com" permits the subdomains; x509 constraints say
		// ".example.com" for that. A plain name permits itself and its
		// subdomains, which a leaf is only ever made for when bound.
		if s, ok := strings.CutPrefix(name, "*."); ok {
			name = "." + s
		}
		tmpl.PermittedDNSDomains = append(tmpl.PermittedDNSDomains, name)
	}
	// An empty list would permit everything: where nothing of a kind is
	// bound, permit only what cannot exist.
	if len(tmpl.PermittedDNSDomains) == 0 {
		tmpl.PermittedDNSDomains = []string{"envsieve.invalid"}
	}
	if len(tmpl.PermittedIPRanges) == 0 {
		tmpl.PermittedIPRanges = []*net.IPNet{{IP: net.IPv4zero.To4(), Mask: net.CIDRMask(32, 32)}, {IP: net.IPv6zero, Mask: net.CIDRMask(128, 128)}}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("broker CA: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{key: key, cert: cert, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		leaves: map[string]*tls.Certificate{}}, nil
}

// leaf returns a certificate for host (a DNS name or an IP address),
// made once and kept for the launch.
func (a *authority) leaf(host string) (*tls.Certificate, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if c := a.leaves[host]; c != nil {
		return c, nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		// No common name: OpenSSL checks a CN against the DNS constraints,
		// and an IP address there violates them. The SANs say it all.
		Subject:     pkix.Name{Organization: []string{"envsieve broker"}},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(7 * 24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("broker: certificate for %s: %w", host, err)
	}
	c := &tls.Certificate{Certificate: [][]byte{der, a.cert.Raw}, PrivateKey: key}
	a.leaves[host] = c
	return c, nil
}

// hostOnly strips a port from h ("host:port", "[v6]:port").
func hostOnly(h string) string {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return host
	}
	return strings.Trim(h, "[]")
}
