package scenario

// Steering a rollout: a new definition during it, cancel and rollback (seed 001), activating
// a stored definition, pause and resume.

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/workflows"
)

// Seed 000, "New LRP definition during existing rolling deploy": while the walk to v2 waits
// on index 2, v3 arrives through UpdateLRPDeployment. v2's not-yet-running instance at index 2
// is stopped (v1 keeps serving there), the walk restarts at index 0 toward v3, and v2 is
// pruned. Seed 001's UpdateDesiredLRP refuses the same with UpdateInProgress.
func testRolloutSupersede(t *testing.T) {
	const n, guid = 4, "sup-web"
	c := newRolloutCluster(t, rolloutOptions{})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "4 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })

	ev := c.recordEvents()
	s := c.sample(guid, n)
	c.updateDeployment(guid, "v2", simDefinition(env("SIM_START_DELAY_MS", "1500"), env("VERSION", "2")))
	c.waitLRP(guid, "the walk to wait on index 2", 30*time.Second, func() bool {
		a := c.instanceOf(guid, "v2", 2)
		return c.rollout(guid).UpdatedInstances == 2 && a != nil && a.State != model.StateRunning
	})
	c.updateDeployment(guid, "v3", simDefinition(env("SIM_START_DELAY_MS", "300"), env("VERSION", "3")))
	v9 := simDefinition(env("VERSION", "9"))
	v9.DefinitionID = "v9"
	expectAPIError(t, c.BBS.UpdateDesiredLRP(ctx, guid, &model.DesiredLRPUpdate{Definition: &v9}),
		0, model.ErrUpdateInProgress)

	c.waitLRP(guid, "the rollout to complete with every index on v3", 40*time.Second, func() bool {
		return c.rollout(guid).State == model.RolloutCompleted && c.allOn(guid, "v3", n)
	})
	s.finish(t)
	if s.everRunning("v2", 2) || s.everRunning("v2", 3) {
		t.Fatalf("v2 ran at index 2 or 3 after it was superseded")
	}
	ev.checkHandover(t, guid, "v2", "v3", 0, 1)
	ev.checkHandover(t, guid, "v1", "v3", 2, 3)
	ev.checkOrder(t, guid, "v3", 0, 1, 2, 3)
	r := c.rollout(guid)
	if r.FromDefinitionID != "v1" || r.ToDefinitionID != "v3" || r.UpdatedInstances != n {
		t.Fatalf("rollout = %+v", r)
	}
	var list struct {
		Rollouts []model.Rollout `json:"rollouts"`
	}
	c.mustPost("/v1/rollouts/list", map[string]string{"process_guid": guid}, &list)
	states := map[string]string{}
	for _, ro := range list.Rollouts {
		states[ro.ToDefinitionID] = ro.State
	}
	if states["v2"] != model.RolloutSuperseded || states["v3"] != model.RolloutCompleted || len(states) != 2 {
		t.Fatalf("rollouts by target: %v", states)
	}
	if _, ok := c.deployment(guid).Definitions["v2"]; ok {
		t.Logf("v2 is still in the definitions map when the rollout completes; a convergence pass prunes it")
	}
	if _, err := c.Store.Converge(ctx, db.ConvergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if defs := c.deployment(guid).Definitions; len(defs) != 1 || defs["v3"].DefinitionID != "v3" {
		t.Fatalf("definitions after the rollout and a convergence pass: %v", keys(defs))
	}
}

// Seed 001: a cancel after two indices walks them back, index by index, to v1 with zero
// downtime — an old instance still draining taken back into service as it is, one already
// stopped started again before the v2 one there stops; a rollback after a completed update rolls to a stored definition; a rollback to a
// definition never stored is ResourceNotFound.
func testRolloutCancelAndRollback(t *testing.T) {
	const n, guid = 4, "cancel-web"
	c := newRolloutCluster(t, rolloutOptions{})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "4 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })

	ev := c.recordEvents()
	s := c.sample(guid, n)
	before := c.guidsOn(guid, "v1")
	v2 := simDefinition(env("SIM_START_DELAY_MS", "600"), env("VERSION", "2"))
	v2.DefinitionID = "v2"
	if err := c.BBS.UpdateDesiredLRP(ctx, guid, &model.DesiredLRPUpdate{Definition: &v2}); err != nil {
		t.Fatal(err)
	}
	c.waitLRP(guid, "two indices on v2", 30*time.Second, func() bool { return c.rollout(guid).UpdatedInstances >= 2 })
	c.mustPost("/v1/desired_lrp/cancel_update", map[string]string{"process_guid": guid}, nil)
	c.waitLRP(guid, "the cancel to walk back to v1", 30*time.Second, func() bool {
		return c.rollout(guid).State == model.RolloutCanceled && c.allOn(guid, "v1", n)
	})
	s.finish(t)
	// The indices whose v1 instance was retired are walked back, highest first: a v1
	// instance still draining (the cell's drain is 2 s) is the same instance, serving on; one
	// already stopped was started again, RUNNING before the v2 one there stopped.
	var restarted []int32
	for i, g := range c.guidsOn(guid, "v1") {
		if g != before[i] {
			restarted = append(restarted, i)
		}
	}
	t.Logf("after the walk back %d of %d indices run the v1 instance they ran before (never retired, or taken back while it drained); v1 started again at %v",
		n-len(restarted), n, restarted)
	if len(restarted) > 0 {
		back := ev.waitStopped(t, guid, "v1", len(restarted), 10*time.Second)
		ev.checkHandover(t, guid, "v2", "v1", back...)
		slices.Reverse(back)
		ev.checkOrder(t, guid, "v1", back...)
	}
	expectAPIError(t, c.post("/v1/desired_lrp/cancel_update", map[string]string{"process_guid": guid}, nil),
		http.StatusConflict, model.ErrNoUpdateInProgress)

	// Update to v3, let convergence prune v1 and v2 out of the map, then roll back to v2.
	v3 := simDefinition(env("VERSION", "3"))
	v3.DefinitionID = "v3"
	if err := c.BBS.UpdateDesiredLRP(ctx, guid, &model.DesiredLRPUpdate{Definition: &v3}); err != nil {
		t.Fatal(err)
	}
	c.waitLRP(guid, "the update to v3", 30*time.Second, func() bool {
		return c.rollout(guid).State == model.RolloutCompleted && c.allOn(guid, "v3", n)
	})
	if _, err := c.Store.Converge(ctx, db.ConvergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if defs := c.deployment(guid).Definitions; len(defs) != 1 {
		t.Fatalf("definitions after convergence: %v", keys(defs))
	}
	// Out of the map, a definition can no longer be activated, but seed 001's rollback still
	// finds it in the retained history.
	expectAPIError(t, c.post("/v1/lrp_deployments/activate", map[string]string{"process_guid": guid, "definition_id": "v2"}, nil),
		http.StatusNotFound, model.ErrResourceNotFound)
	s = c.sample(guid, n)
	c.mustPost("/v1/desired_lrp/rollback", map[string]string{"process_guid": guid, "definition_id": "v2"}, nil)
	c.waitLRP(guid, "the rollback to v2", 30*time.Second, func() bool {
		r := c.rollout(guid)
		return r.State == model.RolloutCompleted && r.Kind == model.RolloutKindRollback && c.allOn(guid, "v2", n)
	})
	s.finish(t)
	expectAPIError(t, c.post("/v1/desired_lrp/rollback", map[string]string{"process_guid": guid, "definition_id": "never-stored"}, nil),
		http.StatusNotFound, model.ErrResourceNotFound)
	if r := c.rollout(guid); r.ToDefinitionID != "v2" || r.State != model.RolloutCompleted {
		t.Fatalf("a refused rollback changed the rollout: %+v", r)
	}
}

// Seed 000's ActivateLRPDeploymentDefinition: during a failing rollout to v2, activating v1 (a
// definition of the map) walks back to it.
func testRolloutActivate(t *testing.T) {
	const n, guid = 3, "activate-web"
	c := newRolloutCluster(t, rolloutOptions{converge: true})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "3 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })

	s := c.sample(guid, n)
	c.updateWithStrategy(guid, "v2", simDefinition(env("SIM_FAIL_START", "1")), seedTolerance)
	c.waitLRP(guid, "v2 to fail at index 0", 20*time.Second, func() bool {
		a := c.instanceOf(guid, "v2", 0)
		return a != nil && a.CrashCount >= 2
	})
	var resp struct {
		LRPDeployment model.LRPDeployment `json:"lrp_deployment"`
	}
	c.mustPost("/v1/lrp_deployments/activate", map[string]string{"process_guid": guid, "definition_id": "v1"}, &resp)
	if resp.LRPDeployment.ActiveDefinitionID != "v1" {
		t.Fatalf("activate answered %+v", resp.LRPDeployment)
	}
	c.waitLRP(guid, "the activation to complete on v1", 30*time.Second, func() bool {
		r := c.rollout(guid)
		return r.State == model.RolloutCompleted && r.Kind == model.RolloutKindActivate && c.allOn(guid, "v1", n)
	})
	s.finish(t)
	var list struct {
		Rollouts []model.Rollout `json:"rollouts"`
	}
	c.mustPost("/v1/rollouts/list", map[string]string{"process_guid": guid}, &list)
	for _, ro := range list.Rollouts {
		if ro.ToDefinitionID == "v2" && ro.State != model.RolloutSuperseded {
			t.Fatalf("the rollout to v2 ended %s", ro.State)
		}
	}
	dep := c.deployment(guid)
	if dep.ActiveDefinitionID != "v1" || dep.HealthyDefinitionID != "v1" {
		t.Fatalf("deployment: active %q healthy %q", dep.ActiveDefinitionID, dep.HealthyDefinitionID)
	}
	c.waitLRP(guid, "v2 to leave the definitions map", 10*time.Second, func() bool {
		_, ok := c.deployment(guid).Definitions["v2"]
		return !ok
	})
}

// Pause and resume through workflows.SignalRollout; the progress query answers while paused.
func testRolloutPauseResume(t *testing.T) {
	const n, guid = 4, "pause-web"
	c := newRolloutCluster(t, rolloutOptions{})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "4 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })

	s := c.sample(guid, n)
	c.updateDeployment(guid, "v2", simDefinition(env("SIM_START_DELAY_MS", "300"), env("VERSION", "2")))
	c.waitLRP(guid, "one index on v2", 30*time.Second, func() bool { return c.rollout(guid).UpdatedInstances >= 1 })
	if err := workflows.SignalRollout(ctx, c.Temporal, guid, workflows.SignalPause); err != nil {
		t.Fatal(err)
	}
	var p workflows.RolloutProgress
	c.waitLRP(guid, "the walk to pause with nothing in flight", 20*time.Second, func() bool {
		p = c.progress(guid)
		return p.State == model.RolloutPaused && len(p.InFlight) == 0 && c.rollout(guid).State == model.RolloutPaused
	})
	held := len(p.Updated)
	v2s := c.countOn(guid, "v2")
	time.Sleep(1500 * time.Millisecond) // a paused walk starts nothing, however long it waits
	p = c.progress(guid)
	if p.State != model.RolloutPaused || len(p.Updated) != held || len(p.InFlight) != 0 || c.countOn(guid, "v2") != v2s {
		t.Fatalf("the walk moved while paused: %+v (v2 instances %d, were %d)", p, c.countOn(guid, "v2"), v2s)
	}
	if r := c.rollout(guid); r.State != model.RolloutPaused || r.UpdatedInstances != int32(held) {
		t.Fatalf("rollout row while paused: %+v", r)
	}
	if p.FromDefinitionID != "v1" || p.ToDefinitionID != "v2" || p.Instances != n || p.CurrentIndex != int32(held) {
		t.Fatalf("progress while paused: %+v", p)
	}
	if err := workflows.SignalRollout(ctx, c.Temporal, guid, workflows.SignalResume); err != nil {
		t.Fatal(err)
	}
	c.waitLRP(guid, "the resumed rollout to complete", 30*time.Second, func() bool {
		return c.rollout(guid).State == model.RolloutCompleted && c.allOn(guid, "v2", n)
	})
	s.finish(t)
}

// Pause and resume through the API (ROLLOUTS-NEXT.md section 3): a resume of a rollout that
// walks and was never paused is refused with its phase; a pause holds the walk (repeated, 200),
// a resume releases it, and a resume repeated once that one took effect answers 200 and
// changes nothing: the walk goes on and completes.
func testRolloutPauseResumeThroughTheAPI(t *testing.T) {
	const n, guid = 4, "control-web"
	c := newRolloutCluster(t, rolloutOptions{})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "4 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })
	s := c.sample(guid, n)
	c.updateDeployment(guid, "v2", simDefinition(env("SIM_START_DELAY_MS", "500"), env("VERSION", "2")))
	body := map[string]string{"process_guid": guid}

	err := c.post("/v1/rollouts/resume", body, nil)
	expectAPIError(t, err, http.StatusConflict, model.ErrInvalidPhase)
	if !strings.Contains(err.Error(), "walking, not paused") {
		t.Fatalf("InvalidPhase must name the phase: %v", err)
	}
	c.mustPost("/v1/rollouts/pause", body, nil)
	c.mustPost("/v1/rollouts/pause", body, nil) // repeated: 200, nothing changes
	c.waitLRP(guid, "the walk to pause with nothing in flight", 20*time.Second, func() bool {
		return c.progress(guid).State == model.RolloutPaused && len(c.progress(guid).InFlight) == 0 &&
			c.rollout(guid).State == model.RolloutPaused
	})
	held := c.rollout(guid).UpdatedInstances
	time.Sleep(time.Second) // a paused walk starts nothing
	if r := c.rollout(guid); r.State != model.RolloutPaused || r.UpdatedInstances != held {
		t.Fatalf("the walk moved while paused: %+v", r)
	}

	c.mustPost("/v1/rollouts/resume", body, nil)
	c.waitLRP(guid, "the resumed walk to go on", 20*time.Second, func() bool { return c.rollout(guid).State != model.RolloutPaused })
	if r := c.rollout(guid); r.State != model.RolloutActive {
		t.Fatalf("the resumed rollout is %s before the resume is repeated (%+v)", r.State, r)
	}
	c.mustPost("/v1/rollouts/resume", body, nil) // repeated after it took effect: 200, nothing changes
	if p := c.progress(guid); p.State != model.RolloutActive {
		t.Fatalf("the repeated resume changed the walk: %+v", p)
	}
	c.waitLRP(guid, "the rollout to complete", 30*time.Second, func() bool {
		return c.rollout(guid).State == model.RolloutCompleted && c.allOn(guid, "v2", n)
	})
	s.finish(t)
	expectAPIError(t, c.post("/v1/rollouts/resume", body, nil), http.StatusConflict, model.ErrNoRolloutInProgress)
}
