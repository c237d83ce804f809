package compat

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// pki is a certificate authority with a server and a client certificate, and a client
// certificate of another authority, as PEM files in a temporary directory. Keys are RSA:
// BBS's TLS 1.2 cipher suites are ECDHE-RSA only.
type pki struct {
	caFile                    string
	serverCert, serverKey     string
	clientCert, clientKey     string
	otherClientCert, otherKey string
}

func newPKI(t *testing.T) pki {
	t.Helper()
	dir := t.TempDir()
	ca := newCA(t, "compat CA")
	other := newCA(t, "another CA")
	p := pki{caFile: filepath.Join(dir, "ca.crt")}
	writePEM(t, p.caFile, "CERTIFICATE", ca.cert.Raw)
	p.serverCert, p.serverKey = ca.issue(t, dir, "server", &x509.Certificate{
		Subject:     pkix.Name{CommonName: "bbs"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		DNSNames:    []string{"localhost"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	client := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "cloud-controller"},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	p.clientCert, p.clientKey = ca.issue(t, dir, "client", client)
	p.otherClientCert, p.otherKey = other.issue(t, dir, "other-client", client)
	return p
}

type authority struct {
	cert *x509.Certificate
	key  *rsa.PrivateKey
}

func newCA(t *testing.T, name string) authority {
	t.Helper()
	key := rsaKey(t)
	tmpl := &x509.Certificate{
		SerialNumber:          serial(t),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return authority{cert: cert, key: key}
}

// issue signs tmpl (subject, names and usage) with a new key and writes name.crt and
// name.key into dir.
func (a authority) issue(t *testing.T, dir, name string, tmpl *x509.Certificate) (certFile, keyFile string) {
	t.Helper()
	key := rsaKey(t)
	c := *tmpl
	c.SerialNumber = serial(t)
	c.NotBefore, c.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour)
	c.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	der, err := x509.CreateCertificate(rand.Reader, &c, a.cert, &key.PublicKey, a.key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(key))
	return certFile, keyFile
}

func rsaKey(t *testing.T) *rsa.PrivateKey {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial(t *testing.T) *big.Int {
	t.Helper()
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func writePEM(t *testing.T, path, kind string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
