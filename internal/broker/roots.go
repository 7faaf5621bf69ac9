package broker

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"os"
	"slices"
)

// SystemRoots returns the PEM bundle of system roots the child's bundle
// starts with: the file at path, or where path is "", the first of the
// usual places that can be read; nil when there is none.
func SystemRoots(path string) []byte {
	cands := systemBundles
	if path != "" {
		cands = []string{path}
	}
	for _, c := range cands {
		if data, err := os.ReadFile(c); err == nil {
			return data
		}
	}
	return nil
}

// certSums returns the SHA-256 of each certificate's DER in the PEM data
// (no certificate is parsed: only the PEM is decoded).
func certSums(data []byte) map[[32]byte]bool {
	sums := map[[32]byte]bool{}
	for b := range certBlocks(data) {
		sums[sha256.Sum256(b.Bytes)] = true
	}
	return sums
}

// certBlocks yields each CERTIFICATE block of the PEM data, in order.
func certBlocks(data []byte) func(yield func(*pem.Block) bool) {
	return func(yield func(*pem.Block) bool) {
		for {
			var b *pem.Block
			if b, data = pem.Decode(data); b == nil {
				return
			}
			if b.Type == "CERTIFICATE" && !yield(b) {
				return
			}
		}
	}
}

// UserRoots reads the CA files the user's own environment names (files,
// in order: several variables often name one file, often the system
// bundle itself) and returns their certificates as PEM, each once (what
// the child's clients trust besides the system roots: Config.UserRoots),
// and, parsed, those the system bundle sys does not hold (what the
// broker's own pool adds to the system's: Config.UpstreamRoots). Each file
// is read once; one that is the system bundle itself comes first, as it
// is, and a certificate the system bundle holds is not parsed again (a
// bundle of a hundred and fifty roots named by five variables cost a
// sealed launch 70 ms). A file that cannot be read, and
// a block that is not a certificate that parses, are left out: the
// user's own clients could not use them either.
func UserRoots(files []string, sys []byte) (roots []byte, extra []*x509.Certificate) {
	var others []byte                 // PEM, each certificate once
	var inSys, seen map[[32]byte]bool // made for the first file that is not the system bundle
	hasSys, readFile := false, map[string]bool{}
	for _, f := range files {
		if f == "" || readFile[f] {
			continue
		}
		readFile[f] = true
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if len(sys) > 0 && bytes.Equal(data, sys) {
			hasSys = true
			continue
		}
		if seen == nil {
			inSys, seen = certSums(sys), map[[32]byte]bool{}
		}
		for b := range certBlocks(data) {
			sum := sha256.Sum256(b.Bytes)
			if seen[sum] || hasSys && inSys[sum] {
				continue
			}
			if !inSys[sum] {
				c, err := x509.ParseCertificate(b.Bytes)
				if err != nil {
					continue
				}
				extra = append(extra, c)
			}
			seen[sum] = true
			others = append(others, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes})...)
		}
	}
	if !hasSys {
		return others, extra
	}
	// The system bundle first, then each other certificate, less those it
	// holds that a file before it had (notIn takes the rest as it is).
	roots = slices.Clone(withNewline(sys))
	for b := range certBlocks(others) {
		if !inSys[sha256.Sum256(b.Bytes)] {
			roots = append(roots, pem.EncodeToMemory(b)...)
		}
	}
	return roots, extra
}

// withNewline returns data ending in a newline (a copy when one is added).
func withNewline(data []byte) []byte {
	if len(data) > 0 && data[len(data)-1] != '\n' {
		return append(slices.Clip(data), '\n')
	}
	return data
}

// notIn returns the certificates of the PEM data user that sys does not
// hold, as PEM. Where user starts with sys itself (UserRoots puts the
// system bundle first when a variable names it), the rest is taken as it
// is: what UserRoots puts after it, the system bundle does not hold.
func notIn(user, sys []byte) []byte {
	if len(user) == 0 {
		return nil // the system bundle is not decoded for nothing
	}
	sys = withNewline(sys)
	if len(sys) > 0 && bytes.HasPrefix(user, sys) {
		return user[len(sys):]
	}
	inSys := certSums(sys)
	if len(inSys) == 0 {
		return user
	}
	var out []byte
	for b := range certBlocks(user) {
		if !inSys[sha256.Sum256(b.Bytes)] {
			out = append(out, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: b.Bytes})...)
		}
	}
	return out
}
