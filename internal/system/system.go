// Package system assembles the BBS's processes from their parts: the API, the worker process
// (workflows, activities, placement, the cell watch and the convergence schedule), a cell
// agent, the router, the ssh proxy and daemon, and the tps-watcher. It is the one composition
// root: every `bbs` subcommand, the dev mode, the test cluster and the benchmarks build the
// system through it, each with a config struct, so that what the tests exercise is what
// production runs.
package system

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
)

// Listen opens addr for a server of ours. Loopback addresses may serve plain HTTP; any other
// address requires mutual TLS (serverTLS, with ClientAuth set), because whoever reaches the
// API or a cell can make cells run any command (as BBS does). It returns the URL scheme the
// listener serves.
func Listen(addr string, serverTLS *tls.Config) (net.Listener, string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, "", fmt.Errorf("listen address %q: %w", addr, err)
	}
	loopback := host == "localhost"
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		loopback = true
	}
	if !loopback && (serverTLS == nil || serverTLS.ClientAuth != tls.RequireAndVerifyClientCert) {
		return nil, "", errors.New("refusing to listen on " + addr + " without mutual TLS: set BBS_TLS_CERT_FILE, " +
			"BBS_TLS_KEY_FILE and BBS_TLS_CLIENT_CA_FILE, or listen on 127.0.0.1")
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", err
	}
	if serverTLS == nil {
		return ln, "http", nil
	}
	return tls.NewListener(ln, serverTLS), "https", nil
}
