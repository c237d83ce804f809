package devstack

import (
	"fmt"

	"github.com/updatable-lrps/bbs/internal/devcerts"
)

// banner is what the dev stack prints once it is up: where everything listens and where
// its state and logs are. Each part's start fills in its lines.
type banner struct {
	api, protocol, protocolTLS            string
	temporalUIPort                        int
	temporal, temporalDB, temporalLog     string
	worker, router, routerAdmin, ssh, tps string
	postgres, postgresNote, supervision   string
	cells                                 []bannerCell
}

// bannerCell is a cell agent's line.
type bannerCell struct{ id, zone, executor, log string }

// render is the banner's text, as `make run` has always printed it.
func (b banner) render() string {
	cellLines := ""
	for _, c := range b.cells {
		cellLines += fmt.Sprintf("  Cell          %s in zone %s (%s executor, log %s)\n", c.id, c.zone, c.executor, c.log)
	}
	return fmt.Sprintf(`
BBS dev stack is up:
  API           %s        try: curl -s -XPOST %s/v1/ping
  Rollouts page %s/ui/  (live rollouts, the traffic split, canary analysis, reverts)
  BBS protocol  %s
  BBS protocol  %s
  Temporal UI   http://localhost:%d
  Temporal      %s (namespace default, state in %s, log %s)
  Worker        %s
  Router        http://%s (apps by Host header; stats: http://%s/stats)
  SSH proxy     %s
  TPS watcher   %s
  PostgreSQL    %s %s
%s  Metrics       %s/metrics  (Prometheus: every part above but the cells, which serve none here; docs/METRICS.md)
  Supervision   %s
Ctrl-C stops everything; the next 'make run' resumes with the data kept.

`, b.api, b.api, b.api, b.protocol, b.protocolTLS, b.temporalUIPort, b.temporal, b.temporalDB,
		b.temporalLog, b.worker, b.router, b.routerAdmin, b.ssh, b.tps, b.postgres, b.postgresNote, cellLines, b.api, b.supervision)
}

// protocolLine says where the BBS protocol is served.
func protocolLine(url string) string {
	if url == "" {
		return "not served (--bbs-listen is empty)"
	}
	return url + "  (protobuf, for Diego and Cloud Foundry clients: cfdot, Cloud Controller, ...)"
}

// protocolTLSLine says where the mutual-TLS BBS protocol is served and how cfdot reaches it.
func protocolTLSLine(url string, certs devcerts.Files) string {
	if url == "" {
		return "not served over TLS (--bbs-tls-listen is empty)"
	}
	return fmt.Sprintf(`%s  (mutual TLS; certificates in %s)
                cfdot: export BBS_URL=%s CA_CERT_FILE=%s CLIENT_CERT_FILE=%s CLIENT_KEY_FILE=%s`,
		url, certs.Dir, url, certs.CA, certs.ClientCert, certs.ClientKey)
}
