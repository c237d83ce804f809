package scenario

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// --- rollout groups (ROLLOUTS-NEXT.md section 6) ---

// desireFleet creates n deployments <prefix>NN of instances each, on v1, and waits until
// every one runs.
func (c *rolloutCluster) desireFleet(prefix string, n int, instances int32) []string {
	c.t.Helper()
	guids := make([]string, n)
	for i := range n {
		guids[i] = fmt.Sprintf("%s%02d", prefix, i)
		c.createDeployment(guids[i], instances, "v1", simDefinition())
	}
	for _, g := range guids {
		c.waitLRP(g, g+" on v1", 30*time.Second, func() bool { return c.allOn(g, "v1", instances) })
	}
	return guids
}

func (c *rolloutCluster) group(id string) model.RolloutGroup {
	c.t.Helper()
	var resp struct {
		RolloutGroup model.RolloutGroup `json:"rollout_group"`
	}
	c.mustPost("/v1/rollout_groups/get", map[string]string{"group_id": id}, &resp)
	return resp.RolloutGroup
}

// members are a group's members by state, over every wave.
func members(g model.RolloutGroup, state string) []string {
	var out []string
	for _, w := range g.Waves {
		for _, m := range w.Members {
			if m.State == state {
				out = append(out, m.ProcessGUID)
			}
		}
	}
	return out
}

// A stack change rolled across 40 apps in three waves (4, 16, 20 members) where two apps of
// wave 2 cannot start with it: the second failure passes max_failed_percent (2 of 16 >
// 10 %), the group aborts, the members under way revert, wave 3 never starts. Zero downtime
// and both budgets hold in every fleet-wide sample.
func TestRolloutGroupAbortsWhenAWaveFails(t *testing.T) {
	c := newRolloutCluster(t, rolloutOptions{cells: 6})
	const n = 3
	guids := c.desireFleet("fleet-", 40, n)
	broken := []string{"fleet-05", "fleet-11"}
	c.chaos.setScript(func(key model.ActualLRPKey, _ int) startOutcome {
		if key.DefinitionID == "fix" && slices.Contains(broken, key.ProcessGUID) {
			return startFails
		}
		return startNormally
	})
	watch := c.WatchFleet("fleet-", n)
	watch.WatchGroup("fix", 6, 2)
	c.mustPost("/v1/rollout_groups/create", map[string]any{
		"group_id": "fix", "selector": map[string]any{"domain": "cf-apps"},
		"patch":               map[string]any{"env": []model.EnvironmentVariable{env("STACK", "v2")}},
		"strategy":            map[string]any{"failure": map[string]any{"max_crashes": 1}, "index_deadline_ms": 10000},
		"waves":               []map[string]any{{"percent": 10}, {"percent": 50}, {"percent": 100}},
		"max_concurrent_lrps": 6, "max_concurrent_per_cell": 2, "max_failed_percent": 10,
	}, nil)
	c.waitFor("the group to abort with nothing rolling", 90*time.Second, func() bool {
		g := c.group("fix")
		return g.State == model.GroupAborted && g.Budgets.LRPsInUse == 0
	})
	g := c.group("fix")
	t.Logf("%s: %s; completed %d, reverted %v, skipped %d", g.State, g.Reason,
		len(members(g, model.MemberCompleted)), members(g, model.MemberReverted), len(members(g, model.MemberSkipped)))
	if g.Wave != 1 || g.Waves[0].State != model.WaveCompleted || g.Waves[1].State != model.WaveAborted || g.Waves[2].State != model.WaveSkipped {
		t.Fatalf("waves: %+v", g.Waves)
	}
	reverted := members(g, model.MemberReverted)
	for _, b := range broken {
		if !slices.Contains(reverted, b) {
			t.Fatalf("%s, which cannot start the change, is not reverted: %v", b, reverted)
		}
	}
	for _, m := range g.Waves[0].Members {
		c.waitLRP(m.ProcessGUID, "wave 1 on the change", 10*time.Second, func() bool { return c.allOn(m.ProcessGUID, "fix", n) })
	}
	for _, guid := range reverted {
		c.waitLRP(guid, "a reverted member back on v1", 10*time.Second, func() bool { return c.allOn(guid, "v1", n) })
	}
	for _, m := range g.Waves[2].Members {
		if m.State != model.MemberSkipped || m.RolloutID != "" || !c.allOn(m.ProcessGUID, "v1", n) {
			t.Fatalf("wave 3 member %+v rolled", m)
		}
	}
	samples := watch.Finish(len(guids))
	lrps, perCell := watch.GroupPeaks()
	t.Logf("%d fleet-wide samples: at most %d members rolling (max 6), %d new instances starting on one cell (max 2)", samples, lrps, perCell)
}

