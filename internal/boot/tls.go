package boot

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
)

// ServerTLS are the mutual-TLS files a listener beyond loopback requires (system.Listen
// refuses one without them).
type ServerTLS struct {
	CertFile, KeyFile, ClientCAFile string
}

// Register registers --tls-cert, --tls-key and --tls-client-ca on fs.
func (t *ServerTLS) Register(fs *flag.FlagSet) {
	fs.StringVar(&t.CertFile, "tls-cert", EnvOr("BBS_TLS_CERT_FILE", ""), "server certificate (PEM) [BBS_TLS_CERT_FILE]")
	fs.StringVar(&t.KeyFile, "tls-key", EnvOr("BBS_TLS_KEY_FILE", ""), "server private key (PEM) [BBS_TLS_KEY_FILE]")
	fs.StringVar(&t.ClientCAFile, "tls-client-ca", EnvOr("BBS_TLS_CLIENT_CA_FILE", ""), "CA that signs client certificates (PEM) [BBS_TLS_CLIENT_CA_FILE]")
}

// enabled says whether any file is named: then all three must be.
func (t *ServerTLS) enabled() bool {
	return t.CertFile != "" || t.KeyFile != "" || t.ClientCAFile != ""
}

// Config is the mutual-TLS configuration of a server, or nil when no TLS file is named
// (system.Listen then allows loopback only). Naming some files but not all is an error.
func (t *ServerTLS) Config() (*tls.Config, error) {
	if !t.enabled() {
		return nil, nil
	}
	if t.CertFile == "" || t.KeyFile == "" || t.ClientCAFile == "" {
		return nil, errors.New("mutual TLS needs all of BBS_TLS_CERT_FILE, BBS_TLS_KEY_FILE and BBS_TLS_CLIENT_CA_FILE")
	}
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("load TLS key pair: %w", err)
	}
	caPEM, err := os.ReadFile(t.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("read client CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("no certificate found in %s", t.ClientCAFile)
	}
	return &tls.Config{
		Certificates: []tls.Certificate{cert},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	}, nil
}

// ClientTLS is what a client needs to call a mutual-TLS peer (the API, a cell, the Temporal
// frontend, Cloud Controller): the CA that signs the peer's certificate and our own
// certificate.
type ClientTLS struct {
	CAFile, CertFile, KeyFile string
}

// Register registers --peer-ca, --client-cert and --client-key on fs: what a bbs process
// presents to and trusts of the API and the cells it calls.
func (t *ClientTLS) Register(fs *flag.FlagSet) {
	fs.StringVar(&t.CAFile, "peer-ca", EnvOr("BBS_PEER_CA_FILE", ""), "CA of the certificates of the API and cells we call (PEM) [BBS_PEER_CA_FILE]")
	fs.StringVar(&t.CertFile, "client-cert", EnvOr("BBS_CLIENT_CERT_FILE", ""), "client certificate for mutual TLS (PEM) [BBS_CLIENT_CERT_FILE]")
	fs.StringVar(&t.KeyFile, "client-key", EnvOr("BBS_CLIENT_KEY_FILE", ""), "client private key (PEM) [BBS_CLIENT_KEY_FILE]")
}

// Config is the client's TLS configuration, or nil when no file is named (a plain loopback
// peer).
func (t *ClientTLS) Config() (*tls.Config, error) {
	if t.CAFile == "" && t.CertFile == "" && t.KeyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("read peer CA: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("no certificate found in %s", t.CAFile)
		}
	}
	if t.CertFile != "" || t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("load client key pair: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}
