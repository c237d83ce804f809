package clusterstack

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/updatable-lrps/bbs/internal/boot"
	"github.com/updatable-lrps/bbs/worker"
)

// banner is what the cluster prints once it is up: where everything listens, how to call it
// with the client certificate, and where the state, the logs and the pid files are.
func (c *cluster) banner() string {
	return fmt.Sprintf(bannerTemplate, c.frontURL(), c.cfg.ProtocolListen, c.cfg.CertsDir, howToCall(c.cfg.CertsDir, c.frontURL(), c.temporalAddr),
		strings.Join(c.apiLines, "\n                "), strings.Join(c.workerLines, ", "),
		worker.TaskQueue, c.temporalAddr, c.version, c.cfg.HistoryShards, c.namespace, c.rel("temporal/cluster.yaml"),
		c.rel("temporal.log"), c.uiLine, c.cfg.RouterAddr, c.cfg.RouterAdminAddr, c.rel("router.log"),
		strings.Join(c.cellLines, "\n                "), boot.RedactURL(c.dbURL), c.rel("postgres"), c.rel("postgres.log"), c.cfg.MetricsPortBase, c.rel("run"))
}

// bannerTemplate is the banner with its variable parts as verbs.
const bannerTemplate = `
BBS cluster is up (the production topology on one machine):
  API           %s  (bbs lb: round robin over the replicas, failover)
  BBS protocol  https://%s  (bbs lb, to each replica's protocol listener)
  Mutual TLS    on between all processes: every listener (front, replicas, cells, Temporal) requires a
                certificate from the cluster's CA; certificates by deploy/gen-certs.sh in %s. Try:
                %s
  API replicas  %s
  Workers       %s
                task queue %q; placement leads in one worker at a time (advisory lock), one convergence schedule
  Temporal      %s  (go.temporal.io/server %s: frontend, history, matching, worker in one process; %d history shards;
                namespace %s; databases temporal, temporal_visibility; config %s; log %s)
  Temporal UI   %s
  Router        http://%s (apps by Host header; stats: http://%s/stats; log %s)
  Cells         %s
  PostgreSQL    %s  (data in %s, log %s)
  Metrics       GET /metrics over plain HTTP: lb on 127.0.0.1:%d, worker N on +N, cell N on +10+N, API replica N on
                +20+N, the router on its stats address (Prometheus: deploy/prometheus-cluster.yml, Grafana:
                deploy/grafana-dashboard.json)
  Processes     each is restarted if it dies (the log says so); pids in %s/<name>.pid
Ctrl-C stops everything; the next 'make cluster' resumes with the data kept.

`

// howToCall is the banner's lines on calling the cluster with its client certificate, the
// files named under shown (the directory as the operator named it).
func howToCall(shown, frontURL, temporalAddr string) string {
	return fmt.Sprintf(`curl --cacert %[1]s --cert %[2]s --key %[3]s -XPOST %[4]s/v1/ping
                temporal workflow list --address %[5]s --tls-ca-path %[1]s --tls-cert-path %[2]s --tls-key-path %[3]s`,
		filepath.Join(shown, "ca.crt"), filepath.Join(shown, "client.crt"), filepath.Join(shown, "client.key"), frontURL, temporalAddr)
}
