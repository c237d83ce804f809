package system

import (
	"context"
	"net"
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

// ServeMetrics serves reg at GET /metrics on addr. Unlike Listen it takes any address over
// plain HTTP: the series are read-only and hold no secret (counts, durations, domain names),
// and Prometheus scrapes plain HTTP on a private network.
func ServeMetrics(addr string, reg prometheus.Gatherer, log *zap.Logger) (*MetricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metrics.Handler(reg))
	m := &MetricsServer{served: serveHTTP(ln, "http", mux, log)}
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
