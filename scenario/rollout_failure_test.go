package scenario

// Rollouts that heal themselves (ROLLOUTS-NEXT.md section 4) on the in-process cluster: a new
// definition that fails is reverted by the default strategy, start before stop, with the
// served indices sampled throughout; an operator's abort; a revert that cannot start; the
// pace of a rollout.

import (
	"maps"
	"net/http"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/model"
)

// guidsOn maps each index to the instance guid of def there.
func (c *rolloutCluster) guidsOn(guid, def string) map[int32]string {
	out := map[int32]string{}
	for _, a := range c.instances(guid) {
		if a.DefinitionID == def {
			out[a.Index] = a.InstanceGUID
		}
	}
	return out
}

// waitEnded waits for the rollout of guid to end in state and returns it.
func (c *rolloutCluster) waitEnded(guid, state string, within time.Duration) model.Rollout {
	c.t.Helper()
	c.waitLRP(guid, "the rollout to end "+state, within, func() bool {
		r := c.rollout(guid)
		if !r.InProgress() && r.State != state {
			c.t.Fatalf("the rollout ended %s, want %s: %+v", r.State, state, r)
		}
		return r.State == state
	})
	return c.rollout(guid)
}

// checkFailure asserts the rollout's failure.
func checkFailure(t *testing.T, f *model.RolloutFailure, reason, kind string, index int32) {
	t.Helper()
	if f == nil || f.Reason != reason || f.Kind != kind || (index >= 0 && (f.Index == nil || *f.Index != index)) {
		t.Fatalf("failure %+v, want %s (%s) at index %d", f, reason, kind, index)
	}
}

// A crash loop at index 0 under the default strategy: the rollout reverts at the third crash,
// before any old instance was retired — every v1 instance is the one from before the update.
func testRolloutCrashLoopReverts(t *testing.T) {
	const n, guid = 4, "crashloop-web"
	c := newRolloutCluster(t, rolloutOptions{converge: true})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "4 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })
	before := c.guidsOn(guid, "v1")

	s := c.sample(guid, n)
	c.updateDeployment(guid, "v2", simDefinition(env("SIM_FAIL_START", "1")))
	r := c.waitEnded(guid, model.RolloutReverted, 30*time.Second)
	checkFailure(t, r.Failure, model.FailureCrashLoop, model.FailureApp, 0)
	if r.Phase != model.PhaseReverted || r.RevertedTo != "v1" || r.Failure.DefinitionID != "v2" {
		t.Fatalf("rollout %+v", r)
	}
	c.waitLRP(guid, "every index on v1 and no v2 instance", 20*time.Second, func() bool {
		return c.allOn(guid, "v1", n) && c.countOn(guid, "v2") == 0
	})
	s.finish(t)
	if after := c.guidsOn(guid, "v1"); len(after) != n || !maps.Equal(after, before) {
		t.Fatalf("v1 instances changed: %v → %v (an old instance was retired)", before, after)
	}
	for i := int32(1); i < n; i++ {
		if s.everSeen("v2", i) {
			t.Errorf("v2 was desired at index %d although it never ran", i)
		}
	}
	if dep := c.deployment(guid); dep.ActiveDefinitionID != "v1" {
		t.Fatalf("active definition %q after the revert", dep.ActiveDefinitionID)
	}
}

// A failure at index 3 of 6: indices 0–2 were updated and walk back to v1, each v1 instance
// RUNNING before the v2 one at its index stops.
func testRolloutFailureAtIndexThreeReverts(t *testing.T) {
	const n, guid = 6, "fail3-web"
	c := newRolloutCluster(t, rolloutOptions{converge: true})
	c.chaos.setScript(func(key model.ActualLRPKey, _ int) startOutcome {
		if key.ProcessGUID == guid && key.DefinitionID == "v2" && key.Index == 3 {
			return startFails
		}
		return startNormally
	})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "6 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })
	ev := c.recordEvents()
	s := c.sample(guid, n)
	c.updateDeployment(guid, "v2", simDefinition(env("VERSION", "2")))
	r := c.waitEnded(guid, model.RolloutReverted, 40*time.Second)
	checkFailure(t, r.Failure, model.FailureCrashLoop, model.FailureApp, 3)
	c.waitLRP(guid, "every index on v1", 20*time.Second, func() bool {
		return c.allOn(guid, "v1", n) && c.countOn(guid, "v2") == 0
	})
	s.finish(t)
	ev.checkHandover(t, guid, "v2", "v1", 0, 1, 2)
	for i := int32(4); i < n; i++ {
		if s.everSeen("v2", i) {
			t.Errorf("v2 was desired at index %d, past the failure", i)
		}
	}
}

