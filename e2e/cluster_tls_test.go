package e2e

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// clusterClients are the three clients the cluster's listeners are tried with. All three
// trust the cluster's CA, so that they differ only in what they present: good the cluster's
// client certificate, noCert none, otherCA one just like it (same name, same key usage) from
// a CA of the test's own, presented whatever CAs the server asks for (crypto/tls would not
// offer it to a server that names other CAs, and the server would then see no certificate).
type clusterClients struct{ good, noCert, otherCA *tls.Config }

// newClusterClients reads the certificates `bbs cluster` made in dir.
func newClusterClients(t *testing.T, dir string) clusterClients {
	t.Helper()
	caPEM, err := os.ReadFile(filepath.Join(dir, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("no certificate in %s/ca.crt", dir)
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key"))
	if err != nil {
		t.Fatal(err)
	}
	other := certFromAnotherCA(t)
	c := clusterClients{
		good:    &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}},
		noCert:  &tls.Config{RootCAs: roots},
		otherCA: &tls.Config{RootCAs: roots},
	}
	c.otherCA.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &other, nil }
	return c
}

// certFromAnotherCA makes a CA and, signed by it, a client certificate with the subject and
// key usage of the cluster's.
func certFromAnotherCA(t *testing.T) tls.Certificate {
	t.Helper()
	caKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{Organization: []string{"bbs"}, CommonName: "bbs local CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		t.Fatal(err)
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{Organization: []string{"bbs"}, CommonName: "bbs-client"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// listener is one listener of the cluster: its address, and a real request of the protocol
// it serves (nil error: the server answered it).
type listener struct {
	addr  string
	serve func(ctx context.Context, cfg *tls.Config) error
}

// httpListener serves method url (a body-less request answered with a 2xx).
func httpListener(method, rawURL string) listener {
	u, err := url.Parse(rawURL)
	if err != nil {
		panic(err)
	}
	return listener{addr: u.Host, serve: func(ctx context.Context, cfg *tls.Config) error {
		req, err := http.NewRequestWithContext(ctx, method, rawURL, nil)
		if err != nil {
			return err
		}
		hc := http.Client{Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("%s %s: %s", method, rawURL, resp.Status)
		}
		return nil
	}}
}

// grpcListener serves gRPC's health check: any answer of the server's own (even "not
// serving", or no health service) means the call got through; Unavailable means it did not.
func grpcListener(addr string) listener {
	return listener{addr: addr, serve: func(ctx context.Context, cfg *tls.Config) error {
		conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(cfg)))
		if err != nil {
			return err
		}
		defer conn.Close()
		_, err = healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		if c := status.Code(err); c != codes.Unavailable && c != codes.DeadlineExceeded {
			return nil
		}
		return err
	}}
}

// serverAlert is the TLS alert with which the server at addr refuses a client with cfg, or
// nil when none comes within a second. The client sends nothing after its handshake, so the
// alert cannot be lost to a connection the server resets under a request (with TLS 1.3 the
// server checks the client's certificate after the client's side of the handshake is done).
func serverAlert(ctx context.Context, addr string, cfg *tls.Config) error {
	d := tls.Dialer{Config: cfg}
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(time.Second))
	_, err = conn.Read(make([]byte, 1))
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() {
		return nil
	}
	return err // nil: a gRPC server's first frame
}

// requireMutualTLS checks every listener: a client with the cluster's client certificate is
// served; a client without a certificate, or with another CA's, is refused: its request fails,
// and the server's TLS alert says why.
func requireMutualTLS(t *testing.T, clients clusterClients, listeners map[string]listener) {
	t.Helper()
	names := make([]string, 0, len(listeners))
	for name := range listeners {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		l := listeners[name]
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := l.serve(ctx, clients.good); err != nil {
				t.Errorf("with the cluster's client certificate: %v", err)
			}
			for _, c := range []struct {
				what string
				cfg  *tls.Config
			}{{"without a certificate", clients.noCert}, {"with a certificate from another CA", clients.otherCA}} {
				if err := l.serve(ctx, c.cfg); err == nil {
					t.Errorf("%s: served", c.what)
				}
				alert := serverAlert(ctx, l.addr, c.cfg)
				if alert == nil || !strings.Contains(alert.Error(), "remote error: tls: ") {
					t.Errorf("%s: no TLS alert from the server (%v)", c.what, alert)
					continue
				}
				t.Logf("%s: refused: %v", c.what, alert)
			}
		})
	}
}

// clusterListeners are the listeners of `bbs cluster` started with the given ports (see its
// --port-base): the front's two, each API replica's two, each cell's, and the Temporal
// server's frontend (gRPC and HTTP API) and internal services (history, matching; its worker
// service serves no gRPC). Ringpop's membership ports are not among them: Temporal has no TLS
// for them.
func clusterListeners(c client, apiPort, protocolPort, base, temporalPort, apiReplicas, cells int) map[string]listener {
	https := func(port int, path string) string { return fmt.Sprintf("https://127.0.0.1:%d%s", port, path) }
	l := map[string]listener{
		"lb/api":                 httpListener(http.MethodPost, https(apiPort, "/v1/ping")),
		"lb/bbs-protocol":        httpListener(http.MethodPost, https(protocolPort, "/v1/ping")),
		"temporal/frontend":      grpcListener(fmt.Sprintf("127.0.0.1:%d", temporalPort)),
		"temporal/frontend-http": httpListener(http.MethodGet, https(base+50, "/api/v1/system-info")),
		"temporal/history":       grpcListener(fmt.Sprintf("127.0.0.1:%d", base+51)),
		"temporal/matching":      grpcListener(fmt.Sprintf("127.0.0.1:%d", base+52)),
	}
	for i := 1; i <= apiReplicas; i++ {
		l[fmt.Sprintf("api-%d/api", i)] = httpListener(http.MethodPost, https(base+10*(i-1)+1, "/v1/ping"))
		l[fmt.Sprintf("api-%d/bbs-protocol", i)] = httpListener(http.MethodPost, https(base+10*(i-1)+2, "/v1/ping"))
	}
	var list struct {
		Cells []struct {
			CellID     string `json:"cell_id"`
			RepAddress string `json:"rep_address"`
		} `json:"cells"`
	}
	c.mustPost("/v1/cells/list", nil, &list)
	if len(list.Cells) != cells {
		c.t.Errorf("%d cells listed, want %d", len(list.Cells), cells)
	}
	for _, cell := range list.Cells {
		l[cell.CellID] = httpListener(http.MethodGet, cell.RepAddress+"/v1/state")
	}
	return l
}
