package model

import "testing"

// Every duration falls in the bucket whose bound is the first at or above it.
func TestLatencyBucketIsTheFirstBoundAtOrAbove(t *testing.T) {
	for i, b := range LatencyBounds {
		if got := LatencyBucket(b); got != i {
			t.Errorf("LatencyBucket(%v) = %d, want %d", b, got, i)
		}
		if got := LatencyBucket(b * 1.0001); got != i+1 {
			t.Errorf("LatencyBucket(just above %v) = %d, want %d", b, got, i+1)
		}
	}
	for _, ms := range []float64{0, -1, 0.5} {
		if got := LatencyBucket(ms); got != 0 {
			t.Errorf("LatencyBucket(%v) = %d", ms, got)
		}
	}
	if got := LatencyBucket(1e9); got != len(LatencyBounds) {
		t.Errorf("a day went to bucket %d", got)
	}
}

func TestRouterReportValidation(t *testing.T) {
	ok := RouteTelemetry{ProcessGUID: "web", DefinitionID: "v1", Requests: 2, Errors: 1, Latency: make([]int64, len(LatencyBounds)+1)}
	ok.Latency[3] = 2
	for name, r := range map[string]RouterReport{
		"no id":            {StartedAt: 1},
		"id with a space":  {RouterID: "a b", StartedAt: 1},
		"no start":         {RouterID: "r"},
		"negative applied": {RouterID: "r", StartedAt: 1, Applied: map[string]int64{"web": -1}},
		"bad guid":         {RouterID: "r", StartedAt: 1, Applied: map[string]int64{"w/eb": 1}},
		"counts disagree":  {RouterID: "r", StartedAt: 1, Telemetry: []RouteTelemetry{{ProcessGUID: "web", DefinitionID: "v1", Requests: 3, Latency: ok.Latency}}},
		"short latency":    {RouterID: "r", StartedAt: 1, Telemetry: []RouteTelemetry{{ProcessGUID: "web", DefinitionID: "v1", Latency: []int64{0}}}},
		"more errors":      {RouterID: "r", StartedAt: 1, Telemetry: []RouteTelemetry{{ProcessGUID: "web", DefinitionID: "v1", Requests: 2, Errors: 3, Latency: ok.Latency}}},
	} {
		if err := r.Validate(); !IsType(err, ErrInvalidRequest) {
			t.Errorf("%s: %v", name, err)
		}
	}
	good := RouterReport{RouterID: "host:8080", StartedAt: 1, Applied: map[string]int64{"web": 3}, Telemetry: []RouteTelemetry{ok}}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
}
