package scenario

// Rollout scenarios (seeds 000 and 001) on the in-process cluster: the real API on a real
// PostgreSQL, the auctioneer, sim cells, and rollout workflows on a real Temporal dev server.
// Every scenario samples the served indices continuously (like e2e's sampler) and checks that
// they never drop below N while the new definition is healthy.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/executor"
	"github.com/updatable-lrps/bbs/executor/sim"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/internal/testcluster"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/workflows"
	"go.temporal.io/sdk/converter"
)

// TestRollout runs the rollout scenarios as parallel subtests sharing one Temporal dev server,
// which its cleanup stops once they are all done.
func TestRollout(t *testing.T) {
	t.Cleanup(testcluster.StopSharedTemporal)
	for _, sc := range []struct {
		name string
		fn   func(*testing.T)
	}{
		{"FullyFunctional", testRolloutFullyFunctional},
		{"FailingDefinition", testRolloutFailingDefinition},
		{"FlakyDefinition", testRolloutFlakyDefinition},
		{"NewDefinitionDuringRollout", testRolloutSupersede},
		{"CancelAndRollback", testRolloutCancelAndRollback},
		{"ActivateDuringFailingRollout", testRolloutActivate},
		{"ScaleDuringRollout", testRolloutScale},
		{"DeleteDuringRollout", testRolloutDelete},
		{"GroupsDuringRollout", testRolloutGroups},
		{"PauseResume", testRolloutPauseResume},
	} {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			sc.fn(t)
		})
	}
}

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

