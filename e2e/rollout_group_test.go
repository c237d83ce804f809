package e2e

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type groupView struct {
	GroupID string `json:"group_id"`
	State   string `json:"state"`
	Reason  string `json:"reason"`
	Wave    int    `json:"wave"`
	Waves   []struct {
		State   string `json:"state"`
		Members []struct {
			ProcessGUID  string `json:"process_guid"`
			State        string `json:"state"`
			DefinitionID string `json:"definition_id"`
		} `json:"members"`
	} `json:"waves"`
	Budgets struct {
		LRPsInUse       int `json:"lrps_in_use"`
		PerCellMaxInUse int `json:"per_cell_max_in_use"`
	} `json:"budgets"`
}

func (d *devStack) group(id string) groupView {
	var resp struct {
		RolloutGroup groupView `json:"rollout_group"`
	}
	d.api.mustPost("/v1/rollout_groups/get", obj{"group_id": id}, &resp)
	return resp.RolloutGroup
}

// TestRolloutGroupAbortsAtAFailingWave rolls a stack change (an env patch standing for one)
// across six apps in three waves under router traffic on every app. One app of wave 2 cannot
// start with the change: its member reverts, which passes max_failed_percent, so the group
// aborts — wave 3 never starts and keeps its definitions — with zero failed requests and no
// app ever below its count of served indices. A budget sampler checks max_concurrent_lrps
// and max_concurrent_per_cell throughout.
func TestRolloutGroupAbortsAtAFailingWave(t *testing.T) {
	const apps, n = 6, 2
	d := startDev(t)
	var loads []*load
	var samplers []*sampler
	for i := range apps {
		guid := fmt.Sprintf("app%d", i)
		lrp := demoLRP(guid, n)
		if i == 2 { // wave 2's first member: breaks on the new stack
			lrp["env"] = []obj{{"name": "DEMO_VERSION", "value": "v1"}, {"name": "DEMO_FAIL_WHEN", "value": "STACK=v2"}}
		}
		d.api.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": lrp}, nil)
	}
	for i := range apps {
		guid := fmt.Sprintf("app%d", i)
		d.waitFor(t, guid+" RUNNING", 60*time.Second, func() bool { return d.allOn(guid, guid, n) })
		d.waitRouted(t, guid+".example.com")
		loads = append(loads, d.drive(guid+".example.com", 1))
		samplers = append(samplers, d.sample(guid, n))
	}
	budget := d.sampleBudgets(t, "stack-v2")
	d.api.mustPost("/v1/rollout_groups/create", obj{
		"group_id":            "stack-v2",
		"selector":            obj{"domain": "cf-apps"},
		"patch":               obj{"env": []obj{{"name": "STACK", "value": "v2"}}},
		"strategy":            obj{"index_deadline_ms": 15000, "failure": obj{"max_crashes": 1}},
		"waves":               []obj{{"percent": 33}, {"percent": 66}, {"percent": 100}},
		"max_concurrent_lrps": 1, "max_concurrent_per_cell": 1, "max_failed_percent": 40,
		"pause_between_waves_ms": 500,
	}, nil)
	d.waitFor(t, "the group to abort", 3*time.Minute, func() bool {
		g := d.group("stack-v2")
		return g.State == "aborted" && g.Budgets.LRPsInUse == 0
	})
	g := d.group("stack-v2")
	t.Logf("group: %s (%s)", g.State, g.Reason)
	if g.Wave != 1 || g.Waves[0].State != "completed" || g.Waves[1].State != "aborted" || g.Waves[2].State != "skipped" {
		t.Fatalf("waves = %+v", g.Waves)
	}
	for _, m := range g.Waves[0].Members {
		if m.State != "completed" {
			t.Fatalf("wave 1 member %+v", m)
		}
		d.waitFor(t, m.ProcessGUID+" on the new definition alone", 30*time.Second, func() bool { return d.allOn(m.ProcessGUID, "stack-v2", n) })
	}
	if m := g.Waves[1].Members; m[0].ProcessGUID != "app2" || m[0].State != "reverted" || m[1].State != "skipped" {
		t.Fatalf("wave 2's members = %+v (app2 breaks on the change and reverts; app3, not started, is skipped)", m)
	}
	for _, m := range g.Waves[2].Members {
		if m.State != "skipped" {
			t.Fatalf("wave 3 member %+v", m)
		}
	}
	for i := range apps {
		guid := fmt.Sprintf("app%d", i)
		if i >= 2 {
			d.waitFor(t, guid+" back on its definition", 60*time.Second, func() bool { return d.allOn(guid, guid, n) })
		}
		samplers[i].finish(t, n, guid)
		loads[i].finish(t, guid)
	}
	budget.finish(t, 1, 1)
}

