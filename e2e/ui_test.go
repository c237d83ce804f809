package e2e

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// waitRouted waits until the router answers host with a 200.
func (d *devStack) waitRouted(t *testing.T, host string) {
	t.Helper()
	d.waitFor(t, "the router to route "+host, 10*time.Second, func() bool {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/", d.routerPort), nil)
		req.Host = host
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	})
}

// TestRolloutPageInABrowser opens the API's page at /ui/ in a real headless Chromium and
// watches, as a person would, a release that answers 5 % of requests with 500 roll out
// under load through the router: the rollout appears, its canary step advances from 10 %
// to 30 %, the traffic chart fills with points, the analysis judges the canary against the
// baseline and fails it, and the page tells the revert with its reason — all from the event
// stream, without a reload.
func TestRolloutPageInABrowser(t *testing.T) {
	temporalBin(t)
	chromium(t) // before the stack: installing it may take minutes, and may skip
	const n = 4
	d := startDev(t)
	d.api.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": demoLRP("web", n)}, nil)
	d.waitFor(t, "4 RUNNING on web", 60*time.Second, func() bool { return d.allOn("web", "web", n) })
	d.waitRouted(t, "web.example.com")

	b := openBrowser(t, d.api.base+"/ui/")
	b.waitText("#connection", "Live", 10*time.Second)
	b.waitText("#rollouts-empty", "No rollout yet", 5*time.Second)

	traffic := d.drive("web.example.com", 2)
	bad := demoDefinition("v2", "v2")
	bad["env"] = []obj{{"name": "DEMO_VERSION", "value": "v2"}, {"name": "DEMO_ERROR_RATE", "value": "0.05"}}
	strategy := obj{"canary": obj{"steps": []obj{{"weight": 10, "pause_ms": 4000}, {"weight": 30, "pause_ms": 60000, "analysis": true}}},
		"analysis": obj{"interval_ms": 2000, "min_requests": 50}}
	d.api.mustPost("/v1/desired_lrp/update", obj{"process_guid": "web", "update": obj{"definition": bad, "strategy": strategy}}, nil)

	row := b.waitText("#rollouts tbody tr", "web → v2", 10*time.Second)
	t.Logf("the rollout appeared: %q", row)
	// The story keeps what the page saw change, so a step that passed between two looks
	// still shows.
	b.waitText("#story", "step 1 of 2", 30*time.Second)
	b.waitText("#story", "the routers acknowledged v2 10 %", 30*time.Second)
	b.waitText("#story", "step 2 of 2", 30*time.Second)
	t.Logf("the step advanced: %q; screenshot %s", b.text("#summary"), b.screenshot("rollout-at-step-2"))

	var points int
	d.waitFor(t, "the traffic chart to have points of v2", 20*time.Second, func() bool {
		points = b.count(`#traffic-chart [data-series^="v2"] [data-point]`)
		return points >= 3
	})
	t.Logf("the traffic chart has %d points of v2; %s", points, b.text("#traffic-note"))

	reason := b.waitText("#failure-reason", "analysis", 60*time.Second)
	detail := b.waitText("#failure-detail", "error rate", 5*time.Second)
	reverted := b.waitText("#reverted-to", "web", 60*time.Second)
	b.waitText("#detail-phase", "reverted", 60*time.Second)
	t.Logf("the failure: %q, %q; %q", reason, detail, reverted)
	if n := b.count(`#analysis tr[data-verdict="fail"]`); n == 0 {
		t.Errorf("the page shows no failed verdict: %q", b.text("#analysis"))
	}
	if n := b.count(`#analysis svg [data-point]`); n < 4 {
		t.Errorf("the canary against baseline charts have %d bars, want at least 4 (two sides, two charts)", n)
	}
	if story := b.text("#story"); !strings.Contains(story, "Ended reverted: every index back on web") {
		t.Errorf("the story does not tell the revert:\n%s", story)
	}
	d.waitFor(t, "every index to show as back on web", 10*time.Second, func() bool { return b.count("#indices tbody tr.done") == n })
	t.Logf("screenshot: %s", b.screenshot("rollout-reverted"))
	b.checkNoErrors()
	traffic.finish(t, "the page's rollout")
}
