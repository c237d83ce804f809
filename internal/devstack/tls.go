package devstack

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"os"
	"path/filepath"

	"github.com/updatable-lrps/bbs/internal/devcerts"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/protocol"
)

// listenProtocolTLS listens on addr for the dev stack's mutual-TLS BBS protocol (cfdot
// speaks only https), with the certificates of dataDir/certs (made on the first run). An
// empty addr listens nowhere.
func listenProtocolTLS(addr, dataDir string) (net.Listener, devcerts.Files, error) {
	if addr == "" {
		return nil, devcerts.Files{}, nil
	}
	certs, err := devcerts.Ensure(filepath.Join(dataDir, "certs"))
	if err != nil {
		return nil, certs, err
	}
	cfg, err := serverTLS(certs)
	if err != nil {
		return nil, certs, err
	}
	ln, _, err := system.Listen(addr, protocol.TLSConfig(cfg))
	return ln, certs, err
}

// serverTLS requires a client certificate of the dev CA and presents the dev server's.
func serverTLS(certs devcerts.Files) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(certs.ServerCert, certs.ServerKey)
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(certs.CA)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no certificate in " + certs.CA)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}, nil
}