// budgetSampler watches a group's budgets in use for as long as a test runs.
type budgetSampler struct {
	stop             chan struct{}
	halt             sync.Once
	wg               sync.WaitGroup
	lrps, cell, seen atomic.Int64
}

func (d *devStack) sampleBudgets(t *testing.T, group string) *budgetSampler {
	b := &budgetSampler{stop: make(chan struct{})}
	t.Cleanup(b.end) // before the stack stops, should the test fail first
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for {
			select {
			case <-b.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
			var resp struct {
				RolloutGroup groupView `json:"rollout_group"`
			}
			if d.api.post("/v1/rollout_groups/get", obj{"group_id": group}, &resp) != 200 {
				continue
			}
			b.seen.Add(1)
			g := resp.RolloutGroup
			if v := int64(g.Budgets.LRPsInUse); v > b.lrps.Load() {
				b.lrps.Store(v)
			}
			if v := int64(g.Budgets.PerCellMaxInUse); v > b.cell.Load() {
				b.cell.Store(v)
			}
		}
	}()
	return b
}

// finish fails the test if a budget was ever seen exceeded.
func (b *budgetSampler) finish(t *testing.T, maxLRPs, maxPerCell int64) {
	t.Helper()
	b.end()
	t.Logf("budgets: at most %d members rolling (max %d), %d new instances starting on one cell (max %d), over %d samples",
		b.lrps.Load(), maxLRPs, b.cell.Load(), maxPerCell, b.seen.Load())
	if b.lrps.Load() > maxLRPs || b.cell.Load() > maxPerCell || b.seen.Load() == 0 {
		t.Fatalf("a budget was exceeded (or never sampled)")
	}
}

func (b *budgetSampler) end() {
	b.halt.Do(func() { close(b.stop) })
	b.wg.Wait()
}

// TestRolloutGroupOnThePage follows a rollout group on the API's page in a real headless
// Chromium: the group appears rolling, shows paused when paused and rolling again when
// resumed, and ends completed with every member counted — from the event stream, without a
// reload.
func TestRolloutGroupOnThePage(t *testing.T) {
	temporalBin(t)
	chromium(t)
	const apps, n = 3, 1
	d := startDev(t)
	for i := range apps {
		d.api.mustPost("/v1/desired_lrp/desire", obj{"desired_lrp": demoLRP(fmt.Sprintf("page%d", i), n)}, nil)
	}
	for i := range apps {
		guid := fmt.Sprintf("page%d", i)
		d.waitFor(t, guid+" RUNNING", 60*time.Second, func() bool { return d.allOn(guid, guid, n) })
	}
	b := openBrowser(t, d.api.base+"/ui/")
	b.waitText("#connection", "Live", 10*time.Second)
	b.waitText("#groups", "No rollout group yet", 5*time.Second)
	d.api.mustPost("/v1/rollout_groups/create", obj{"group_id": "page-env", "selector": obj{"domain": "cf-apps"},
		"patch": obj{"env": []obj{{"name": "FEATURE", "value": "on"}}}, "max_concurrent_lrps": 1,
		"waves": []obj{{"percent": 34}, {"percent": 100}}, "pause_between_waves_ms": 3000}, nil)
	b.waitText(`#group-table tr[data-group="page-env"] td:nth-of-type(1)`, "rolling", 15*time.Second)
	d.api.mustPost("/v1/rollout_groups/pause", obj{"group_id": "page-env"}, nil)
	row := b.waitText(`#group-table tr[data-group="page-env"]`, "paused by an operator", 10*time.Second)
	t.Logf("paused: %q; screenshot %s", row, b.screenshot("group-paused"))
	d.api.mustPost("/v1/rollout_groups/resume", obj{"group_id": "page-env"}, nil)
	d.waitFor(t, "the group to complete", 60*time.Second, func() bool { return d.group("page-env").State == "completed" })
	row = b.waitText(`#group-table tr[data-group="page-env"]`, "3 of 3", 30*time.Second)
	b.waitText(`#group-table tr[data-group="page-env"] td:nth-of-type(1)`, "completed", 5*time.Second)
	if !strings.Contains(row, "34 %: completed — 2 completed") || !strings.Contains(row, "100 %: completed — 1 completed") {
		t.Errorf("the waves as the page shows them: %q", row)
	}
	t.Logf("completed: %q; screenshot %s", row, b.screenshot("group-completed"))
	if b.count(`#rollouts tbody tr`) < apps {
		t.Errorf("the members' rollouts are not listed: %q", b.text("#rollouts"))
	}
	b.checkNoErrors()
}
