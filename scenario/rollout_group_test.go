package scenario

import (
	"fmt"
	"slices"
	"strings"
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

// closedSpan is a window span that is not open today or tomorrow; openSpans are open always.
func closedSpan() map[string]any {
	day := [...]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}[time.Now().UTC().AddDate(0, 0, 3).Weekday()]
	return map[string]any{"days": []string{day}, "start": "10:00", "end": "11:00", "time_zone": "UTC"}
}

func openSpans() []map[string]any {
	all := []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}
	return []map[string]any{{"days": all, "start": "00:00", "end": "23:59", "time_zone": "UTC"},
		{"days": all, "start": "23:59", "end": "00:00", "time_zone": "UTC"}}
}

// A group naming a closed window waits (waiting_for_window, no member started) and rolls once
// the window is upserted open; when it closes mid-walk the group starts no member and its
// members under way hold at their next index boundary, and it completes once the window opens
// again. A freeze holds a group the same way (a new group is refused, Frozen, unless it breaks
// the glass), and the unfreeze lets it finish. Budgets and zero downtime hold throughout.
func TestRolloutGroupWindowAndFreeze(t *testing.T) {
	c := newRolloutCluster(t, rolloutOptions{cells: 4})
	const n = 3
	guids := c.desireFleet("gate-", 12, n)
	watch := c.WatchFleet("gate-", n)
	watch.WatchGroup("windowed", 2, 0)
	c.mustPost("/v1/rollout_windows/upsert", map[string]any{"name": "nights", "schedule": []map[string]any{closedSpan()}}, nil)
	slow := env("SIM_START_DELAY_MS", "300") // members take a while, so the window closes mid-walk
	group := func(id string, guids []string, extra map[string]any) map[string]any {
		g := map[string]any{"group_id": id, "selector": map[string]any{"process_guids": guids},
			"patch": map[string]any{"env": []model.EnvironmentVariable{slow, env("GROUP", id)}}, "max_concurrent_lrps": 2}
		for k, v := range extra {
			g[k] = v
		}
		return g
	}
	c.mustPost("/v1/rollout_groups/create", group("windowed", guids[:8], map[string]any{"window": "nights"}), nil)
	c.waitFor("the group to wait for its window", 15*time.Second, func() bool { return c.group("windowed").State == model.GroupWaitingForWindow })
	time.Sleep(time.Second)
	if g := c.group("windowed"); len(members(g, model.MemberPending)) != 8 {
		t.Fatalf("a group whose window is closed started members: %+v", g.Waves)
	}
	c.mustPost("/v1/rollout_windows/upsert", map[string]any{"name": "nights", "schedule": openSpans()}, nil)
	c.waitFor("a member completed, two rolling, in the open window", 30*time.Second, func() bool {
		g := c.group("windowed")
		return len(members(g, model.MemberCompleted)) >= 1 && g.Budgets.LRPsInUse == 2
	})
	c.mustPost("/v1/rollout_windows/upsert", map[string]any{"name": "nights", "schedule": []map[string]any{closedSpan()}}, nil)
	c.waitFor("the group to wait for its window again", 15*time.Second, func() bool { return c.group("windowed").State == model.GroupWaitingForWindow })
	held := c.group("windowed")
	for _, guid := range members(held, model.MemberRolling) {
		c.waitLRP(guid, "a member under way to hold", 15*time.Second, func() bool {
			return c.rollout(guid).Phase == model.PhaseWaitingForWindow
		})
	}
	time.Sleep(time.Second)
	if g := c.group("windowed"); len(members(g, model.MemberPending)) != len(members(held, model.MemberPending)) ||
		len(members(g, model.MemberCompleted)) != len(members(held, model.MemberCompleted)) {
		t.Fatalf("the window closed, yet members started or completed: %+v → %+v", held.Waves, g.Waves)
	}
	t.Logf("held with %d completed, %d rolling, %d pending", len(members(held, model.MemberCompleted)),
		len(members(held, model.MemberRolling)), len(members(held, model.MemberPending)))
	if len(members(held, model.MemberRolling)) == 0 {
		t.Fatal("the window closed with no member under way: the test did not hold one")
	}
	c.mustPost("/v1/rollout_windows/upsert", map[string]any{"name": "nights", "schedule": openSpans()}, nil)
	c.waitFor("the windowed group to complete", 60*time.Second, func() bool { return c.group("windowed").State == model.GroupCompleted })

	// The freeze: a group under way holds (its member under way holds too), a new one is
	// refused unless it breaks the glass, and the unfreeze lets the held one finish.
	c.mustPost("/v1/rollout_groups/create", group("thawed", guids[10:], map[string]any{"max_concurrent_lrps": 1}), nil)
	c.waitFor("the first member of the group to roll", 15*time.Second, func() bool { return c.group("thawed").Budgets.LRPsInUse == 1 })
	c.mustPost("/v1/rollouts/freeze", map[string]any{"reason": "incident 42"}, nil)
	c.waitFor("the group to hold, frozen", 15*time.Second, func() bool { return strings.HasPrefix(c.group("thawed").Reason, "frozen: incident 42") })
	err := c.post("/v1/rollout_groups/create", group("refused", guids[8:10], nil), nil)
	expectAPIError(t, err, 409, model.ErrFrozen)
	c.mustPost("/v1/rollout_groups/create", group("glass", guids[8:10], map[string]any{"strategy": map[string]any{"break_glass": "the fix for incident 42"}}), nil)
	c.waitFor("the break-glass group to complete while frozen", 60*time.Second, func() bool { return c.group("glass").State == model.GroupCompleted })
	if g := c.group("thawed"); len(members(g, model.MemberPending)) != 1 || g.State != model.GroupRolling {
		t.Fatalf("a frozen group started its second member: %s %+v", g.State, g.Waves)
	}
	c.mustPost("/v1/rollouts/unfreeze", map[string]any{}, nil)
	c.waitFor("the held group to complete after the unfreeze", 60*time.Second, func() bool { return c.group("thawed").State == model.GroupCompleted })
	for _, guid := range guids[8:10] {
		c.waitLRP(guid, "break glass members on the change", 10*time.Second, func() bool { return c.allOn(guid, "glass", n) })
	}
	samples := watch.Finish(len(guids))
	t.Logf("%d fleet-wide samples, zero downtime, budgets held", samples)
}
