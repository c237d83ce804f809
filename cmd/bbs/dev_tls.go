package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"github.com/updatable-lrps/bbs/internal/boot"
	"net"
	"os"
	"path/filepath"

	"github.com/updatable-lrps/bbs/internal/devcerts"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/protocol"
)

func protocolTLSListenFlag(fs *flag.FlagSet) *string {
	return fs.String("bbs-tls-listen", boot.EnvOr("BBS_PROTOCOL_TLS_LISTEN_ADDR", "127.0.0.1:8891"),
		"address to serve the BBS protocol over mutual TLS too, with certificates made in <data-dir>/certs (cfdot speaks only https); empty: not served [BBS_PROTOCOL_TLS_LISTEN_ADDR]")
}

// listenDevProtocolTLS listens on addr for the dev stack's mutual-TLS BBS protocol, with the
// certificates of dataDir/certs (made on the first run). An empty addr listens nowhere.
func listenDevProtocolTLS(addr, dataDir string) (net.Listener, devcerts.Files, error) {
	if addr == "" {
		return nil, devcerts.Files{}, nil
	}
	certs, err := devcerts.Ensure(filepath.Join(dataDir, "certs"))
	if err != nil {
		return nil, certs, err
	}
	cert, err := tls.LoadX509KeyPair(certs.ServerCert, certs.ServerKey)
	if err != nil {
		return nil, certs, err
	}
	caPEM, err := os.ReadFile(certs.CA)
	if err != nil {
		return nil, certs, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, certs, errors.New("no certificate in " + certs.CA)
	}
	ln, _, err := system.Listen(addr, protocol.TLSConfig(&tls.Config{
		Certificates: []tls.Certificate{cert}, ClientCAs: pool, ClientAuth: tls.RequireAndVerifyClientCert}))
	return ln, certs, err
}

// protocolTLSLine says where the mutual-TLS BBS protocol is served and how cfdot reaches it,
// for the banner.
func protocolTLSLine(a *system.API, certs devcerts.Files) string {
	if a.ProtocolTLSURL() == "" {
		return "not served over TLS (--bbs-tls-listen is empty)"
	}
	return fmt.Sprintf(`%s  (mutual TLS; certificates in %s)
                cfdot: export BBS_URL=%s CA_CERT_FILE=%s CLIENT_CERT_FILE=%s CLIENT_KEY_FILE=%s`,
		a.ProtocolTLSURL(), certs.Dir, a.ProtocolTLSURL(), certs.CA, certs.ClientCert, certs.ClientKey)
}
