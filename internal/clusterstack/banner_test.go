package clusterstack

import "testing"

// The banner is what `make cluster` prints and its users read to find and call the cluster:
// this is its exact text for the default cluster (one replica and one cell shown).
func TestBanner(t *testing.T) {
	l := testLayout()
	l.cfg.DataDir, l.cfg.CertsDir, l.cfg.HistoryShards = ".cluster", ".cluster/certs", 4
	l.dbURL = "postgres://postgres:secret@127.0.0.1:54339/bbs?sslmode=disable"
	c := &cluster{layout: l, version: "temporal version 1.29.1",
		apiLines:    []string{"api-1 https://127.0.0.1:17001 (BBS protocol https://127.0.0.1:17002, log .cluster/api-1.log)"},
		workerLines: []string{"worker-1 (log .cluster/worker-1.log)", "worker-2 (log .cluster/worker-2.log)"},
		cellLines:   []string{"cell-1 in zone z1 (sim executor, log .cluster/cell-1.log)"},
		uiLine:      "not served (--temporal-ui-port 0)"}
	want := `
BBS cluster is up (the production topology on one machine):
  API           https://127.0.0.1:8889  (bbs lb: round robin over the replicas, failover)
  BBS protocol  https://127.0.0.1:8890  (bbs lb, to each replica's protocol listener)
  Mutual TLS    on between all processes: every listener (front, replicas, cells, Temporal) requires a
                certificate from the cluster's CA; certificates by deploy/gen-certs.sh in .cluster/certs. Try:
                curl --cacert .cluster/certs/ca.crt --cert .cluster/certs/client.crt --key .cluster/certs/client.key -XPOST https://127.0.0.1:8889/v1/ping
                temporal workflow list --address 127.0.0.1:7233 --tls-ca-path .cluster/certs/ca.crt --tls-cert-path .cluster/certs/client.crt --tls-key-path .cluster/certs/client.key
  API replicas  api-1 https://127.0.0.1:17001 (BBS protocol https://127.0.0.1:17002, log .cluster/api-1.log)
  Workers       worker-1 (log .cluster/worker-1.log), worker-2 (log .cluster/worker-2.log)
                task queue "bbs"; placement leads in one worker at a time (advisory lock), one convergence schedule
  Temporal      127.0.0.1:7233  (go.temporal.io/server temporal version 1.29.1: frontend, history, matching, worker in one process; 4 history shards;
                namespace default; databases temporal, temporal_visibility; config .cluster/temporal/cluster.yaml; log .cluster/temporal.log)
  Temporal UI   not served (--temporal-ui-port 0)
  Router        http://127.0.0.1:8080 (apps by Host header; stats: http://127.0.0.1:8081/stats; log .cluster/router.log)
  Cells         cell-1 in zone z1 (sim executor, log .cluster/cell-1.log)
  PostgreSQL    postgres://postgres:xxxxx@127.0.0.1:54339/bbs?sslmode=disable  (data in .cluster/postgres, log .cluster/postgres.log)
  Metrics       GET /metrics over plain HTTP: lb on 127.0.0.1:9890, worker N on +N, cell N on +10+N, API replica N on
                +20+N, the router on its stats address (Prometheus: deploy/prometheus-cluster.yml, Grafana:
                deploy/grafana-dashboard.json)
  Processes     each is restarted if it dies (the log says so); pids in .cluster/run/<name>.pid
Ctrl-C stops everything; the next 'make cluster' resumes with the data kept.

`
	if got := c.banner(); got != want {
		t.Errorf("banner:\n%s\nwant:\n%s", got, want)
	}
}
