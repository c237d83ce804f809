package compat

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"code.cloudfoundry.org/bbs"
	"code.cloudfoundry.org/bbs/models"
	"code.cloudfoundry.org/tlsconfig"
)

// TestMutualTLS starts `bbs api` on the dev system's database with its BBS-protocol listener
// behind mutual TLS, as Cloud Foundry deploys the BBS, and shows that the real client with a
// certificate of the configured CA is served, and that clients without a certificate, or
// with one of another CA, are refused.
func TestMutualTLS(t *testing.T) {
	p := newPKI(t)
	apiPort, bbsPort := mustFreePort(t), mustFreePort(t)
	env := []string{
		"DATABASE_URL=" + sys.dbURL,
		"TEMPORAL_ADDRESS=" + sys.temporal,
		"BBS_TLS_CERT_FILE=" + p.serverCert,
		"BBS_TLS_KEY_FILE=" + p.serverKey,
		"BBS_TLS_CLIENT_CA_FILE=" + p.caFile,
	}
	api, err := startProcess(sys.bbsBin, env, "api",
		"--listen", fmt.Sprintf("127.0.0.1:%d", apiPort),
		"--bbs-listen", fmt.Sprintf("127.0.0.1:%d", bbsPort))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := api.stop(30 * time.Second); err != nil {
			t.Errorf("stopping bbs api: %v", err)
		}
		if t.Failed() {
			t.Logf("bbs api output:\n%s", api.tail(100))
		}
	})
	url := fmt.Sprintf("https://127.0.0.1:%d", bbsPort)
	// The real client's own TLS configuration (its newSecureClient builds it so).
	clientTLS, err := tlsconfig.Build(
		tlsconfig.WithInternalServiceDefaults(),
		tlsconfig.WithIdentityFromFile(p.clientCert, p.clientKey),
	).Client(tlsconfig.WithAuthorityFromFile(p.caFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := waitPing(httpsClient(clientTLS), url, api, time.Minute); err != nil {
		t.Fatal(err)
	}

	t.Run("the real client with a certificate of the CA is served", func(t *testing.T) {
		c, err := bbs.NewClient(url, p.caFile, p.clientCert, p.clientKey, 0, 0)
		if err != nil {
			t.Fatalf("bbs.NewClient: %v", err)
		}
		log := testLogger(t)
		if !c.Ping(log, traceID(t)) {
			t.Fatal("Ping = false, want true")
		}
		// `bbs api` serves the dev system's store: what it writes, the dev system lists.
		if err := c.UpsertDomain(log, traceID(t), "compat-over-tls", time.Hour); err != nil {
			t.Fatalf("UpsertDomain: %v", err)
		}
		domains, err := newClient(t).Domains(log, traceID(t))
		if err != nil || !slices.Contains(domains, "compat-over-tls") {
			t.Errorf("the dev system's Domains = %q, %v; want compat-over-tls in it", domains, err)
		}
	})

	t.Run("TLS 1.2 with BBS's ECDHE-RSA AES-GCM suites", func(t *testing.T) {
		// Some versions of tlsconfig cap BBS's clients at TLS 1.2, where the cipher suites
		// are negotiated (in 1.3 they are not configurable).
		c := clientTLS.Clone()
		c.MaxVersion = tls.VersionTLS12
		conn, err := tls.Dial("tcp", strings.TrimPrefix(url, "https://"), c)
		if err != nil {
			t.Fatalf("TLS 1.2 handshake: %v", err)
		}
		state := conn.ConnectionState()
		conn.Close()
		if state.Version != tls.VersionTLS12 || !slices.Contains(c.CipherSuites, state.CipherSuite) {
			t.Errorf("negotiated %s with %s, want TLS 1.2 with one of the client's suites",
				tls.VersionName(state.Version), tls.CipherSuiteName(state.CipherSuite))
		}
		if err := waitPing(httpsClient(c), url, api, 5*time.Second); err != nil {
			t.Error(err)
		}
	})

	t.Run("a client without a certificate is refused", func(t *testing.T) {
		// The real client cannot even be built without one.
		if _, err := bbs.NewClient(url, p.caFile, "", "", 0, 0); err == nil {
			t.Error("bbs.NewClient without a client certificate succeeded")
		}
		noCert := &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}
		noCert.RootCAs.AppendCertsFromPEM(mustRead(t, p.caFile))
		status, _, err := postProto(httpsClient(noCert), url+"/v1/ping", nil, nil)
		if err == nil {
			t.Fatalf("POST /v1/ping without a client certificate answered %d", status)
		}
		if !strings.Contains(err.Error(), "tls") {
			t.Errorf("POST /v1/ping without a client certificate: %v, want a TLS error", err)
		}
		t.Logf("refused: %v", err)
	})

	t.Run("a client with a certificate of another CA is refused", func(t *testing.T) {
		c, err := bbs.NewClient(url, p.caFile, p.otherClientCert, p.otherKey, 0, 0)
		if err != nil {
			t.Fatalf("bbs.NewClient: %v", err)
		}
		log := testLogger(t)
		if c.Ping(log, traceID(t)) {
			t.Error("Ping = true, want false")
		}
		_, err = c.Domains(log, traceID(t))
		if err == nil || !strings.Contains(err.Error(), "tls") {
			t.Errorf("Domains: %v, want a TLS error", err)
		}
		t.Logf("refused: %v", err)

		// Go's TLS client (so the real client) sends no certificate that the server's list of
		// acceptable CAs does not name, so the refusal above is for a missing certificate.
		// This client presents it anyway, for the server to verify and refuse.
		other, err := tls.LoadX509KeyPair(p.otherClientCert, p.otherKey)
		if err != nil {
			t.Fatal(err)
		}
		insist := clientTLS.Clone()
		insist.Certificates = nil
		insist.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &other, nil }
		status, _, err := postProto(httpsClient(insist), url+"/v1/ping", nil, nil)
		if err == nil {
			t.Fatalf("POST /v1/ping with another CA's certificate answered %d", status)
		}
		if !strings.Contains(err.Error(), "tls") || strings.Contains(err.Error(), "certificate required") {
			t.Errorf("POST /v1/ping with another CA's certificate: %v, want the server to refuse that certificate", err)
		}
		t.Logf("refused: %v", err)
	})

	// Refusing those clients did not stop it serving the right one.
	if err := waitPing(httpsClient(clientTLS), url, api, 5*time.Second); err != nil {
		t.Error(err)
	}
}

