package clusterstack

import (
	"context"
	"crypto/tls"
	"fmt"
	"github.com/updatable-lrps/bbs/internal/boot"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/updatable-lrps/bbs/deploy"
)

// clusterCerts are the certificates of `bbs cluster`, in one directory as deploy/gen-certs.sh
// writes them: a CA, the server certificate every listener presents (the API replicas, the
// front, the cells, the Temporal server, whose services also call one another with it) and
// the client certificate every process presents to the others. Processes are given the
// files' paths; no key ever travels on a command line or in a log.
type clusterCerts struct{ dir string }

// file is the path of the certificate or key name.
func (c clusterCerts) file(name string) string { return filepath.Join(c.dir, name) }

// makeClusterCerts runs deploy/gen-certs.sh (embedded in the binary) into dir, which leaves
// a directory that has a CA already as it is: the cluster keeps its certificates across
// runs, and an operator may bring their own. The keys are readable by us alone, as every
// process of the cluster runs as us.
func makeClusterCerts(ctx context.Context, dir string) (clusterCerts, string, error) {
	script, err := os.CreateTemp("", "gen-certs-*.sh")
	if err != nil {
		return clusterCerts{}, "", err
	}
	defer os.Remove(script.Name())
	_, err = script.Write(deploy.GenCertsScript)
	if closeErr := script.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		return clusterCerts{}, "", err
	}
	cmd := exec.CommandContext(ctx, "bash", script.Name(), dir)
	cmd.Env = append(os.Environ(), "LEAF_KEY_MODE=0600")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return clusterCerts{}, "", fmt.Errorf("deploy/gen-certs.sh %s: %w: %s", dir, err, out)
	}
	return clusterCerts{dir: dir}, strings.TrimSpace(string(out)), nil
}

// serverEnv makes a bbs process's listeners require mutual TLS (boot.ServerTLS).
func (c clusterCerts) serverEnv() map[string]string {
	return map[string]string{"BBS_TLS_CERT_FILE": c.file("server.crt"), "BBS_TLS_KEY_FILE": c.file("server.key"),
		"BBS_TLS_CLIENT_CA_FILE": c.file("ca.crt")}
}

// peerEnv is what a bbs process presents and trusts when it calls the front, an API replica
// or a cell (boot.ClientTLS).
func (c clusterCerts) peerEnv() map[string]string {
	return map[string]string{"BBS_PEER_CA_FILE": c.file("ca.crt"), "BBS_CLIENT_CERT_FILE": c.file("client.crt"),
		"BBS_CLIENT_KEY_FILE": c.file("client.key")}
}

// temporalClient is what a client of the Temporal frontend presents and trusts.
func (c clusterCerts) temporalClient() boot.ClientTLS {
	return boot.ClientTLS{CAFile: c.file("ca.crt"), CertFile: c.file("client.crt"), KeyFile: c.file("client.key")}
}

// temporalEnv gives a bbs process temporalClient (its --temporal-tls-* flags).
func (c clusterCerts) temporalEnv() map[string]string {
	t := c.temporalClient()
	return map[string]string{"TEMPORAL_TLS_CA": t.CAFile, "TEMPORAL_TLS_CERT": t.CertFile, "TEMPORAL_TLS_KEY": t.KeyFile}
}

// temporalTLS is temporalClient for our own calls (the namespace's set-up).
func (c clusterCerts) temporalTLS() (*tls.Config, error) {
	t := c.temporalClient()
	return t.Config()
}

// temporalUIArgs are the Web UI's flags for reaching the frontend.
func (c clusterCerts) temporalUIArgs() []string {
	t := c.temporalClient()
	return []string{"--tls-ca", t.CAFile, "--tls-cert", t.CertFile, "--tls-key", t.KeyFile}
}

// temporalServerTLS is the global.tls section of the Temporal server's configuration: its
// frontend (gRPC and HTTP API) and its internal services (history, matching, worker) require
// client certificates from our CA; the services call one another with the server
// certificate, and its system worker calls the frontend with the client certificate.
// Ringpop's membership ports have no TLS in Temporal: they listen on 127.0.0.1 only.
func (c clusterCerts) temporalServerTLS() string {
	ca, crt, key := c.file("ca.crt"), c.file("server.crt"), c.file("server.key")
	t := c.temporalClient()
	server := fmt.Sprintf(`      server:
        certFile: %q
        keyFile: %q
        requireClientAuth: true
        clientCaFiles: [%q]
      client:
        rootCaFiles: [%q]
`, crt, key, ca, ca)
	return "  tls:\n    internode:\n" + server + "    frontend:\n" + server + fmt.Sprintf(`    systemWorker:
      certFile: %q
      keyFile: %q
      client:
        rootCaFiles: [%q]
`, t.CertFile, t.KeyFile, t.CAFile)
}
