package main

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
