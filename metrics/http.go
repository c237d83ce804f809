package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// HTTP are the API's request series, by route pattern rather than path (a path names guids:
// a series per LRP would grow without bound) and by status.
type HTTP struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewHTTP registers the API's request series on reg.
func NewHTTP(reg prometheus.Registerer) *HTTP {
	h := &HTTP{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bbs_http_requests_total", Help: help("HTTP requests by route and status.", "RequestCount"),
		}, []string{"route", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "bbs_http_request_duration_seconds", Help: help("HTTP request latency by route.", "RequestLatency"),
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}, []string{"route"}),
	}
	reg.MustRegister(h.requests, h.duration)
	return h
}

// Observe records one request: its route pattern, its status ("aborted" for a response cut
// short after it began) and how long it took.
func (h *HTTP) Observe(route, code string, took time.Duration) {
	h.requests.WithLabelValues(route, code).Inc()
	h.duration.WithLabelValues(route).Observe(took.Seconds())
}