// Seed 000, "Failing new LRP definition": index 0 is retried indefinitely, every v1 instance
// keeps running, the healthy definition stays v1 and a crashing v1 instance restarts on v1;
// seed 001's cancel then walks back to v1.
func testRolloutFailingDefinition(t *testing.T) {
	const n, guid = 5, "failing-web"
	c := newRolloutCluster(t, rolloutOptions{converge: true})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "5 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })

	s := c.sample(guid, n)
	c.updateDeployment(guid, "v2", simDefinition(env("SIM_FAIL_START", "1")))
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
	c.updateDeployment(guid, "v2", simDefinition(env("VERSION", "2")))
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
// downtime; a rollback after a completed update rolls to a stored definition; a rollback to a
// definition never stored is ResourceNotFound.
func testRolloutCancelAndRollback(t *testing.T) {
	const n, guid = 4, "cancel-web"
	c := newRolloutCluster(t, rolloutOptions{})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "4 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })

	ev := c.recordEvents()
	s := c.sample(guid, n)
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
	// The indices whose v1 instance was retired are walked back, highest first, each v1
	// instance RUNNING before the v2 one there stops.
	back := ev.waitStopped(t, guid, "v1", 2, 10*time.Second)
	if len(back) < 2 {
		t.Fatalf("v1 was retired at %v, want at least indices 0 and 1", back)
	}
	ev.checkHandover(t, guid, "v2", "v1", back...)
	slices.Reverse(back)
	ev.checkOrder(t, guid, "v1", back...)
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
	c.updateDeployment(guid, "v2", simDefinition(env("SIM_FAIL_START", "1")))
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

// Scaling during a rollout: the walk re-reads the instance count before each index, so the
// indices added (on the healthy definition) are covered and those removed are skipped.
func testRolloutScale(t *testing.T) {
	const n, guid = 4, "scale-web"
	c := newRolloutCluster(t, rolloutOptions{})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "4 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })

	s := c.sample(guid, n)
	c.updateDeployment(guid, "v2", simDefinition(env("SIM_START_DELAY_MS", "500"), env("VERSION", "2")))
	c.waitLRP(guid, "one index on v2", 30*time.Second, func() bool { return c.rollout(guid).UpdatedInstances >= 1 })
	c.scale(guid, 6)
	c.waitLRP(guid, "indices 4 and 5 to run, on the healthy v2", 20*time.Second, func() bool {
		a, b := c.instanceOf(guid, "v2", 4), c.instanceOf(guid, "v2", 5)
		return a != nil && b != nil && a.State == model.StateRunning && b.State == model.StateRunning
	})
	if s.everSeen("v1", 4) || s.everSeen("v1", 5) {
		t.Fatalf("a scale-up during the rollout created v1 instances although v2 is healthy")
	}
	c.waitLRP(guid, "three indices on v2", 30*time.Second, func() bool { return c.rollout(guid).UpdatedInstances >= 3 })
	s.setFloor(3)
	c.scale(guid, 3)
	c.waitLRP(guid, "the rollout to complete on 3 instances", 30*time.Second, func() bool {
		return c.rollout(guid).State == model.RolloutCompleted && c.allOn(guid, "v2", 3)
	})
	s.finish(t)
	c.waitLRP(guid, "the cells to run exactly 3 containers of the LRP", 10*time.Second, func() bool { return c.containersOf(guid) == 3 })
	// The completed rollout's row must tell the walk's end: 3 of 3 instances updated, not the
	// count before the scale-down (a client would read "3 of 6 updated").
	if r := c.rollout(guid); r.Instances != 3 || r.UpdatedInstances != 3 || r.CurrentIndex != 3 || len(r.GivenUpIndices) != 0 {
		t.Fatalf("completed rollout row = %+v, want instances 3, updated 3, current index 3", r)
	}
}

// Removing the LRP during a rollout fails the rollout ("the LRP was removed") and stops every
// instance, old and new.
func testRolloutDelete(t *testing.T) {
	const n, guid = 3, "delete-web"
	c := newRolloutCluster(t, rolloutOptions{})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "3 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })

	c.updateDeployment(guid, "v2", simDefinition(env("SIM_START_DELAY_MS", "800"), env("VERSION", "2")))
	c.waitLRP(guid, "one index on v2 and the next starting", 30*time.Second, func() bool {
		return c.rollout(guid).UpdatedInstances >= 1 && c.instanceOf(guid, "v2", 1) != nil
	})
	c.mustPost("/v1/lrp_deployments/delete", map[string]string{"process_guid": guid}, nil)
	c.waitLRP(guid, "the rollout to fail", 20*time.Second, func() bool {
		r := c.rollout(guid)
		return r.State == model.RolloutFailed && r.Reason == "the LRP was removed"
	})
	c.waitLRP(guid, "every instance stopped and removed", 20*time.Second, func() bool {
		return len(c.instances(guid)) == 0 && c.containersOf(guid) == 0
	})
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out workflows.RolloutOutput
	if err := c.Temporal.GetWorkflow(wctx, model.RolloutWorkflowID(guid), "").Get(wctx, &out); err != nil {
		t.Fatalf("rollout workflow: %v", err)
	}
	if out.State != model.RolloutFailed || out.Reason != "the LRP was removed" {
		t.Fatalf("rollout workflow ended %+v", out)
	}
	if l := c.instances(guid); len(l) != 0 {
		t.Fatalf("instances came back after the workflow ended: %s", describe(l))
	}
	expectAPIError(t, c.post("/v1/lrp_deployments/get_by_process_guid", map[string]string{"process_guid": guid}, nil),
		http.StatusNotFound, model.ErrResourceNotFound)
}

// Seed 000's ActualLRP changes: during a rollout an index being replaced has one group per
// definition; get_by_process_guid_and_index answers the active definition's group, and
// retire, given no definition, picks the active definition's instance.
func testRolloutGroups(t *testing.T) {
	const n, guid = 3, "groups-web"
	c := newRolloutCluster(t, rolloutOptions{})
	c.createDeployment(guid, n, "v1", simDefinition())
	c.waitLRP(guid, "3 RUNNING on v1", 20*time.Second, func() bool { return c.allOn(guid, "v1", n) })

	s := c.sample(guid, n)
	c.updateDeployment(guid, "v2", simDefinition(env("SIM_START_DELAY_MS", "2000"), env("VERSION", "2")))
	var starting *model.ActualLRP
	c.waitLRP(guid, "v2 to be starting at index 0", 20*time.Second, func() bool {
		starting = c.instanceOf(guid, "v2", 0)
		return starting != nil && starting.State == model.StateClaimed
	})

	var groups struct {
		Groups []model.ActualLRPGroup `json:"actual_lrp_groups"`
	}
	c.mustPost("/v1/actual_lrp_groups/list_by_process_guid", map[string]string{"process_guid": guid}, &groups)
	perIndex := map[int32][]string{}
	for _, g := range groups.Groups {
		if g.Instance == nil {
			t.Fatalf("group without an ordinary instance: %+v", g)
		}
		perIndex[g.Instance.Index] = append(perIndex[g.Instance.Index], g.Instance.DefinitionID)
	}
	slices.Sort(perIndex[0])
	if len(groups.Groups) != n+1 || !slices.Equal(perIndex[0], []string{"v1", "v2"}) ||
		!slices.Equal(perIndex[1], []string{"v1"}) || !slices.Equal(perIndex[2], []string{"v1"}) {
		t.Fatalf("groups during the rollout: %v", perIndex)
	}
	if g := c.groupAt(guid, 0); g.Instance == nil || g.Instance.DefinitionID != "v2" {
		t.Fatalf("group at the index being replaced = %+v, want the active definition's (v2)", g.Instance)
	}
	if g := c.groupAt(guid, 2); g.Instance == nil || g.Instance.DefinitionID != "v1" || g.Instance.State != model.StateRunning {
		t.Fatalf("group at an index the walk has not reached = %+v, want v1's", g.Instance)
	}

	// Retire with no definition: the active one's instance (v2, starting) goes; v1 keeps
	// serving, and the walk desires a new v2 instance.
	c.mustPost("/v1/actual_lrps/retire", map[string]any{"actual_lrp_key": map[string]any{
		"process_guid": guid, "index": 0, "domain": "cf-apps"}}, nil)
	c.waitLRP(guid, "the starting v2 instance to be replaced", 20*time.Second, func() bool {
		a := c.instanceOf(guid, "v2", 0)
		return a == nil || a.ModificationTag.Epoch != starting.ModificationTag.Epoch
	})
	if a := c.instanceOf(guid, "v1", 0); a == nil || a.State != model.StateRunning {
		t.Fatalf("retire took v1's instance at index 0: %s", describe(c.instances(guid)))
	}
	c.waitLRP(guid, "the rollout to complete", 40*time.Second, func() bool {
		return c.rollout(guid).State == model.RolloutCompleted && c.allOn(guid, "v2", n)
	})
	s.finish(t)
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

// --- the cluster with rollouts ---

// waitLRP is waitFor that, on timeout, shows where the LRP and its rollout stand.
func (c *rolloutCluster) waitLRP(guid, what string, within time.Duration, cond func() bool) {
	c.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			var r struct {
				Rollout *model.Rollout `json:"rollout"`
			}
			_ = c.post("/v1/rollouts/get", map[string]string{"process_guid": guid}, &r)
			c.t.Fatalf("timed out after %s waiting for %s\nrollout: %+v\ninstances: %s", within, what, r.Rollout, describe(c.instances(guid)))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type rolloutCluster struct {
	*cluster
	chaos *chaos
}

type rolloutOptions struct {
	cells int // default 3
	// indexDeadline is the RolloutClient's IndexDeadline (0: the workflow's default).
	indexDeadline time.Duration
	// converge runs convergence every 250 ms with fastRestarts, so that crashed instances are
	// retried within the test.
	converge bool
	// beforeStop runs before each stop request of the rollout activities
	// (testcluster.Options.BeforeStop).
	beforeStop func(c *testcluster.Cluster, ch *chaos, lrps []model.ActualLRP)
}

// newRolloutCluster starts a cluster whose rollouts run on the shared Temporal dev server, on
// a task queue of t's own, and whose cells run the chaos backend.
func newRolloutCluster(t *testing.T, o rolloutOptions) *rolloutCluster {
	t.Helper()
	ch := newChaos()
	opts := testcluster.Options{
		Cells: o.cells, Zones: 2, Capacity: roomy,
		Backend:        ch.backend,
		Temporal:       true,
		TemporalClient: testcluster.SharedTemporal(t),
		TaskQueue:      testcluster.TaskQueueFor(t),
		IndexDeadline:  o.indexDeadline,
	}
	if opts.Cells == 0 {
		opts.Cells = 3
	}
	if o.beforeStop != nil {
		opts.BeforeStop = func(c *testcluster.Cluster, lrps []model.ActualLRP) { o.beforeStop(c, ch, lrps) }
	}
	if o.converge {
		policy := fastRestarts()
		opts.RestartPolicy, opts.ConvergeEvery = &policy, 250*time.Millisecond
	}
	return &rolloutCluster{cluster: startCluster(t, opts), chaos: ch}
}

func env(name, value string) model.EnvironmentVariable {
	return model.EnvironmentVariable{Name: name, Value: value}
}

// simDefinition is simLRP's definition (instances start after 20 ms and pass their check),
// with more environment.
func simDefinition(vars ...model.EnvironmentVariable) model.LRPDefinition {
	return simLRP("x", 1, vars...).LRPDefinition
}

func (c *rolloutCluster) createDeployment(guid string, n int32, id string, def model.LRPDefinition) {
	c.t.Helper()
	c.mustPost("/v1/lrp_deployments/create", model.LRPDeploymentCreate{ProcessGUID: guid, Domain: "cf-apps",
		Instances: n, DefinitionID: id, Definition: &def}, nil)
}

func (c *rolloutCluster) updateDeployment(guid, id string, def model.LRPDefinition) {
	c.t.Helper()
	c.mustPost("/v1/lrp_deployments/update", map[string]any{"process_guid": guid,
		"update": model.LRPDeploymentUpdate{DefinitionID: &id, Definition: &def}}, nil)
}

func (c *rolloutCluster) scale(guid string, n int32) {
	c.t.Helper()
	c.mustPost("/v1/lrp_deployments/update", map[string]any{"process_guid": guid,
		"update": model.LRPDeploymentUpdate{Instances: &n}}, nil)
}

func (c *rolloutCluster) deployment(guid string) model.LRPDeployment {
	c.t.Helper()
	var resp struct {
		LRPDeployment model.LRPDeployment `json:"lrp_deployment"`
	}
	c.mustPost("/v1/lrp_deployments/get_by_process_guid", map[string]string{"process_guid": guid}, &resp)
	return resp.LRPDeployment
}

func (c *rolloutCluster) rollout(guid string) model.Rollout {
	c.t.Helper()
	var resp struct {
		Rollout model.Rollout `json:"rollout"`
	}
	c.mustPost("/v1/rollouts/get", map[string]string{"process_guid": guid}, &resp)
	return resp.Rollout
}

func (c *rolloutCluster) groupAt(guid string, index int32) model.ActualLRPGroup {
	c.t.Helper()
	var resp struct {
		Group model.ActualLRPGroup `json:"actual_lrp_group"`
	}
	c.mustPost("/v1/actual_lrp_groups/get_by_process_guid_and_index", map[string]any{"process_guid": guid, "index": index}, &resp)
	return resp.Group
}

// progress asks the rollout workflow (QueryProgress).
func (c *rolloutCluster) progress(guid string) workflows.RolloutProgress {
	c.t.Helper()
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	v, err := c.Temporal.QueryWorkflow(qctx, model.RolloutWorkflowID(guid), "", workflows.QueryProgress)
	if err != nil {
		c.t.Fatalf("query progress: %v", err)
	}
	var p workflows.RolloutProgress
	if err := v.Get(&p); err != nil {
		c.t.Fatal(err)
	}
	return p
}

// searchAttribute reads a keyword search attribute of the LRP's (latest) rollout workflow.
func (c *rolloutCluster) searchAttribute(guid, name string) string {
	c.t.Helper()
	d, err := c.Temporal.DescribeWorkflowExecution(ctx, model.RolloutWorkflowID(guid), "")
	if err != nil {
		c.t.Fatal(err)
	}
	p := d.GetWorkflowExecutionInfo().GetSearchAttributes().GetIndexedFields()[name]
	if p == nil {
		return ""
	}
	var s string
	if err := converter.GetDefaultDataConverter().FromPayload(p, &s); err != nil {
		c.t.Fatal(err)
	}
	return s
}

// instanceOf is the ORDINARY instance of def at index, or nil.
func (c *cluster) instanceOf(guid, def string, index int32) *model.ActualLRP {
	c.t.Helper()
	for _, a := range c.instances(guid) {
		if a.DefinitionID == def && a.Index == index && a.Presence == model.PresenceOrdinary {
			return &a
		}
	}
	return nil
}

// allOn reports whether the LRP has exactly n instances, each RUNNING def at its own index.
func (c *cluster) allOn(guid, def string, n int32) bool {
	c.t.Helper()
	l := c.instances(guid)
	if len(l) != int(n) {
		return false
	}
	seen := map[int32]bool{}
	for _, a := range l {
		if a.State != model.StateRunning || a.DefinitionID != def || a.Index >= n || seen[a.Index] {
			return false
		}
		seen[a.Index] = true
	}
	return true
}

// runningOn reports whether every index below n has a RUNNING instance of def.
func (c *cluster) runningOn(guid, def string, n int32) bool {
	c.t.Helper()
	seen := map[int32]bool{}
	for _, a := range c.instances(guid) {
		if a.State == model.StateRunning && a.DefinitionID == def && a.Index < n {
			seen[a.Index] = true
		}
	}
	return len(seen) == int(n)
}

func (c *cluster) countOn(guid, def string) int {
	c.t.Helper()
	k := 0
	for _, a := range c.instances(guid) {
		if a.DefinitionID == def {
			k++
		}
	}
	return k
}

// containersOf counts the LRP's containers on every cell.
func (c *cluster) containersOf(guid string) int {
	k := 0
	for _, sc := range c.Cells {
		for _, ctr := range sc.Exec.Containers() {
			if ctr.Key.ProcessGUID == guid {
				k++
			}
		}
	}
	return k
}

func describe(l []model.ActualLRP) string {
	var b bytes.Buffer
	for _, a := range l {
		fmt.Fprintf(&b, "[%d %s %s crashes=%d %s] ", a.Index, a.DefinitionID, a.State, a.CrashCount, a.Presence)
	}
	return b.String()
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// --- raw API calls ---

// apiError is an error answer of the API, with its HTTP status.
type apiError struct {
	status int
	err    *model.Error
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %v", e.status, e.err) }
func (e *apiError) Unwrap() error { return e.err }

func (c *cluster) post(path string, req, resp any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	r, err := http.Post(c.URL+path, "application/json", bytes.NewReader(body))
	if err != nil {
		return err
	}
	defer r.Body.Close()
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return err
	}
	if r.StatusCode != http.StatusOK {
		var e struct {
			Error *model.Error `json:"error"`
		}
		if json.Unmarshal(raw, &e) == nil && e.Error != nil {
			return &apiError{status: r.StatusCode, err: e.Error}
		}
		return fmt.Errorf("POST %s: %d %s", path, r.StatusCode, raw)
	}
	if resp != nil {
		return json.Unmarshal(raw, resp)
	}
	return nil
}

func (c *cluster) mustPost(path string, req, resp any) {
	c.t.Helper()
	if err := c.post(path, req, resp); err != nil {
		c.t.Fatalf("POST %s: %v", path, err)
	}
}

// expectAPIError checks err's type and, when status is not 0, its HTTP status.
func expectAPIError(t *testing.T, err error, status int, typ model.ErrorType) {
	t.Helper()
	if !model.IsType(err, typ) {
		t.Fatalf("got %v, want %s", err, typ)
	}
	var ae *apiError
	if status != 0 && (!errors.As(err, &ae) || ae.status != status) {
		t.Fatalf("got %v, want status %d", err, status)
	}
}

// --- the sampler ---

type slotKey struct {
	def   string
	index int32
}

// sampler lists the LRP's instances through the API continuously and records every sample in
// which fewer indices below the floor were served by a RUNNING instance than should be:
// zero downtime. Indices excluded (around an injected crash, which is downtime whatever the
// definition) are not counted.
type sampler struct {
	c    *cluster
	guid string
	stop chan struct{}
	wg   sync.WaitGroup

	floor atomic.Int32

	mu         sync.Mutex
	excluded   map[int32]bool
	samples    int
	violations []string
	seen       map[slotKey]bool // every (definition, index) listed
	running    map[slotKey]bool // every (definition, index) seen RUNNING
}

func (c *cluster) sample(guid string, n int32) *sampler {
	s := &sampler{c: c, guid: guid, stop: make(chan struct{}), excluded: map[int32]bool{},
		seen: map[slotKey]bool{}, running: map[slotKey]bool{}}
	s.floor.Store(n)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			select {
			case <-s.stop:
				return
			default:
			}
			if l, err := c.BBS.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: guid}); err == nil {
				s.record(l)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	return s
}

func (s *sampler) record(l []model.ActualLRP) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples++
	served := map[int32]bool{}
	for _, a := range l {
		k := slotKey{a.DefinitionID, a.Index}
		s.seen[k] = true
		if a.State == model.StateRunning {
			s.running[k] = true
			served[a.Index] = true
		}
	}
	var missing []int32
	for i := range s.floor.Load() {
		if !s.excluded[i] && !served[i] {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 && len(s.violations) < 5 {
		s.violations = append(s.violations, fmt.Sprintf("sample %d: no RUNNING instance at %v: %s", s.samples, missing, describe(l)))
	}
}

func (s *sampler) setFloor(n int32) { s.floor.Store(n) }

func (s *sampler) exclude(i int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.excluded[i] = true
}

func (s *sampler) include(i int32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.excluded, i)
}

func (s *sampler) everSeen(def string, i int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[slotKey{def, i}]
}

func (s *sampler) everRunning(def string, i int32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running[slotKey{def, i}]
}

func (s *sampler) finish(t *testing.T) {
	t.Helper()
	close(s.stop)
	s.wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.samples < 10 {
		t.Fatalf("only %d samples", s.samples)
	}
	if len(s.violations) > 0 {
		t.Fatalf("served indices dropped below %d:\n%s", s.floor.Load(), joinLines(s.violations))
	}
	t.Logf("every index served over %d samples", s.samples)
}

func joinLines(xs []string) string {
	var b bytes.Buffer
	for _, x := range xs {
		b.WriteString(x)
		b.WriteByte('\n')
	}
	return b.String()
}

// --- the event log ---

// eventLog keeps the event stream from the moment it was opened, to check orders that
// sampling could miss: the store commits events in order.
type eventLog struct {
	mu     sync.Mutex
	events []sseEvent
}

func (c *cluster) recordEvents() *eventLog {
	stream := subscribe(c.t, c.URL)
	l := &eventLog{}
	go func() {
		for e := range stream {
			l.mu.Lock()
			l.events = append(l.events, e)
			l.mu.Unlock()
		}
	}()
	return l
}

// change is what an event did to one instance's RUNNING state.
type change struct {
	def           string
	index         int32
	wasRun, isRun bool
}

func (l *eventLog) changes(guid string) []change {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []change
	for _, e := range l.events {
		var before, after *model.ActualLRP
		switch e.name {
		case model.EventActualLRPCreated:
			after = new(model.ActualLRP)
			if json.Unmarshal(e.data, after) != nil {
				continue
			}
		case model.EventActualLRPRemoved:
			before = new(model.ActualLRP)
			if json.Unmarshal(e.data, before) != nil {
				continue
			}
		case model.EventActualLRPChanged:
			var ch model.Change[model.ActualLRP]
			if json.Unmarshal(e.data, &ch) != nil {
				continue
			}
			before, after = &ch.Before, &ch.After
		default:
			continue
		}
		a := after
		if a == nil {
			a = before
		}
		if a.ProcessGUID != guid {
			continue
		}
		out = append(out, change{def: a.DefinitionID, index: a.Index,
			wasRun: before != nil && before.State == model.StateRunning,
			isRun:  after != nil && after.State == model.StateRunning})
	}
	return out
}

// firstStart is the position of the first change that made def's instance at i RUNNING.
func firstStart(chs []change, def string, i int32) int {
	return slices.IndexFunc(chs, func(c change) bool { return c.def == def && c.index == i && !c.wasRun && c.isRun })
}

// firstStop is the position of the first change that took def's RUNNING instance at i out
// of RUNNING (stopped and removed, or crashed).
func firstStop(chs []change, def string, i int32) int {
	return slices.IndexFunc(chs, func(c change) bool { return c.def == def && c.index == i && c.wasRun && !c.isRun })
}

// checkHandover checks that at each index, `to` was RUNNING before `from` stopped there;
// it waits for the stream to deliver both.
func (l *eventLog) checkHandover(t *testing.T, guid, from, to string, indices ...int32) {
	t.Helper()
	var chs []change
	deadline := time.Now().Add(10 * time.Second)
	for {
		chs = l.changes(guid)
		complete := true
		for _, i := range indices {
			if firstStart(chs, to, i) < 0 || firstStop(chs, from, i) < 0 {
				complete = false
			}
		}
		if complete {
			break
		}
		if time.Now().After(deadline) {
			for _, i := range indices {
				if firstStart(chs, to, i) < 0 {
					t.Errorf("index %d: no event shows %s RUNNING", i, to)
				}
				if firstStop(chs, from, i) < 0 {
					t.Errorf("index %d: no event shows %s stopping", i, from)
				}
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, i := range indices {
		if run, stop := firstStart(chs, to, i), firstStop(chs, from, i); run > stop {
			t.Errorf("index %d: %s stopped (event %d) before %s ran (event %d)", i, from, stop, to, run)
		}
	}
}

// checkOrder checks that def's instances first ran at the indices in the given order.
func (l *eventLog) checkOrder(t *testing.T, guid, def string, indices ...int32) {
	t.Helper()
	chs := l.changes(guid)
	last := -1
	for _, i := range indices {
		p := firstStart(chs, def, i)
		if p < last {
			t.Errorf("%s ran at index %d (event %d) before an index walked earlier (event %d); order wanted %v", def, i, p, last, indices)
		}
		last = p
	}
}

// waitStopped returns, once at least `least` of them are known, the indices at which def's
// RUNNING instance stopped, in ascending order.
func (l *eventLog) waitStopped(t *testing.T, guid, def string, least int, within time.Duration) []int32 {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		var out []int32
		for _, ch := range l.changes(guid) {
			if ch.def == def && ch.wasRun && !ch.isRun && !slices.Contains(out, ch.index) {
				out = append(out, ch.index)
			}
		}
		if len(out) >= least || time.Now().After(deadline) {
			slices.Sort(out)
			return out
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// --- chaos: per-index scripting and real crashes on top of the sim backend ---

// chaos scripts what the sim's environment cannot: start failures by index (the sim's
// SIM_HEALTHY_PROBABILITY is drawn per random instance guid) and crashes on demand, which the
// executor sees as the action exiting — a real crash that the cell reports, not a fake report
// through the API while the container keeps running.
type chaos struct {
	mu     sync.Mutex
	live   map[string]*chaosInstance // by instance guid
	hung   map[string]chan struct{}  // starts held by startHangs, by instance guid
	tries  map[slotKeyGUID]int
	script func(key model.ActualLRPKey, attempt int) startOutcome
}

// startOutcome is what a scripted start does.
type startOutcome int

const (
	startNormally startOutcome = iota // as the sim's environment says
	startFails                        // fails after 20 ms, as a crash on startup
	startHangs                        // never returns until release (a crash) or a stop
)

type slotKeyGUID struct {
	guid, def string
	index     int32
}

func newChaos() *chaos {
	return &chaos{live: map[string]*chaosInstance{}, hung: map[string]chan struct{}{}, tries: map[slotKeyGUID]int{}}
}

// backend is a chaos backend around the sim one (testcluster.Options.Backend).
func (ch *chaos) backend(seed int64) executor.Backend {
	return &chaosBackend{inner: sim.New(seed), ch: ch}
}

func (ch *chaos) setScript(f func(key model.ActualLRPKey, attempt int) startOutcome) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.script = f
}

// release makes a start held by startHangs fail now; it reports whether there was one.
func (ch *chaos) release(instanceGUID string) bool {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	hold, ok := ch.hung[instanceGUID]
	if ok {
		close(hold)
		delete(ch.hung, instanceGUID)
	}
	return ok
}

func (ch *chaos) attempts(guid, def string, index int32) int {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.tries[slotKeyGUID{guid, def, index}]
}

// crash makes the instance's action exit with an error now.
func (ch *chaos) crash(instanceGUID string) bool {
	ch.mu.Lock()
	ci := ch.live[instanceGUID]
	delete(ch.live, instanceGUID)
	ch.mu.Unlock()
	if ci == nil {
		return false
	}
	ci.crash(errors.New("scripted crash (scenario chaos)"))
	return true
}

type chaosBackend struct {
	inner executor.Backend
	ch    *chaos
}

func (b *chaosBackend) Start(ctx context.Context, spec executor.StartSpec) (executor.Instance, error) {
	k := slotKeyGUID{spec.Key.ProcessGUID, spec.Key.DefinitionID, spec.Key.Index}
	b.ch.mu.Lock()
	b.ch.tries[k]++
	attempt, script := b.ch.tries[k], b.ch.script
	out := startNormally
	if script != nil {
		out = script(spec.Key, attempt)
	}
	hold := make(chan struct{})
	if out == startHangs {
		b.ch.hung[spec.Guid] = hold
	}
	b.ch.mu.Unlock()
	switch out {
	case startFails:
		select { // as long as a quick start takes, so that a failing index does not spin
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
		return nil, fmt.Errorf("scripted start failure at index %d (attempt %d)", spec.Key.Index, attempt)
	case startHangs:
		select {
		case <-ctx.Done():
			b.ch.release(spec.Guid)
		case <-hold:
		}
		return nil, fmt.Errorf("scripted start failure after a hang at index %d (attempt %d)", spec.Key.Index, attempt)
	}
	inst, err := b.inner.Start(ctx, spec)
	if err != nil {
		return nil, err
	}
	ci := &chaosInstance{Instance: inst, done: make(chan struct{}), crashed: make(chan struct{})}
	go ci.watch()
	b.ch.mu.Lock()
	b.ch.live[spec.Guid] = ci
	b.ch.mu.Unlock()
	return ci, nil
}

// chaosInstance is a sim instance whose action can be made to exit with an error.
type chaosInstance struct {
	executor.Instance
	done    chan struct{}
	crashed chan struct{}
	once    sync.Once
	mu      sync.Mutex
	err     error
}

func (ci *chaosInstance) watch() {
	select {
	case <-ci.Instance.Done():
	case <-ci.crashed:
	}
	close(ci.done)
}

func (ci *chaosInstance) crash(err error) {
	ci.once.Do(func() {
		ci.mu.Lock()
		ci.err = err
		ci.mu.Unlock()
		close(ci.crashed)
	})
}

func (ci *chaosInstance) Done() <-chan struct{} { return ci.done }

func (ci *chaosInstance) Err() error {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if ci.err != nil {
		return ci.err
	}
	return ci.Instance.Err()
}

func (ci *chaosInstance) Check(ctx context.Context) error {
	select {
	case <-ci.crashed:
		return ci.Err()
	default:
	}
	return ci.Instance.Check(ctx)
}

// The walk reads the instance count (LoadRollout) and then desires the next index
// (DesireInstance) in two separate steps. A scale-down committed in between must not leave an
// instance beyond the count: DesireInstance locks the LRP's row, so it can tell, and
// AwaitRunning would then report the index as beyond the count. Otherwise the new instance is
// placed and runs, the walk counts the index as updated, and only a convergence pass (in a
// fresh domain) stops it — what ScaleDuringRollout sometimes shows as a fourth instance of
// three.
func TestRolloutDesireInstanceBeyondCount(t *testing.T) {
	store := dbtest.NewStore(t)
	if _, err := store.DesireLRP(ctx, simLRP("beyond", 3)); err != nil {
		t.Fatal(err)
	}
	_, err := store.DesireInstance(ctx, "beyond", "beyond", 5)
	l, lerr := store.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: "beyond"})
	if lerr != nil {
		t.Fatal(lerr)
	}
	for _, a := range l {
		if a.Index >= 3 {
			t.Fatalf("DesireInstance created an instance at index %d of an LRP of 3 instances (err %v)", a.Index, err)
		}
	}
}
