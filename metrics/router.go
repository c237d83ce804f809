package metrics

import "github.com/prometheus/client_golang/prometheus"

// RouterStats reads the router's own counters; they are read at each scrape, so that the
// proxy's hot path keeps its plain atomic increments.
type RouterStats struct {
	Requests, Retries, Failures func() int64
	// Routes is how many hostnames are routed.
	Routes func() int
}

// RegisterRouter registers the router's series on reg.
func RegisterRouter(reg prometheus.Registerer, s RouterStats) {
	counter := func(name, text string, read func() int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: text}, func() float64 { return float64(read()) })
	}
	reg.MustRegister(
		counter("bbs_router_requests_total", "Requests the router proxied to instances.", s.Requests),
		counter("bbs_router_retries_total", "Requests the router retried on another instance after a failed connection.", s.Retries),
		counter("bbs_router_failures_total", "Requests the router answered with an error (no instance, or none reachable).", s.Failures),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "bbs_router_routes", Help: "Hostnames the router routes."},
			func() float64 { return float64(s.Routes()) }),
	)
}