// A definition that runs but never becomes ready fails at the index deadline as not_ready.
func testRolloutNeverReadyReverts(t *testing.T) {
	const n, guid = 3, "notready-web"
	c := newRolloutCluster(t, rolloutOptions{})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "3 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })
	s := c.sample(guid, n)
	v2 := simDefinition(env("SIM_READINESS", "fail"), env("VERSION", "2"))
	v2.CheckDefinition = &model.CheckDefinition{ReadinessChecks: []model.Check{{HTTPCheck: &model.HTTPCheck{Port: 8080, Path: "/ready"}}}}
	c.updateWithStrategy(guid, "v2", v2, map[string]any{"index_deadline_ms": 1500})
	r := c.waitEnded(guid, model.RolloutReverted, 30*time.Second)
	checkFailure(t, r.Failure, model.FailureNotReady, model.FailureApp, 0)
	c.waitLRP(guid, "every index on v1", 20*time.Second, func() bool {
		return c.allOn(guid, "v1", n) && c.countOn(guid, "v2") == 0
	})
	s.finish(t)
	if !s.everNotReady("v2", 0) {
		t.Fatal("v2 at index 0 was never seen RUNNING and not ready")
	}
}

// An operator's abort mid-walk reverts with an operator failure; afterwards the controls say
// there is no rollout.
func testRolloutAbortReverts(t *testing.T) {
	const n, guid = 4, "abort-web"
	c := newRolloutCluster(t, rolloutOptions{})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "4 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })
	s := c.sample(guid, n)
	c.updateDeployment(guid, "v2", simDefinition(env("SIM_START_DELAY_MS", "500"), env("VERSION", "2")))
	c.waitLRP(guid, "one index on v2", 20*time.Second, func() bool { return c.rollout(guid).UpdatedInstances >= 1 })
	c.mustPost("/v1/rollouts/abort", map[string]string{"process_guid": guid, "reason": "p99 doubled"}, nil)
	c.mustPost("/v1/rollouts/abort", map[string]string{"process_guid": guid, "reason": "again"}, nil) // repeated: no change
	r := c.waitEnded(guid, model.RolloutReverted, 30*time.Second)
	checkFailure(t, r.Failure, model.FailureAborted, model.FailureOperator, -1)
	c.waitListedInPhase(guid, model.PhaseReverted)
	if r.Failure.Detail != "p99 doubled" {
		t.Fatalf("failure detail %q", r.Failure.Detail)
	}
	c.waitLRP(guid, "every index on v1", 20*time.Second, func() bool {
		return c.allOn(guid, "v1", n) && c.countOn(guid, "v2") == 0
	})
	s.finish(t)
	for _, path := range []string{"/v1/rollouts/abort", "/v1/rollouts/pause", "/v1/rollouts/resume"} {
		expectAPIError(t, c.post(path, map[string]string{"process_guid": guid}, nil), http.StatusConflict, model.ErrNoRolloutInProgress)
	}
}