// httpsClient is an HTTP/1.1 client with cfg, which keeps no connections between requests.
func httpsClient(cfg *tls.Config) *http.Client {
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCfdotOverTheDevTLSListener: the dev mode (`make run`) serves the protocol over mutual
// TLS too, with certificates it made, because cfdot speaks only https with a client
// certificate. The real client, configured as cfdot configures it (helpers.NewBBSClient:
// IsTLS with the CA, certificate and key files), reads through it what cfdot's commands
// read; without a certificate the listener refuses.
func TestCfdotOverTheDevTLSListener(t *testing.T) {
	ca, cert, key := filepath.Join(sys.certsDir, "ca.crt"), filepath.Join(sys.certsDir, "client.crt"), filepath.Join(sys.certsDir, "client.key")
	c, err := bbs.NewClientWithConfig(bbs.ClientConfig{URL: sys.protocolTLSURL, IsTLS: true,
		CAFile: ca, CertFile: cert, KeyFile: key, ClientSessionCacheSize: -1, MaxIdleConnsPerHost: -1,
		Retries: 1, RequestTimeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("bbs.NewClientWithConfig: %v", err)
	}
	log := testLogger(t)
	if !c.Ping(log, traceID(t)) {
		t.Fatal("Ping = false, want true")
	}
	if err := c.UpsertDomain(log, traceID(t), "compat-cfdot", time.Hour); err != nil { // cfdot set-domain
		t.Fatalf("UpsertDomain: %v", err)
	}
	if domains, err := c.Domains(log, traceID(t)); err != nil || !slices.Contains(domains, "compat-cfdot") { // cfdot domains
		t.Errorf("Domains = %q, %v; want compat-cfdot in it", domains, err)
	}
	if cells, err := c.Cells(log, traceID(t)); err != nil || len(cells) == 0 { // cfdot cells
		t.Errorf("Cells = %v, %v; want the dev cells", cells, err)
	}
	if _, err := c.ActualLRPs(log, traceID(t), models.ActualLRPFilter{}); err != nil { // cfdot actual-lrps
		t.Errorf("ActualLRPs: %v", err)
	}
	if _, err := c.DesiredLRPSchedulingInfos(log, traceID(t), models.DesiredLRPFilter{}); err != nil { // cfdot desired-lrp-scheduling-infos
		t.Errorf("DesiredLRPSchedulingInfos: %v", err)
	}
	if _, err := c.Tasks(log, traceID(t)); err != nil { // cfdot tasks
		t.Errorf("Tasks: %v", err)
	}

	noCert := &tls.Config{RootCAs: x509.NewCertPool(), MinVersion: tls.VersionTLS12}
	noCert.RootCAs.AppendCertsFromPEM(mustRead(t, ca))
	if status, _, err := postProto(httpsClient(noCert), sys.protocolTLSURL+"/v1/ping", nil, nil); err == nil {
		t.Fatalf("POST /v1/ping without a client certificate answered %d", status)
	}
}
