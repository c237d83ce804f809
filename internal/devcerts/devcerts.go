// Package devcerts makes the certificates of a development stack: a CA of its own, a server
// certificate for the loopback names and a client certificate, written once into a directory
// and reused by later runs. `make run` serves the BBS protocol over mutual TLS with them
// beside its plain listener, because cfdot, the operator's CLI, speaks only https with a
// client certificate. They are for one machine's loopback: a deployment brings its own PKI
// (deploy/gen-certs.sh makes a set for the compose stack and make cluster).
package devcerts

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// Files are the paths of a set of certificates, all PEM.
type Files struct {
	Dir                   string
	CA                    string // ca.crt: signs the other two
	ServerCert, ServerKey string // server.crt, server.key: localhost, 127.0.0.1, ::1
	ClientCert, ClientKey string // client.crt, client.key
}

// In names the files of a set in dir.
func In(dir string) Files {
	return Files{Dir: dir, CA: filepath.Join(dir, "ca.crt"),
		ServerCert: filepath.Join(dir, "server.crt"), ServerKey: filepath.Join(dir, "server.key"),
		ClientCert: filepath.Join(dir, "client.crt"), ClientKey: filepath.Join(dir, "client.key")}
}

// validity is how long the certificates are valid: long enough that a kept data directory
// does not surprise anyone, short enough to stay within what TLS clients accept (825 days).
const validity = 825 * 24 * time.Hour

// Ensure returns the set in dir, making it first when any file is missing. Keys are RSA
// (the BBS protocol's clients offer only ECDHE-RSA suites under TLS 1.2) and written 0600;
// the set is written to a scratch directory and moved into place, so that an interrupted run
// leaves either a whole set or none.
func Ensure(dir string) (Files, error) {
	f := In(dir)
	if f.complete() {
		return f, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return f, err
	}
	scratch, err := os.MkdirTemp(filepath.Dir(dir), ".certs-")
	if err != nil {
		return f, err
	}
	defer os.RemoveAll(scratch)
	if err := generate(In(scratch)); err != nil {
		return f, fmt.Errorf("generate certificates: %w", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return f, err
	}
	return f, os.Rename(scratch, dir)
}

// renewBefore is how long before its certificates expire a set is made anew, so that a
// data directory kept for years never serves an expired certificate.
const renewBefore = 30 * 24 * time.Hour

// complete reports whether the set is whole and its certificates valid for renewBefore yet.
func (f Files) complete() bool {
	for _, p := range []string{f.CA, f.ServerCert, f.ServerKey, f.ClientCert, f.ClientKey} {
		if _, err := os.Stat(p); err != nil {
			return false
		}
	}
	for _, p := range []string{f.CA, f.ServerCert, f.ClientCert} {
		b, err := os.ReadFile(p)
		if err != nil {
			return false
		}
		block, _ := pem.Decode(b)
		if block == nil {
			return false
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil || time.Now().Add(renewBefore).After(c.NotAfter) {
			return false
		}
	}
	return true
}

func generate(f Files) error {
	now := time.Now()
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	caTmpl := &x509.Certificate{
		Subject:   pkix.Name{CommonName: "bbs dev CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	caDER, err := sign(caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	leaf := func(name string, usage x509.ExtKeyUsage, certPath, keyPath string, ips []net.IP, dns []string) error {
		key, err := rsa.GenerateKey(rand.Reader, 2048)
		if err != nil {
			return err
		}
		der, err := sign(&x509.Certificate{
			Subject:   pkix.Name{CommonName: name},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(validity),
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips, DNSNames: dns,
		}, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		return errors.Join(writePEM(certPath, "CERTIFICATE", der, 0o644),
			writePEM(keyPath, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key), 0o600))
	}
	return errors.Join(
		writePEM(f.CA, "CERTIFICATE", caDER, 0o644),
		leaf("bbs dev server", x509.ExtKeyUsageServerAuth, f.ServerCert, f.ServerKey,
			[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, []string{"localhost"}),
		leaf("bbs dev client", x509.ExtKeyUsageClientAuth, f.ClientCert, f.ClientKey, nil, nil),
	)
}

func sign(tmpl, parent *x509.Certificate, pub *rsa.PublicKey, key *rsa.PrivateKey) ([]byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, err
	}
	tmpl.SerialNumber = serial
	return x509.CreateCertificate(rand.Reader, tmpl, parent, pub, key)
}

func writePEM(path, kind string, der []byte, mode os.FileMode) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), mode)
}
