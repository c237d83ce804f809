package system

import (
	"context"
	"crypto/tls"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/updatable-lrps/bbs/metrics"
	"go.uber.org/zap"
)

// MetricsServer serves a process's Prometheus series on a listener of its own: for the
// processes without an HTTP listener that could (the worker, the lb, the tps-watcher, the ssh
// proxy) and for those whose listener a scraper cannot reach (a replica's mutual TLS).
type MetricsServer struct {
	served *servedHTTP
}

// ServeMetrics serves reg at GET /metrics on addr, as Listen allows: plain HTTP on loopback,
// mutual TLS (serverTLS) anywhere else — Prometheus scrapes with a client certificate
// (deploy/prometheus.yml). The series hold no secret, but a listener beyond loopback without
// a client certificate is one more door, and every other listener here has none.
func ServeMetrics(addr string, serverTLS *tls.Config, reg prometheus.Gatherer, log *zap.Logger) (*MetricsServer, error) {
	ln, scheme, err := Listen(addr, serverTLS)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler(reg))
	m := &MetricsServer{served: serveHTTP(ln, scheme, mux, log)}
	log.Info("metrics listening", zap.String("address", m.URL()))
	return m, nil
}

// URL is where the series are read, e.g. http://127.0.0.1:9891/metrics.
func (m *MetricsServer) URL() string { return m.served.url + "/metrics" }

// Stop stops serving (waiting a few seconds for a scrape in flight).
func (m *MetricsServer) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return m.served.stop(ctx)
}
