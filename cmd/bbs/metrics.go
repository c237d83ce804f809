package main

import (
	"flag"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/metrics"
	"go.uber.org/zap"
)

// Default metrics addresses of the processes that have no HTTP listener to serve /metrics
// on (docs/METRICS.md): loopback, so that an operator finds them without configuration. The
// API and the router serve /metrics on their own listeners and default to no other; cells
// default to none, since a machine often runs several.
const (
	lbMetricsAddr         = "127.0.0.1:9890"
	workerMetricsAddr     = "127.0.0.1:9891"
	tpsWatcherMetricsAddr = "127.0.0.1:9892"
	sshProxyMetricsAddr   = "127.0.0.1:9893"
)

// metricsListenFlag registers --metrics-listen, the address of the process's own metrics
// listener; def is the command's default.
func metricsListenFlag(fs *flag.FlagSet, def string) *string {
	return fs.String("metrics-listen", envOr("BBS_METRICS_LISTEN_ADDR", def),
		"address to serve GET /metrics (Prometheus, plain HTTP: read-only series) on; empty: no listener of its own [BBS_METRICS_LISTEN_ADDR]")
}

// startMetrics makes the process's registry and serves it on addr, unless addr is empty,
// until stop is called.
func startMetrics(addr string, log *zap.Logger) (reg *prometheus.Registry, stop func(), err error) {
	reg = metrics.NewRegistry()
	if addr == "" {
		return reg, func() {}, nil
	}
	m, err := system.ServeMetrics(addr, reg, log)
	if err != nil {
		return nil, nil, err
	}
	return reg, func() { m.Stop() }, nil
}
