package scenario

// Seed 000's three kinds of new definition: fully functional, failing, flaky.

import (
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/testcluster"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/workflows"
)

// Seed 000, "Fully functional new LRP definition": a rolling deploy through the N instances in
// order, each new instance RUNNING before the old one at its index stops; once the new
// definition has run, an instance that crashes out of order restarts on it; the old
// definition leaves the definitions map.
func testRolloutFullyFunctional(t *testing.T) {
	const n, guid = 5, "ff-web"
	c := newRolloutCluster(t, rolloutOptions{})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "5 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })

	ev := c.recordEvents()
	s := c.sample(guid, n)
	c.updateDeployment(guid, "v2", simDefinition(env("SIM_START_DELAY_MS", "400"), env("VERSION", "2")))

	// Out of order: once v2 has run (index 0), a v1 instance the walk has not reached crashes
	// for real; it restarts on the healthy definition, v2.
	c.waitLRP(guid, "v2 to become healthy", 20*time.Second, func() bool { return c.deployment(guid).HealthyDefinitionID == "v2" })
	const crashAt = n - 1
	victim := c.instanceOf(guid, "v1", crashAt)
	if victim == nil || victim.State != model.StateRunning || c.instanceOf(guid, "v2", crashAt) != nil {
		t.Fatalf("the walk reached index %d before the crash could be injected: v1 %+v", crashAt, victim)
	}
	s.exclude(crashAt) // a crash is downtime at its index, whatever the definition
	if !c.chaos.crash(victim.InstanceGUID) {
		t.Fatalf("no live container %s for v1 at index %d", victim.InstanceGUID, crashAt)
	}
	c.waitLRP(guid, "the crashed index to run again, on v2", 20*time.Second, func() bool {
		a := c.instanceOf(guid, "v2", crashAt)
		return a != nil && a.State == model.StateRunning && a.CrashCount >= 1
	})
	s.include(crashAt)
	if a := c.instanceOf(guid, "v1", crashAt); a != nil {
		t.Errorf("index %d still has a v1 instance after its crash: %+v", crashAt, a)
	}

	c.waitLRP(guid, "the rollout to complete with every index on v2", 40*time.Second, func() bool {
		return c.rollout(guid).State == model.RolloutCompleted && c.allOn(guid, "v2", n)
	})
	s.finish(t)
	r := c.rollout(guid)
	if r.Kind != model.RolloutKindUpdate || r.FromDefinitionID != "v1" || r.ToDefinitionID != "v2" ||
		r.UpdatedInstances != n || len(r.GivenUpIndices) != 0 {
		t.Fatalf("rollout = %+v", r)
	}
	// At each walked index the v2 instance was RUNNING before the v1 one stopped.
	ev.checkHandover(t, guid, "v1", "v2", 0, 1, 2, 3)
	ev.checkOrder(t, guid, "v2", 0, 1, 2, 3)

	dep := c.deployment(guid)
	if dep.ActiveDefinitionID != "v2" || dep.HealthyDefinitionID != "v2" {
		t.Fatalf("deployment after the rollout: active %q healthy %q", dep.ActiveDefinitionID, dep.HealthyDefinitionID)
	}
	// Seed 000: "Once no more instances are running with the id1 definition, Diego also removes
	// it from the map within the next LRP convergence tick." The workflow's own prune runs
	// before it finishes the rollout row, which still names v1 (as does the LRP's previous
	// definition), so it is the convergence pass that prunes v1 here.
	if _, ok := dep.Definitions["v1"]; ok {
		t.Logf("v1 is still in the definitions map when the rollout completes; a convergence pass prunes it")
		res, err := c.Store.Converge(ctx, db.ConvergeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if res.DefinitionsRetired < 1 {
			t.Fatalf("convergence retired no definition: %+v", res)
		}
	}
	if defs := c.deployment(guid).Definitions; len(defs) != 1 || defs["v2"].DefinitionID != "v2" {
		t.Fatalf("definitions after pruning: %v", keys(defs))
	}
	if st := c.searchAttribute(guid, workflows.SearchAttrRolloutState.GetName()); st != model.RolloutCompleted {
		t.Errorf("RolloutState search attribute = %q", st)
	}
}

// Readiness checks: a new definition's instance that runs but is not ready yet does not take
// over its index. The walk moves on only once it is ready, so at every sample each index has
// a RUNNING, ready instance, and each new instance was seen not ready before it served.
func testRolloutWaitsForReadiness(t *testing.T) {
	const n, guid = 3, "ready-web"
	c := newRolloutCluster(t, rolloutOptions{})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "3 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })

	ev := c.recordEvents()
	s := c.sample(guid, n)
	v2 := simDefinition(env("SIM_READINESS", "pass-after:700"), env("VERSION", "2"))
	v2.CheckDefinition = &model.CheckDefinition{ReadinessChecks: []model.Check{{HTTPCheck: &model.HTTPCheck{Port: 8080, Path: "/ready"}}}}
	c.updateDeployment(guid, "v2", v2)
	c.waitLRP(guid, "the rollout to complete with every index on v2", 40*time.Second, func() bool {
		return c.rollout(guid).State == model.RolloutCompleted && c.allOn(guid, "v2", n)
	})
	s.finish(t)
	for i := range int32(n) {
		if !s.everNotReady("v2", i) {
			t.Errorf("v2 at index %d was never seen RUNNING and not ready", i)
		}
	}
	ev.checkHandover(t, guid, "v1", "v2", 0, 1, 2)
	for _, a := range c.instances(guid) {
		if !a.Routable() {
			t.Errorf("after the rollout, not routable: %+v", a)
		}
	}
}

// Seed 000, "Failing new LRP definition": index 0 is retried indefinitely, every v1 instance
// keeps running, the healthy definition stays v1 and a crashing v1 instance restarts on v1;
// seed 001's cancel then walks back to v1.
func testRolloutFailingDefinition(t *testing.T) {
	const n, guid = 5, "failing-web"
	c := newRolloutCluster(t, rolloutOptions{converge: true})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "5 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })

	s := c.sample(guid, n)
	// The seed's failing definition under a strategy that tolerates its failures (the default
	// reverts it: rollout_failure_test.go).
	c.updateWithStrategy(guid, "v2", simDefinition(env("SIM_FAIL_START", "1")), seedTolerance)
	c.waitLRP(guid, "v2 at index 0 to have crashed and backed off", 20*time.Second, func() bool {
		a := c.instanceOf(guid, "v2", 0)
		return a != nil && a.CrashCount > model.DefaultRestartPolicy().ImmediateRestarts
	})
	// For a few seconds: index 0 keeps being retried, nothing else changes.
	first := c.instanceOf(guid, "v2", 0).CrashCount
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		c.checkStillFailing(guid, n)
		time.Sleep(100 * time.Millisecond)
	}
	c.waitLRP(guid, "more attempts at index 0", 20*time.Second, func() bool {
		a := c.instanceOf(guid, "v2", 0)
		return a != nil && a.CrashCount > first
	})
	c.checkStillFailing(guid, n)

	// A v1 instance crashes: it restarts on v1, the healthy definition.
	const crashAt = 3
	victim := c.instanceOf(guid, "v1", crashAt)
	s.exclude(crashAt)
	if !c.chaos.crash(victim.InstanceGUID) {
		t.Fatalf("no live container for v1 at index %d", crashAt)
	}
	c.waitLRP(guid, "the crashed v1 instance to run again on v1", 20*time.Second, func() bool {
		a := c.instanceOf(guid, "v1", crashAt)
		return a != nil && a.State == model.StateRunning && a.CrashCount >= 1 && a.InstanceGUID != victim.InstanceGUID
	})
	s.include(crashAt)
	c.checkStillFailing(guid, n)

	// Cancel (seed 001): back to v1 everywhere.
	var canceled struct {
		Rollout model.Rollout `json:"rollout"`
	}
	c.mustPost("/v1/desired_lrp/cancel_update", map[string]string{"process_guid": guid}, &canceled)
	c.waitLRP(guid, "the cancel to end with every index on v1", 20*time.Second, func() bool {
		return c.rollout(guid).State == model.RolloutCanceled && c.allOn(guid, "v1", n)
	})
	s.finish(t)
	for i := int32(1); i < n; i++ {
		if s.everSeen("v2", i) {
			t.Errorf("a v2 instance was desired at index %d although v2 never ran", i)
		}
	}
	expectAPIError(t, c.post("/v1/desired_lrp/cancel_update", map[string]string{"process_guid": guid}, nil),
		http.StatusConflict, model.ErrNoUpdateInProgress)
	dep := c.deployment(guid)
	if dep.ActiveDefinitionID != "v1" || dep.HealthyDefinitionID != "v1" {
		t.Fatalf("after the cancel: active %q healthy %q", dep.ActiveDefinitionID, dep.HealthyDefinitionID)
	}
	c.waitLRP(guid, "convergence to prune v2", 10*time.Second, func() bool {
		_, ok := c.deployment(guid).Definitions["v2"]
		return !ok
	})
}

