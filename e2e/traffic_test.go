package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"
)

type trafficView struct {
	Phase             string           `json:"phase"`
	State             string           `json:"state"`
	Step              *int32           `json:"step"`
	Traffic           map[string]int32 `json:"traffic"`
	TrafficGeneration int64            `json:"traffic_generation"`
	RevertedTo        string           `json:"reverted_to"`
}

func (d *devStack) trafficOf(guid string) trafficView {
	var resp struct {
		Rollout trafficView `json:"rollout"`
	}
	d.api.mustPost("/v1/rollouts/get", obj{"process_guid": guid}, &resp)
	return resp.Rollout
}

// applied is the generation of guid's split the router routes by (its admin port).
func (d *devStack) applied(t *testing.T, guid string) int64 {
	t.Helper()
	res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/telemetry", d.routerAdminPort))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Applied map[string]int64 `json:"applied"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body.Applied[guid]
}

// snapshot copies what the load counted by definition.
func (l *load) snapshot() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for k, v := range l.byDef {
		out[k] = v
	}
	return out
}

// TestWeightedCanaryThroughTheRouter walks a canary by traffic weight through the real
// router under load — 1 % → 10 % → 50 % (manual) → promote — with zero failed requests and
// no index below its count; the 50 % step's share of requests is inside the binomial 99.9 %
// interval; a preview reaches the new definition. Then a second rollout is aborted at 10 %:
// the router routes by the new definition's weight of 0 within a second of the abort, no
// request reaches it after that, and every index is walked back.
func TestWeightedCanaryThroughTheRouter(t *testing.T) {
	const n = 10
	d := startDev(t)
	d.api.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": demoLRP("web", n)}, nil)
	d.waitFor(t, "10 RUNNING on web", 60*time.Second, func() bool { return d.allOn("web", "web", n) })
	d.waitFor(t, "the router to route web.example.com", 10*time.Second, func() bool {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", d.routerPort), nil)
		req.Host = "web.example.com"
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
	traffic := d.drive("web.example.com", 4)
	s := d.sample("web", n)
	strategy := obj{"canary": obj{"steps": []obj{
		{"weight": 1, "pause_ms": 2000}, {"weight": 10, "pause_ms": 2000}, {"weight": 50, "promote": "manual"}}}}
	d.api.mustPost("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": demoDefinition("v2", "v2"), "strategy": strategy}}, nil)
	d.waitFor(t, "the 50 % step, acknowledged", 90*time.Second, func() bool {
		r := d.trafficOf("web")
		return r.Phase == "awaiting_promotion" && r.Traffic["v2"] == 50
	})
	before := traffic.snapshot()
	time.Sleep(3 * time.Second)
	after := traffic.snapshot()
	got, all := after["v2"]-before["v2"], 0
	for def, c := range after {
		all += c - before[def]
	}
	sd := math.Sqrt(float64(all) * 0.25)
	if lo, hi := float64(all)/2-3.29*sd, float64(all)/2+3.29*sd; float64(got) < lo || float64(got) > hi {
		t.Errorf("at 50 %% v2 answered %d of %d requests, outside [%.0f, %.0f]", got, all, lo, hi)
	}
	t.Logf("at 50 %%: v2 answered %d of %d requests", got, all)
	for i := 0; i < 10; i++ {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", d.routerPort), nil)
		req.Host = "web.example.com"
		req.Header.Set("X-LRP-Preview", "web")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != 200 || res.Header.Get("X-LRP-Definition") != "web" {
			t.Fatalf("a preview of the old definition: %d by %q", res.StatusCode, res.Header.Get("X-LRP-Definition"))
		}
	}
	d.api.mustPost("/v1/rollouts/promote", obj{"process_guid": "web"}, nil)
	d.waitFor(t, "every index on v2", 90*time.Second, func() bool {
		return d.allOn("web", "v2", n) && d.trafficOf("web").State == "completed"
	})
	if r := d.trafficOf("web"); r.Traffic != nil {
		t.Errorf("a completed rollout reports traffic %v", r.Traffic)
	}
	s.finish(t, n, "weighted canary to v2")

	// Abort at 10 %: the weight goes to 0 on the router first.
	s = d.sample("web", n)
	strategy = obj{"canary": obj{"steps": []obj{{"weight": 10, "promote": "manual"}}}}
	d.api.mustPost("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": demoDefinition("v3", "v3"), "strategy": strategy}}, nil)
	d.waitFor(t, "the 10 % step of v3, acknowledged", 60*time.Second, func() bool {
		r := d.trafficOf("web")
		return r.Phase == "awaiting_promotion" && r.Traffic["v3"] == 10
	})
	gen := d.applied(t, "web")
	began := time.Now()
	d.api.mustPost("/v1/rollouts/abort", obj{"process_guid": "web", "reason": "canary errors"}, nil)
	for d.applied(t, "web") <= gen {
		if time.Since(began) > 10*time.Second {
			t.Fatal("the router never took the abort's weight")
		}
		time.Sleep(2 * time.Millisecond)
	}
	took := time.Since(began)
	t.Logf("the router routes v3 at weight 0 %v after the abort", took)
	if took > time.Second {
		t.Errorf("weight 0 reached the router %v after the abort, more than the contract's second", took)
	}
	time.Sleep(200 * time.Millisecond) // requests sent before the change may still be answered
	v3 := traffic.snapshot()["v3"]
	d.waitFor(t, "the revert to v2", 60*time.Second, func() bool {
		r := d.trafficOf("web")
		return r.State == "reverted" && r.RevertedTo == "v2" && d.allOn("web", "v2", n)
	})
	if later := traffic.snapshot()["v3"]; later != v3 {
		t.Errorf("%d requests reached v3 after its weight went to 0", later-v3)
	}
	s.finish(t, n, "abort at 10 %")

	// A release that answers 5 % of requests with 500 fails analysis at its 20 % step and
	// is reverted, weight first.
	s = d.sample("web", n)
	bad := demoDefinition("v4", "v4")
	bad["env"] = []obj{{"name": "DEMO_VERSION", "value": "v4"}, {"name": "DEMO_ERROR_RATE", "value": "0.05"}}
	strategy = obj{"canary": obj{"steps": []obj{{"weight": 20, "pause_ms": 60000, "analysis": true}}},
		"analysis": obj{"interval_ms": 3000, "min_requests": 100}}
	d.api.mustPost("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": bad, "strategy": strategy}}, nil)
	var verdicts []obj
	d.waitFor(t, "the analysis to fail v4 and revert it", 90*time.Second, func() bool {
		var resp struct {
			Rollout struct {
				State      string `json:"state"`
				RevertedTo string `json:"reverted_to"`
				Failure    *struct {
					Reason string `json:"reason"`
					Kind   string `json:"kind"`
				} `json:"failure"`
				Analysis []obj `json:"analysis"`
			} `json:"rollout"`
		}
		d.api.mustPost("/v1/rollouts/get", obj{"process_guid": "web"}, &resp)
		r := resp.Rollout
		verdicts = r.Analysis
		return r.State == "reverted" && r.RevertedTo == "v2" && r.Failure != nil && r.Failure.Reason == "analysis" &&
			r.Failure.Kind == "app" && d.allOn("web", "v2", n)
	})
	last := verdicts[len(verdicts)-1]
	t.Logf("v4's verdicts: %v", verdicts)
	if last["verdict"] != "fail" || last["canary"].(map[string]any)["error_rate"].(float64) == 0 {
		t.Fatalf("the last verdict %v", last)
	}
	s.finish(t, n, "v4 failed analysis and reverted")

	// A release 300 ms slower fails analysis on its p99.
	s = d.sample("web", n)
	slow := demoDefinition("v5", "v5")
	slow["env"] = []obj{{"name": "DEMO_VERSION", "value": "v5"}, {"name": "DEMO_DELAY_MS", "value": "300"}}
	strategy = obj{"canary": obj{"steps": []obj{{"weight": 20, "pause_ms": 60000, "analysis": true}}},
		"analysis": obj{"interval_ms": 3000, "min_requests": 20}}
	d.api.mustPost("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": slow, "strategy": strategy}}, nil)
	var reason string
	d.waitFor(t, "the analysis to fail v5 on its p99 and revert it", 90*time.Second, func() bool {
		var resp struct {
			Rollout struct {
				State   string `json:"state"`
				Failure *struct {
					Reason string `json:"reason"`
					Detail string `json:"detail"`
				} `json:"failure"`
			} `json:"rollout"`
		}
		d.api.mustPost("/v1/rollouts/get", obj{"process_guid": "web"}, &resp)
		if f := resp.Rollout.Failure; f != nil {
			reason = f.Reason + ": " + f.Detail
		}
		return resp.Rollout.State == "reverted" && d.allOn("web", "v2", n)
	})
	t.Logf("v5: %s", reason)
	if !strings.Contains(reason, "analysis: p99") {
		t.Fatalf("v5 failed for %q, not its p99", reason)
	}
	s.finish(t, n, "v5 failed analysis on p99 and reverted")
	traffic.finish(t, "weighted canary, promote, abort and failed analyses")
	if traffic.appErrors["v4"] == 0 {
		t.Errorf("v4 answered no 500 although it fails 5 %% of requests")
	}
}
