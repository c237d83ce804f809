package api_test

import (
	"net/http"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

// A router's report is stored; a report the model refuses is InvalidRequest and writes
// nothing.
func TestRouterReports(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	latency := make([]int64, len(model.LatencyBounds)+1)
	latency[3] = 2
	good := obj{"router_id": "host-1:8080", "started_at": 1, "applied": obj{"web": 3},
		"telemetry": []obj{{"process_guid": "web", "definition_id": "v2", "requests": 2, "errors": 1, "latency": latency, "duration_us": 900}}}
	for name, body := range map[string]obj{
		"no router id":    {"started_at": 1},
		"router id space": {"router_id": "a b", "started_at": 1},
		"no start":        {"router_id": "r"},
		"bad guid":        {"router_id": "r", "started_at": 1, "applied": obj{"w/eb": 1}},
		"counts disagree": {"router_id": "r", "started_at": 1, "telemetry": []obj{{"process_guid": "web", "definition_id": "v2", "requests": 5, "latency": latency}}},
	} {
		requireError(t, h.postJSON("/v1/routers/report", body), http.StatusBadRequest, model.ErrInvalidRequest)
		if n := h.count("routers"); n != 0 {
			t.Fatalf("%s: %d routers stored", name, n)
		}
	}
	h.ok("/v1/routers/report", good)
	if n := h.count("routers"); n != 1 {
		t.Fatalf("%d routers after a good report", n)
	}
}
