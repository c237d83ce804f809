package api_test

import (
	"cmp"
	"fmt"
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

// telemetrySeries is a router's counts for one definition: n requests, errs of them 5xx,
// all in the latency bucket bucket.
func telemetrySeries(guid, def string, n, errs int64, bucket int) obj {
	latency := make([]int64, len(model.LatencyBounds)+1)
	latency[bucket] = n
	return obj{"process_guid": guid, "definition_id": def, "requests": n, "errors": errs, "latency": latency, "duration_us": 1000 * n}
}

// The page's read of the routers' telemetry sums what every live router counted for an LRP
// by definition, names the routers' runs (so that a reader tells a restart from traffic),
// leaves out other LRPs and silent routers, and answers nothing counted for an LRP no router
// has seen.
func TestRouterTelemetrySumsTheLiveRouters(t *testing.T) {
	h := newHarness(t)
	h.ok("/v1/routers/report", obj{"router_id": "r1", "started_at": 1000, "telemetry": []obj{
		telemetrySeries("web", "v1", 100, 1, 3), telemetrySeries("web", "v2", 10, 2, 5), telemetrySeries("other", "v1", 50, 0, 3)}})
	h.ok("/v1/routers/report", obj{"router_id": "r2", "started_at": 2000, "telemetry": []obj{
		telemetrySeries("web", "v1", 60, 0, 3), telemetrySeries("web", "v2", 5, 1, 6)}})
	h.ok("/v1/routers/report", obj{"router_id": "r3", "started_at": 3000, "telemetry": []obj{telemetrySeries("web", "v1", 999, 0, 3)}})
	h.exec(`UPDATE routers SET seen_at = now() - interval '1 minute' WHERE router_id = 'r3'`)

	got := h.ok("/v1/routers/telemetry", obj{"process_guid": "web"}).obj(t, "telemetry")
	if got.str(t, "process_guid") != "web" || got.integer(t, "at") <= 0 {
		t.Fatalf("telemetry %v", got)
	}
	routers := got.list(t, "routers")
	if len(routers) != 2 || routers[0].str(t, "router_id") != "r1" || routers[0].integer(t, "started_at") != 1000 ||
		routers[1].str(t, "router_id") != "r2" || routers[1].integer(t, "started_at") != 2000 {
		t.Fatalf("routers %v", routers)
	}
	defs := got.list(t, "definitions")
	if len(defs) != 2 {
		t.Fatalf("definitions %v", defs)
	}
	for i, want := range []struct {
		def            string
		requests, errs int64
		latency        map[int]string // bucket → count; every other bucket 0
	}{{"v1", 160, 1, map[int]string{3: "160"}}, {"v2", 15, 3, map[int]string{5: "10", 6: "5"}}} {
		d := defs[i]
		if d.str(t, "definition_id") != want.def || d.integer(t, "requests") != want.requests || d.integer(t, "errors") != want.errs ||
			d.integer(t, "duration_us") != 1000*want.requests {
			t.Errorf("definition %d: %v, want %+v", i, d, want)
		}
		latency, _ := d["latency"].([]any)
		if len(latency) != len(model.LatencyBounds)+1 {
			t.Fatalf("definition %s: %d latency buckets", want.def, len(latency))
		}
		for b, n := range latency {
			if fmt.Sprint(n) != cmp.Or(want.latency[b], "0") {
				t.Errorf("definition %s: bucket %d holds %v, want the buckets summed one by one: %v", want.def, b, n, want.latency)
			}
		}
	}

	none := h.ok("/v1/routers/telemetry", obj{"process_guid": "never-routed"}).obj(t, "telemetry")
	if len(none.list(t, "routers")) != 0 || len(none.list(t, "definitions")) != 0 {
		t.Errorf("an LRP no router counted: %v", none)
	}
	for _, body := range []string{`{}`, `{"process_guid": "web 1"}`, `{"process_guid": 3}`, `[`} {
		if rec := h.post("/v1/routers/telemetry", body); rec.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", body, rec.Code, rec.Body)
		}
	}
}
