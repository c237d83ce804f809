// Package metrics defines every Prometheus series the BBS's processes serve, one file per
// entity, so that docs/METRICS.md and the Grafana dashboard (deploy/) have one list to agree
// with (metrics_test checks both).
//
// Names: the prefix bbs_, then Diego's BBS metric name in snake case where Diego has one
// (LRPsDesired → bbs_lrps_desired, CrashedActualLRPs → bbs_crashed_actual_lrps), its help
// text naming the Diego metric; our own series follow the same pattern. Durations are
// histograms in seconds (_seconds), counters end in _total, and a Diego metric whose name
// carries a value (Domain.<name>) becomes a label (bbs_domain_fresh{domain="<name>"}).
//
// Each process has one registry (NewRegistry) that its parts register on; a test that
// starts several parts in one process gives each a registry of its own.
package metrics

import (
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// NewRegistry returns a process's registry, with the Go runtime's and the process's series
// (go_goroutines, process_resident_memory_bytes, ...) that every process serves.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler serves reg's series at GET /metrics.
func Handler(reg prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// help is a series' help text: what it counts, and Diego's name for it when it has one.
func help(text, diego string) string {
	if diego == "" {
		return text
	}
	return fmt.Sprintf("%s (Diego's %s.)", text, diego)
}