// checkStillFailing asserts the state of a rollout whose definition cannot start.
func (c *rolloutCluster) checkStillFailing(guid string, n int32) {
	c.t.Helper()
	if !c.runningOn(guid, "v1", n) {
		c.t.Fatalf("not every index runs v1 while v2 fails: %s", describe(c.instances(guid)))
	}
	for _, a := range c.instances(guid) {
		if a.DefinitionID == "v2" && a.Index != 0 {
			c.t.Fatalf("the walk went past index 0 although v2 never ran: %s", describe(c.instances(guid)))
		}
	}
	if h := c.deployment(guid).HealthyDefinitionID; h != "v1" {
		c.t.Fatalf("healthy definition = %q while v2 fails", h)
	}
	if r := c.rollout(guid); r.State != model.RolloutActive || r.UpdatedInstances != 0 {
		c.t.Fatalf("rollout while v2 fails: %+v", r)
	}
}

// Seed 000, "Flaky new LRP definition": index 0 fails a few times and then runs (v2 becomes
// healthy); index 1 never starts and is given up after the index deadline; the rest of the
// walk goes on, index 1 keeps its v1 instance, and the given-up v2 instance is gone for good.
//
// The sim draws SIM_HEALTHY_PROBABILITY per (random) instance guid, so the chaos backend
// scripts the flakiness per index instead, deterministically: index 0 fails 3 times; index 1
// fails 3 times fast and then hangs in its start until the deadline gives it up. The cell's
// crash report of that start then overtakes the BBS's stop request (beforeStop makes the
// crash happen, and be reported, before the stop reaches the cell, once) — a race any
// network allows.
func testRolloutFlakyDefinition(t *testing.T) {
	const n, guid = 5, "flaky-web"
	var raced atomic.Bool // the race happens once: later stops reach the cell first
	crashFirst := func(c *testcluster.Cluster, ch *chaos, lrps []model.ActualLRP) {
		for _, a := range lrps {
			if a.ProcessGUID != guid || raced.Load() || !ch.release(a.InstanceGUID) {
				continue
			}
			raced.Store(true)
			deadline := time.Now().Add(10 * time.Second)
			for time.Now().Before(deadline) {
				cur, err := c.Store.Instance(ctx, a.ProcessGUID, a.DefinitionID, a.Index)
				if err != nil || cur.InstanceGUID != a.InstanceGUID {
					break // the crash is recorded
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	}
	c := newRolloutCluster(t, rolloutOptions{converge: true, indexDeadline: 3 * time.Second, beforeStop: crashFirst})
	c.chaos.setScript(func(key model.ActualLRPKey, attempt int) startOutcome {
		switch {
		case key.ProcessGUID != guid || key.DefinitionID != "v2":
			return startNormally
		case key.Index == 0 && attempt <= 3, key.Index == 1 && attempt <= 3:
			return startFails
		case key.Index == 1:
			return startHangs
		}
		return startNormally
	})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "5 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })

	s := c.sample(guid, n)
	// The seed's flaky definition: its failures walk on (the default would revert at index
	// 0's third crash), an index given up at the cluster's deadline of 3 s.
	c.updateWithStrategy(guid, "v2", simDefinition(env("VERSION", "2")),
		map[string]any{"on_failure": "continue", "failure": map[string]any{"max_crashes": 1000}})
	c.waitLRP(guid, "v2 to become healthy after failed attempts at index 0", 30*time.Second, func() bool {
		return c.deployment(guid).HealthyDefinitionID == "v2"
	})
	if got := c.chaos.attempts(guid, "v2", 0); got < 4 {
		t.Fatalf("index 0 ran after %d attempts, want at least 4 (3 scripted failures)", got)
	}
	c.waitLRP(guid, "the rollout to complete", 40*time.Second, func() bool { return c.rollout(guid).State == model.RolloutCompleted })
	r := c.rollout(guid)
	if !slices.Equal(r.GivenUpIndices, []int32{1}) || r.UpdatedInstances != n-1 {
		t.Fatalf("rollout = %+v, want index 1 given up and the other 4 updated", r)
	}
	if got := c.chaos.attempts(guid, "v2", 1); got < 4 {
		t.Errorf("index 1 was given up after %d attempts; it should have been retried", got)
	}
	c.waitLRP(guid, "index 1 on v1 and the others on v2", 20*time.Second, func() bool {
		for i := range int32(n) {
			want, other := "v2", "v1"
			if i == 1 {
				want, other = "v1", "v2"
			}
			if a := c.instanceOf(guid, want, i); a == nil || a.State != model.StateRunning {
				return false
			}
			if a := c.instanceOf(guid, other, i); a != nil && a.State == model.StateRunning {
				return false
			}
		}
		return true
	})
	s.finish(t)
	dep := c.deployment(guid)
	if dep.HealthyDefinitionID != "v2" || dep.ActiveDefinitionID != "v2" {
		t.Fatalf("deployment: active %q healthy %q", dep.ActiveDefinitionID, dep.HealthyDefinitionID)
	}
	if _, err := c.Store.Converge(ctx, db.ConvergeOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := c.deployment(guid).Definitions["v1"]; !ok {
		t.Fatalf("v1 was pruned although index 1 still runs it")
	}
	// Given up means given up: the v2 instance at index 1 must not live on beside v1's,
	// restarted by every crash report and convergence pass long after the rollout ended.
	c.waitLRP(guid, "the given-up v2 instance at index 1 to be gone", 10*time.Second, func() bool {
		return c.instanceOf(guid, "v2", 1) == nil && len(c.instances(guid)) == n
	})
	before := c.chaos.attempts(guid, "v2", 1)
	time.Sleep(2 * time.Second)
	if after := c.chaos.attempts(guid, "v2", 1); after != before || c.instanceOf(guid, "v2", 1) != nil {
		t.Fatalf("index 1 of v2 was started again after the rollout gave it up (%d → %d attempts): %s",
			before, after, describe(c.instances(guid)))
	}
}
