package main

import (
	"errors"
	"flag"
	"syscall"

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

// metricsFlags are where a process serves its series: --metrics-listen, plain HTTP on
// loopback, and beyond loopback only with mutual TLS (the BBS_TLS_* files), as every other
// listener.
type metricsFlags struct {
	addr, def string
	tls       *tlsFlags
}

// registerMetrics registers --metrics-listen, whose default is def, on fs. A command whose
// listeners already take the BBS_TLS_* files passes them as serverTLS; for the others the
// files are registered here, for the metrics listener alone.
func registerMetrics(fs *flag.FlagSet, def string, serverTLS *tlsFlags) *metricsFlags {
	m := &metricsFlags{def: def, tls: serverTLS}
	fs.StringVar(&m.addr, "metrics-listen", envOr("BBS_METRICS_LISTEN_ADDR", def),
		"address to serve GET /metrics (Prometheus) on: loopback, or anything with mutual TLS (BBS_TLS_* files); empty: no listener of its own [BBS_METRICS_LISTEN_ADDR]")
	if m.tls == nil {
		m.tls = &tlsFlags{}
		m.tls.register(fs)
	}
	return m
}

// start makes the process's registry and serves it, unless the address is empty, until stop
// is called. A default address another process holds (a second worker on the machine) is
// not fatal: the series are then not served, and the log says so; an address given
// explicitly must be free.
func (m *metricsFlags) start(log *zap.Logger) (reg *prometheus.Registry, stop func(), err error) {
	reg = metrics.NewRegistry()
	if m.addr == "" {
		return reg, func() {}, nil
	}
	serverTLS, err := m.tls.serverConfig()
	if err != nil {
		return nil, nil, err
	}
	srv, err := system.ServeMetrics(m.addr, serverTLS, reg, log)
	if errors.Is(err, syscall.EADDRINUSE) && m.addr == m.def {
		log.Warn("metrics not served: the default address is taken (another process on this machine?); set --metrics-listen",
			zap.String("address", m.addr), zap.Error(err))
		return reg, func() {}, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return reg, func() { srv.Stop() }, nil
}
