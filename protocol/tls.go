package protocol

import "crypto/tls"

// TLSConfig is base (a mutual-TLS server configuration) made what BBS's clients expect of
// the BBS (tlsconfig.WithInternalServiceDefaults): TLS 1.2 or later, and for TLS 1.2 only
// the ECDHE-RSA AES-GCM suites, so the server key must be RSA. nil stays nil (loopback,
// plain HTTP).
func TLSConfig(base *tls.Config) *tls.Config {
	if base == nil {
		return nil
	}
	c := base.Clone()
	c.MinVersion = tls.VersionTLS12
	c.CipherSuites = []uint16{
		tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
		tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	}
	return c
}