// A group paused stops starting members (those rolling finish), resumes when told, survives
// its worker's replacement and its workflow's loss (convergence starts it again), and
// completes with every member on the change — budgets held and zero downtime throughout.
func TestRolloutGroupPauseResumeAndLosses(t *testing.T) {
	c := newRolloutCluster(t, rolloutOptions{cells: 4})
	const n = 2
	guids := c.desireFleet("steer-", 24, n)
	watch := c.WatchFleet("steer-", n)
	watch.WatchGroup("env", 3, 2)
	c.mustPost("/v1/rollout_groups/create", map[string]any{
		"group_id": "env", "selector": map[string]any{"process_guids": guids},
		"patch": map[string]any{"env": []model.EnvironmentVariable{env("FEATURE", "on")}},
		"waves": []map[string]any{{"percent": 50}, {"percent": 100}}, "pause_between_waves_ms": 500,
		"max_concurrent_lrps": 3, "max_concurrent_per_cell": 2,
	}, nil)
	c.waitFor("two members completed", 30*time.Second, func() bool { return len(members(c.group("env"), model.MemberCompleted)) >= 2 })
	c.mustPost("/v1/rollout_groups/pause", map[string]string{"group_id": "env"}, nil)
	c.waitFor("the paused group's members to finish", 30*time.Second, func() bool { return c.group("env").Budgets.LRPsInUse == 0 })
	held := len(members(c.group("env"), model.MemberPending))
	time.Sleep(time.Second)
	if g := c.group("env"); g.State != model.GroupPaused || len(members(g, model.MemberPending)) != held {
		t.Fatalf("a paused group started members: %s, %d pending (had %d)", g.State, len(members(g, model.MemberPending)), held)
	}
	c.mustPost("/v1/rollout_groups/resume", map[string]string{"group_id": "env"}, nil)
	c.waitFor("members starting again", 30*time.Second, func() bool { return len(members(c.group("env"), model.MemberPending)) < held })

	c.RestartWorker()
	c.waitFor("wave 2", 60*time.Second, func() bool { return c.group("env").Wave == 1 })
	if err := c.Temporal.TerminateWorkflow(ctx, model.RolloutGroupWorkflowID("env"), "", "the test loses the group's workflow"); err != nil {
		t.Fatal(err)
	}
	if err := c.TriggerConvergence(ctx); err != nil {
		t.Fatal(err)
	}
	c.waitFor("the group to complete", 90*time.Second, func() bool { return c.group("env").State == model.GroupCompleted })
	g := c.group("env")
	if done := members(g, model.MemberCompleted); len(done) != len(guids) {
		t.Fatalf("completed members %d of %d: %+v", len(done), len(guids), g.Waves)
	}
	for _, guid := range guids {
		c.waitLRP(guid, "every member on the change", 10*time.Second, func() bool { return c.allOn(guid, "env", n) })
	}
	samples := watch.Finish(len(guids))
	lrps, perCell := watch.GroupPeaks()
	t.Logf("%d fleet-wide samples: at most %d members rolling (max 3), %d new instances starting on one cell (max 2)", samples, lrps, perCell)
}
