package scenario

// The LRP changing under a rollout: scaled, removed, its instances read by index.

import (
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
	"github.com/updatable-lrps/bbs/workflows"
)

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