// A revert whose definition no longer starts pauses with both failures shown, every index
// still served by the definition it has; once v1 starts again, a resume finishes the revert.
func testRolloutRevertThatCannotStartPauses(t *testing.T) {
	const n, guid = 3, "norevert-web"
	c := newRolloutCluster(t, rolloutOptions{converge: true})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "3 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })
	s := c.sample(guid, n)
	// v2 never starts at the last index: the rollout is still walking at the abort below.
	c.chaos.setScript(func(key model.ActualLRPKey, _ int) startOutcome {
		if key.ProcessGUID == guid && key.DefinitionID == "v2" && key.Index == n-1 {
			return startHangs
		}
		return startNormally
	})
	c.updateWithStrategy(guid, "v2", simDefinition(env("SIM_START_DELAY_MS", "300"), env("VERSION", "2")),
		map[string]any{"failure": map[string]any{"max_crashes": 2}, "index_deadline_ms": 15000})
	c.waitLRP(guid, "two indices on v2", 20*time.Second, func() bool { return c.rollout(guid).UpdatedInstances >= 2 })
	// The retired v1 instances are stopped (past their drain), so the revert must start v1
	// again rather than take them back.
	c.waitLRP(guid, "the retired v1 instances stopped", 20*time.Second, func() bool { return c.countOn(guid, "v1") <= n-2 })
	// v1's droplet is gone: no new v1 instance starts.
	c.chaos.setScript(func(key model.ActualLRPKey, _ int) startOutcome {
		if key.ProcessGUID == guid && key.DefinitionID == "v1" {
			return startFails
		}
		return startNormally
	})
	c.mustPost("/v1/rollouts/abort", map[string]string{"process_guid": guid, "reason": "bad release"}, nil)
	c.waitLRP(guid, "the revert to hold with its own failure", 30*time.Second, func() bool {
		return c.rollout(guid).RevertFailure != nil
	})
	r := c.rollout(guid)
	checkFailure(t, r.Failure, model.FailureAborted, model.FailureOperator, -1)
	if r.RevertFailure.Reason != model.FailureCrashLoop || r.RevertFailure.DefinitionID != "v1" || r.Phase != model.PhaseReverting {
		t.Fatalf("held revert: %+v (revert failure %+v)", r, r.RevertFailure)
	}
	time.Sleep(time.Second) // held: no loop of retries
	if r2 := c.rollout(guid); r2.State != model.RolloutCanceling {
		t.Fatalf("the held revert moved on: %+v", r2)
	}
	c.chaos.setScript(nil)
	c.mustPost("/v1/rollouts/resume", map[string]string{"process_guid": guid}, nil)
	c.waitEnded(guid, model.RolloutReverted, 40*time.Second)
	c.waitLRP(guid, "every index on v1", 20*time.Second, func() bool {
		return c.allOn(guid, "v1", n) && c.countOn(guid, "v2") == 0
	})
	s.finish(t)
}

// max_in_flight 3 from the update's strategy, then set_pace to 1 mid-walk: the walk completes
// with every index served, and the rollout reports the new pace.
func testRolloutPaceFromStrategy(t *testing.T) {
	const n, guid = 6, "pace-web"
	c := newRolloutCluster(t, rolloutOptions{})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "6 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })
	s := c.sample(guid, n)
	c.updateWithStrategy(guid, "v2", simDefinition(env("SIM_START_DELAY_MS", "400"), env("VERSION", "2")),
		map[string]any{"max_in_flight": 3})
	c.waitLRP(guid, "v2 healthy and more than one index in flight", 20*time.Second, func() bool {
		starting := 0
		for _, a := range c.instances(guid) {
			if a.DefinitionID == "v2" && a.State != model.StateRunning {
				starting++
			}
		}
		return starting > 1
	})
	var paced struct {
		Rollout model.Rollout `json:"rollout"`
	}
	c.mustPost("/v1/rollouts/set_pace", map[string]any{"process_guid": guid, "max_in_flight": 1}, &paced)
	if got := paced.Rollout.Strategy.MaxInFlightOr(0); got != 1 {
		t.Fatalf("set_pace answered max_in_flight %d", got)
	}
	r := c.waitEnded(guid, model.RolloutCompleted, 40*time.Second)
	if r.Strategy.MaxInFlightOr(0) != 1 {
		t.Fatalf("rollout %+v", r)
	}
	c.waitLRP(guid, "every index on v2", 20*time.Second, func() bool { return c.allOn(guid, "v2", n) })
	s.finish(t)
}

// A cell lost mid-rollout is a platform failure: the instances it held are placed elsewhere
// and the rollout completes, never reverted for it. The indices whose instances the lost
// cell held are left out of the availability check (a lost cell is downtime there whatever
// the rollout does) until they run again.
func testRolloutCellLostIsNotAFailure(t *testing.T) {
	const n, guid = 4, "cell-lost-web"
	c := newRolloutCluster(t, rolloutOptions{converge: true, cells: 4})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "4 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })
	s := c.sample(guid, n)
	c.updateDeployment(guid, "v2", simDefinition(env("SIM_START_DELAY_MS", "600"), env("VERSION", "2")))
	var victim string
	c.waitLRP(guid, "a new instance placed past index 0", 20*time.Second, func() bool {
		for _, a := range c.instances(guid) {
			if a.DefinitionID == "v2" && a.Index > 0 && a.CellID != "" {
				victim = a.CellID
				return true
			}
		}
		return false
	})
	lost := map[int32]bool{}
	for _, a := range c.instances(guid) {
		if a.CellID == victim {
			lost[a.Index] = true
			s.exclude(a.Index)
		}
	}
	for _, sc := range c.Cells {
		if sc.ID == victim {
			sc.Stop()
		}
	}
	r := c.waitEnded(guid, model.RolloutCompleted, 60*time.Second)
	if r.Failure != nil || len(r.GivenUpIndices) > 0 {
		t.Fatalf("a lost cell counted as a failure: %+v (failure %+v)", r, r.Failure)
	}
	c.waitLRP(guid, "every index on v2, none on the lost cell", 30*time.Second, func() bool {
		for _, a := range c.instances(guid) {
			if a.CellID == victim {
				return false
			}
		}
		return c.allOn(guid, "v2", n)
	})
	for i := range lost {
		s.include(i)
	}
	s.finish(t)
}

