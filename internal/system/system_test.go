package system

import (
	"crypto/tls"
	"strings"
	"testing"
)

// Beyond loopback, a listener of ours requires mutual TLS: whoever reaches the API or a cell
// can make cells run any command.
func TestListenRequiresMutualTLSBeyondLoopback(t *testing.T) {
	for _, tc := range []struct {
		name, addr string
		tls        *tls.Config
		wantErr    string
		wantScheme string
	}{
		{name: "loopback plain", addr: "127.0.0.1:0", wantScheme: "http"},
		{name: "localhost plain", addr: "localhost:0", wantScheme: "http"},
		{name: "any address plain", addr: "0.0.0.0:0", wantErr: "without mutual TLS"},
		{name: "any address, TLS without client certificates", addr: "0.0.0.0:0",
			tls: &tls.Config{ClientAuth: tls.VerifyClientCertIfGiven}, wantErr: "without mutual TLS"},
		{name: "loopback with mutual TLS", addr: "127.0.0.1:0",
			tls: &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert}, wantScheme: "https"},
		{name: "bad address", addr: "nowhere", wantErr: "listen address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, scheme, err := Listen(tc.addr, tc.tls)
			if tc.wantErr != "" {
				if err == nil {
					ln.Close()
					t.Fatalf("listened on %s", tc.addr)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %q does not say %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			if scheme != tc.wantScheme {
				t.Fatalf("scheme %q, want %q", scheme, tc.wantScheme)
			}
		})
	}
}
