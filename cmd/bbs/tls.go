package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
)

// tlsFlags are the mutual-TLS files a non-loopback listener requires.
type tlsFlags struct {
	certFile, keyFile, clientCAFile string
}

func (t *tlsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.certFile, "tls-cert", envOr("BBS_TLS_CERT_FILE", ""), "server certificate (PEM) [BBS_TLS_CERT_FILE]")
	fs.StringVar(&t.keyFile, "tls-key", envOr("BBS_TLS_KEY_FILE", ""), "server private key (PEM) [BBS_TLS_KEY_FILE]")
	fs.StringVar(&t.clientCAFile, "tls-client-ca", envOr("BBS_TLS_CLIENT_CA_FILE", ""), "CA that signs client certificates (PEM) [BBS_TLS_CLIENT_CA_FILE]")
}

func (t *tlsFlags) enabled() bool { return t.certFile != "" || t.keyFile != "" || t.clientCAFile != "" }

// serverConfig is the mutual-TLS configuration of a server, or nil when no TLS flag is set
// (system.Listen then allows loopback only).
func (t *tlsFlags) serverConfig() (*tls.Config, error) {
	if !t.enabled() {
		return nil, nil
	}
	return t.config()
}

func (t *tlsFlags) config() (*tls.Config, error) {
	if t.certFile == "" || t.keyFile == "" || t.clientCAFile == "" {
		return nil, errors.New("mutual TLS needs all of BBS_TLS_CERT_FILE, BBS_TLS_KEY_FILE and BBS_TLS_CLIENT_CA_FILE")
	}
	cert, err := tls.LoadX509KeyPair(t.certFile, t.keyFile)
	if err != nil {
		return nil, fmt.Errorf("load TLS key pair: %w", err)
	}
	caPEM, err := os.ReadFile(t.clientCAFile)
	if err != nil {
		return nil, fmt.Errorf("read client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("no certificate found in %s", t.clientCAFile)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// clientTLSFlags are what a client needs to call a mutual-TLS peer (the API, a cell): the
// CA that signs the peer's certificate and our own certificate.
type clientTLSFlags struct {
	caFile, certFile, keyFile string
}

func (t *clientTLSFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&t.caFile, "peer-ca", envOr("BBS_PEER_CA_FILE", ""), "CA of the certificates of the API and cells we call (PEM) [BBS_PEER_CA_FILE]")
	fs.StringVar(&t.certFile, "client-cert", envOr("BBS_CLIENT_CERT_FILE", ""), "client certificate for mutual TLS (PEM) [BBS_CLIENT_CERT_FILE]")
	fs.StringVar(&t.keyFile, "client-key", envOr("BBS_CLIENT_KEY_FILE", ""), "client private key (PEM) [BBS_CLIENT_KEY_FILE]")
}

// config is nil when no client TLS is configured (a plain loopback API).
func (t *clientTLSFlags) config() (*tls.Config, error) {
	if t.caFile == "" && t.certFile == "" && t.keyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.caFile != "" {
		pem, err := os.ReadFile(t.caFile)
		if err != nil {
			return nil, fmt.Errorf("read peer CA: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no certificate found in %s", t.caFile)
		}
	}
	if t.certFile != "" || t.keyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.certFile, t.keyFile)
		if err != nil {
			return nil, fmt.Errorf("load client key pair: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