// min_ready_ms: a release whose instances pass their readiness check for a moment and then
// fall over never counts as RUNNING, so no old instance is retired for it; it fails at the
// index deadline (not_ready) and is reverted. The same release without min_ready would have
// walked every index (its readiness passes first).
func testRolloutMinReadyCatchesAFlappingRelease(t *testing.T) {
	const n, guid = 3, "minready-web"
	c := newRolloutCluster(t, rolloutOptions{})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "3 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })
	before := c.guidsOn(guid, "v1")
	v2 := simDefinition(env("SIM_READINESS", "fail-after:300"), env("VERSION", "2"))
	v2.CheckDefinition = &model.CheckDefinition{ReadinessChecks: []model.Check{{HTTPCheck: &model.HTTPCheck{Port: 8080, Path: "/ready"}}}}
	c.updateWithStrategy(guid, "v2", v2, map[string]any{"min_ready_ms": 1500, "index_deadline_ms": 3000})
	r := c.waitEnded(guid, model.RolloutReverted, 30*time.Second)
	checkFailure(t, r.Failure, model.FailureNotReady, model.FailureApp, 0)
	c.waitLRP(guid, "every index on v1", 20*time.Second, func() bool {
		return c.allOn(guid, "v1", n) && c.countOn(guid, "v2") == 0
	})
	if after := c.guidsOn(guid, "v1"); !maps.Equal(after, before) {
		t.Fatalf("v1 instances changed: %v → %v (an old instance was retired for a flapping one)", before, after)
	}
}

// Canary steps by instances under the sampler: a timed step at 1 index, a manual one at 2
// that holds (awaiting_promotion, exactly 2 indices on the new definition) until a promote;
// then the walk completes.
func testRolloutCanarySteps(t *testing.T) {
	const n, guid = 4, "canary-web"
	c := newRolloutCluster(t, rolloutOptions{})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "4 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })
	s := c.sample(guid, n)
	expectAPIError(t, c.post("/v1/rollouts/promote", map[string]string{"process_guid": guid}, nil), http.StatusConflict, model.ErrNoRolloutInProgress)
	c.updateWithStrategy(guid, "v2", simDefinition(env("VERSION", "2")), map[string]any{"canary": map[string]any{"steps": []map[string]any{
		{"instances": 1, "pause_ms": 800}, {"instances": 2, "promote": "manual"}}}})
	c.waitLRP(guid, "the canary to await promotion", 20*time.Second, func() bool {
		return c.rollout(guid).Phase == model.PhaseAwaitingPromotion
	})
	// The hold changes the phase alone: a fleet query by phase finds it.
	c.waitListedInPhase(guid, model.PhaseAwaitingPromotion)
	time.Sleep(500 * time.Millisecond) // held: nothing moves
	r := c.rollout(guid)
	if r.UpdatedInstances != 2 || r.Step == nil || *r.Step != 1 || r.StepsTotal != 2 || c.countOn(guid, "v2") != 2 {
		t.Fatalf("at the manual step: %+v, instances %s", r, describe(c.instances(guid)))
	}
	c.mustPost("/v1/rollouts/promote", map[string]string{"process_guid": guid}, nil)
	c.waitEnded(guid, model.RolloutCompleted, 30*time.Second)
	c.waitListedInPhase(guid, model.PhaseCompleted)
	c.waitLRP(guid, "every index on v2", 20*time.Second, func() bool { return c.allOn(guid, "v2", n) })
	s.finish(t)
}
