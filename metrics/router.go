package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/updatable-lrps/bbs/model"
)

// RouterStats reads the router's own counters; they are read at each scrape, so that the
// proxy's hot path keeps its plain atomic increments.
type RouterStats struct {
	Requests, Retries, Failures func() int64
	// Routes is how many hostnames are routed.
	Routes func() int
	// Telemetry reads the counts per LRP and definition (nil: none).
	Telemetry func() []model.RouteTelemetry
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
		&routeTelemetry{read: s.Telemetry},
	)
}

// routeTelemetry exposes the router's counts per LRP and definition: requests, 5xx answers
// and a latency histogram, in seconds, whose buckets are every fourth of the router's own
// (1 ms, 2 ms, 4 ms, … about a minute: model.LatencyBounds is finer, for analysis).
type routeTelemetry struct {
	read func() []model.RouteTelemetry
}

var (
	routeLabels   = []string{"process_guid", "definition_id"}
	routeRequests = prometheus.NewDesc("bbs_router_lrp_requests_total",
		"Requests the router sent to each definition of an LRP.", routeLabels, nil)
	routeErrors = prometheus.NewDesc("bbs_router_lrp_errors_total",
		"5xx answers to requests for each definition of an LRP (the instance's, or the router's when none answered).", routeLabels, nil)
	routeLatency = prometheus.NewDesc("bbs_router_lrp_request_duration_seconds",
		"Time from a request's arrival at the router to the end of its answer, for each definition of an LRP.", routeLabels, nil)
)

func (c *routeTelemetry) Describe(ch chan<- *prometheus.Desc) {
	ch <- routeRequests
	ch <- routeErrors
	ch <- routeLatency
}

func (c *routeTelemetry) Collect(ch chan<- prometheus.Metric) {
	if c.read == nil {
		return
	}
	for _, t := range c.read() {
		labels := []string{t.ProcessGUID, t.DefinitionID}
		ch <- prometheus.MustNewConstMetric(routeRequests, prometheus.CounterValue, float64(t.Requests), labels...)
		ch <- prometheus.MustNewConstMetric(routeErrors, prometheus.CounterValue, float64(t.Errors), labels...)
		buckets := map[float64]uint64{}
		var below uint64
		for i, n := range t.Latency {
			below += uint64(n)
			if i < len(model.LatencyBounds) && i%4 == 0 {
				buckets[model.LatencyBounds[i]/1000] = below
			}
		}
		ch <- prometheus.MustNewConstHistogram(routeLatency, uint64(t.Requests), float64(t.DurationUS)/1e6, buckets, labels...)
	}
}
