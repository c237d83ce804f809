package boot

import (
	"errors"
	"flag"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/updatable-lrps/bbs/internal/system"
	"github.com/updatable-lrps/bbs/metrics"
	"go.uber.org/zap"
)

// Metrics says where a process serves its series: --metrics-listen, plain HTTP on
// loopback, and beyond loopback only with mutual TLS (the BBS_TLS_* files), as every other
// listener.
type Metrics struct {
	addr, def string
	tls       *ServerTLS
}

// RegisterMetrics registers --metrics-listen, whose default is def, on fs. A command whose
// listeners already take the BBS_TLS_* files passes them as serverTLS; for the others the
// files are registered here, for the metrics listener alone.
func RegisterMetrics(fs *flag.FlagSet, def string, serverTLS *ServerTLS) *Metrics {
	m := &Metrics{def: def, tls: serverTLS}
	fs.StringVar(&m.addr, "metrics-listen", EnvOr("BBS_METRICS_LISTEN_ADDR", def),
		"address to serve GET /metrics (Prometheus) on: loopback, or anything with mutual TLS (BBS_TLS_* files); empty: no listener of its own [BBS_METRICS_LISTEN_ADDR]")
	if m.tls == nil {
		m.tls = &ServerTLS{}
		m.tls.Register(fs)
	}
	return m
}

// Start makes the process's registry and serves it, unless the address is empty, until stop
// is called. A default address another process holds (a second worker on the machine) is
// not fatal: the series are then not served, and the log says so; an address given
// explicitly must be free.
func (m *Metrics) Start(log *zap.Logger) (reg *prometheus.Registry, stop func(), err error) {
	reg = metrics.NewRegistry()
	if m.addr == "" {
		return reg, func() {}, nil
	}
	serverTLS, err := m.tls.Config()
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
