package broker

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// testRoot returns a self-signed CA certificate named name, as PEM.
func testRoot(t *testing.T, name string) []byte {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true,
		BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// names returns the common names of the PEM data's certificates, in order.
func names(t *testing.T, data []byte) string {
	t.Helper()
	var out []string
	for b := range certBlocks(data) {
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatalf("a block of the roots does not parse: %v", err)
		}
		out = append(out, c.Subject.CommonName)
	}
	return strings.Join(out, ",")
}

// TestUserRootsOnce: the CA files the user's variables name give each
// certificate once, whether a dozen variables name one file, two files
// hold the same certificate, or a file is the system bundle itself; only
// what the system bundle does not hold is parsed for the broker's own
// pool; what is not a certificate is left out.
func TestUserRootsOnce(t *testing.T) {
	dir := t.TempDir()
	sys := slices.Concat(testRoot(t, "sys1"), testRoot(t, "sys2"))
	company, other := testRoot(t, "company"), testRoot(t, "other")
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sysFile := write("sys.pem", sys)
	companyFile := write("company.pem", company)
	companyCopy := write("company-copy.pem", company)
	mixed := write("mixed.pem", slices.Concat(company, firstCert(sys), other))
	garbage := write("garbage.pem", []byte("-----BEGIN CERTIFICATE-----\nY29tcGFueQ==\n-----END CERTIFICATE-----\nnot pem at all\n"))
	dozen := make([]string, 12)
	for i := range dozen {
		dozen[i] = sysFile
	}
	for _, tc := range []struct {
		name  string
		files []string
		sys   []byte
		roots string // common names, in order
		extra string
		asSys bool // the roots start with the system bundle as it is
	}{
		{"a dozen variables name the system bundle", dozen, sys, "sys1,sys2", "", true},
		{"the system bundle and a company CA", []string{sysFile, companyFile}, sys, "sys1,sys2,company", "company", true},
		{"a company CA, then the system bundle", []string{companyFile, "", sysFile}, sys, "sys1,sys2,company", "company", true},
		{"one certificate in two files", []string{companyFile, companyCopy, companyFile}, sys, "company", "company", false},
		{"a bundle holding a system root", []string{mixed}, sys, "company,sys1,other", "company,other", false},
		{"the system root before the system bundle", []string{mixed, sysFile}, sys, "sys1,sys2,company,other", "company,other", true},
		{"not a certificate, a missing file", []string{garbage, filepath.Join(dir, "missing"), companyFile}, sys, "company", "company", false},
		{"no system bundle", []string{sysFile}, nil, "sys1,sys2", "sys1,sys2", true}, // the same PEM again
		{"no variable names a file", nil, sys, "", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			roots, extra := UserRoots(tc.files, tc.sys)
			if got := names(t, roots); got != tc.roots {
				t.Errorf("roots %q, want %q", got, tc.roots)
			}
			var got []string
			for _, c := range extra {
				got = append(got, c.Subject.CommonName)
			}
			if strings.Join(got, ",") != tc.extra {
				t.Errorf("parsed for the pool %q, want %q", strings.Join(got, ","), tc.extra)
			}
			if bytes.HasPrefix(roots, sys) != tc.asSys {
				t.Errorf("the roots start with the system bundle as it is: %v, want %v", !tc.asSys, tc.asSys)
			}
			// The bundle the child trusts holds each certificate once.
			bundle := slices.Concat(tc.sys, notIn(roots, tc.sys))
			seen := map[string]bool{}
			for _, n := range strings.Split(names(t, bundle), ",") {
				if n != "" && seen[n] {
					t.Errorf("%s twice in the bundle", n)
				}
				seen[n] = true
			}
		})
	}
}

// firstCert returns the first certificate of the PEM data, as PEM.
func firstCert(data []byte) []byte {
	b, _ := pem.Decode(data)
	return pem.EncodeToMemory(b)
}
