package db_test

import (
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

// TestBatchReportsFollowTheSingleRules: each instance of a batch gets the answer its single
// write would give — a claim, a repeated claim that changes nothing, a refusal, a missing
// instance — and the batch writes events and the healthy definition like single writes do.
func TestBatchReportsFollowTheSingleRules(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 4))
	if _, err := s.ClaimActualLRP(ctx, key("app", 1), cellA, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimActualLRP(ctx, key("app", 2), cellB, nil); err != nil {
		t.Fatal(err)
	}
	changedBefore := events(t, s, model.EventActualLRPChanged)
	noDefinition := key("app", 3)
	noDefinition.DefinitionID = ""
	res, err := s.ClaimActualLRPs(ctx, []db.InstanceReport{
		{Key: key("app", 0), InstanceKey: cellA},  // claimed
		{Key: key("app", 1), InstanceKey: cellA},  // already claimed by this cell: no change
		{Key: key("app", 2), InstanceKey: cellA},  // another cell's: refused
		{Key: key("app", 9), InstanceKey: cellA},  // no such instance
		{Key: noDefinition, InstanceKey: cellA},   // the active definition's, by the single rule
		{Key: key("nope", 0), InstanceKey: cellA}, // no such LRP
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 6 {
		t.Fatalf("%d results for 6 reports", len(res))
	}
	if res[0].Err != nil || res[0].ActualLRP.State != model.StateClaimed || res[0].ActualLRP.CellID != "cell-a" || res[0].ActualLRP.ModificationTag.Index != 1 {
		t.Fatalf("claim = %+v", res[0])
	}
	if res[1].Err != nil || res[1].ActualLRP.ModificationTag.Index != 1 {
		t.Fatalf("repeated claim = %+v, want the unchanged instance", res[1])
	}
	wantType(t, res[2].Err, model.ErrCannotBeClaimed)
	wantType(t, res[3].Err, model.ErrResourceNotFound)
	if res[4].Err != nil || res[4].ActualLRP.State != model.StateClaimed || res[4].ActualLRP.DefinitionID != "app" {
		t.Fatalf("claim without definition id = %+v", res[4])
	}
	wantType(t, res[5].Err, model.ErrResourceNotFound)
	if n := events(t, s, model.EventActualLRPChanged) - changedBefore; n != 2 {
		t.Fatalf("%d changed events, want 2 (index 0 and 3)", n)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE process_guid = 'app' AND cell_id = 'cell-a'`); n != 3 {
		t.Fatalf("%d instances on cell-a, want 3", n)
	}

	dep, _ := s.LRPDeploymentByProcessGUID(ctx, "app")
	if dep.HealthyDefinitionID != "" {
		t.Fatalf("healthy definition %q before anything ran", dep.HealthyDefinitionID)
	}
	exec(t, s, `UPDATE actual_lrps SET state = 'RUNNING' WHERE process_guid = 'app' AND instance_index = 2`)
	createdBefore := events(t, s, model.EventActualLRPCreated)
	unknown := key("other", 0)
	res, err = s.StartActualLRPs(ctx, []db.InstanceReport{
		{Key: key("app", 0), InstanceKey: cellA, NetInfo: net},
		{Key: key("app", 1), InstanceKey: cellA, NetInfo: net},
		{Key: key("app", 2), InstanceKey: cellA, NetInfo: net}, // running on cell-b
		{Key: unknown, InstanceKey: cellA, NetInfo: net},       // a cell runs what the store lost
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{0, 1, 3} {
		a := res[i].ActualLRP
		if res[i].Err != nil || a.State != model.StateRunning || a.Address != "127.0.0.1" || a.Ports[0].HostPort != 61001 || a.CellID != "cell-a" {
			t.Fatalf("start %d = %+v (%v)", i, a, res[i].Err)
		}
	}
	wantType(t, res[2].Err, model.ErrCannotBeStarted)
	if n := events(t, s, model.EventActualLRPCreated) - createdBefore; n != 1 {
		t.Fatalf("%d created events, want 1", n)
	}
	dep, _ = s.LRPDeploymentByProcessGUID(ctx, "app")
	if dep.HealthyDefinitionID != "app" {
		t.Fatalf("healthy definition = %q, want app", dep.HealthyDefinitionID)
	}
	// Starting again with the same net info changes nothing.
	again, err := s.StartActualLRPs(ctx, []db.InstanceReport{{Key: key("app", 0), InstanceKey: cellA, NetInfo: net}})
	if err != nil || again[0].Err != nil || again[0].ActualLRP.ModificationTag != res[0].ActualLRP.ModificationTag {
		t.Fatalf("repeated start = %+v, %v; want the unchanged instance", again, err)
	}
}
