package devcerts_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"

	"github.com/updatable-lrps/bbs/internal/devcerts"
)

// Ensure makes a set once — a server certificate the CA vouches for on the loopback names, a
// client certificate for client auth, keys private to the user — and leaves it alone after.
func TestEnsureMakesASetOnceThatVerifies(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	f, err := devcerts.Ensure(dir)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, _ := os.ReadFile(f.CA)
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("no CA certificate")
	}
	leaf := func(certFile, keyFile string) *x509.Certificate {
		t.Helper()
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			t.Fatal(err)
		}
		c, err := x509.ParseCertificate(pair.Certificate[0])
		if err != nil {
			t.Fatal(err)
		}
		if st, _ := os.Stat(keyFile); st.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", keyFile, st.Mode().Perm())
		}
		return c
	}
	server := leaf(f.ServerCert, f.ServerKey)
	for _, name := range []string{"127.0.0.1", "localhost", "::1"} {
		if _, err := server.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
			t.Errorf("server certificate for %s: %v", name, err)
		}
	}
	client := leaf(f.ClientCert, f.ClientKey)
	if _, err := client.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("client certificate: %v", err)
	}

	again, err := devcerts.Ensure(dir)
	if err != nil {
		t.Fatal(err)
	}
	if caAgain, _ := os.ReadFile(again.CA); !bytes.Equal(caAgain, caPEM) {
		t.Error("a second Ensure made a new CA")
	}
}
