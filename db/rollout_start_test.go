package db_test

import (
	"encoding/json"
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

func newDef(id string) *model.LRPDefinition {
	d := newLRP("x", 1).LRPDefinition
	d.DefinitionID = id
	d.MemoryMB = 64
	return &d
}

func TestStartRolloutUpdateSupersedeAndErrors(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 3))

	st, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: newDef("v2")})
	if err != nil {
		t.Fatal(err)
	}
	r := st.Rollout
	if r.FromDefinitionID != "app" || r.ToDefinitionID != "v2" || r.State != model.RolloutActive || r.Instances != 3 || r.WorkflowID != "rollout:app" {
		t.Fatalf("rollout = %+v", r)
	}
	if st.Desired.DefinitionID != "v2" || st.Desired.PreviousDefinitionID != "app" || st.Desired.MemoryMB != 64 {
		t.Fatalf("desired during the rollout = %+v", st.Desired)
	}
	// Seed 001: another update while one is in progress is refused.
	_, err = s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: newDef("v3")})
	wantType(t, err, model.ErrUpdateInProgress)
	// Seed 000: through LRPDeployments it supersedes, walking from the last complete definition.
	st, err = s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: newDef("v3"), Supersede: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.Superseded == nil || st.Superseded.State != model.RolloutSuperseded || st.Rollout.FromDefinitionID != "app" || st.Rollout.ToDefinitionID != "v3" {
		t.Fatalf("supersede: %+v / %+v", st.Superseded, st.Rollout)
	}
	// A definition id is never reused within an LRP.
	_, err = s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: newDef("v2"), Supersede: true})
	wantType(t, err, model.ErrResourceExists)
	_, err = s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "missing", Kind: model.RolloutKindUpdate, Definition: newDef("v9")})
	wantType(t, err, model.ErrResourceNotFound)
	if n := count(t, s, `SELECT count(*) FROM rollouts WHERE state IN ('active','paused','canceling')`); n != 1 {
		t.Fatalf("rollouts in progress = %d", n)
	}
}

func TestRollbackAndActivateTargets(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 1))
	addDefinition(t, s, "app", "old")
	exec(t, s, `UPDATE lrp_definitions SET live = false, retired_at = now() WHERE definition_id = 'old'`)

	_, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindRollback, DefinitionID: "pruned"})
	wantType(t, err, model.ErrResourceNotFound)
	_, err = s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindActivate, DefinitionID: "old"})
	wantType(t, err, model.ErrResourceNotFound) // activation names a definition of the map only
	_, err = s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindRollback, DefinitionID: "app"})
	wantType(t, err, model.ErrInvalidRequest)

	st, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindRollback, DefinitionID: "old"})
	if err != nil || st.Rollout.Kind != model.RolloutKindRollback || st.Rollout.ToDefinitionID != "old" {
		t.Fatalf("rollback: %+v %v", st, err)
	}
	if n := count(t, s, `SELECT count(*) FROM lrp_definitions WHERE definition_id = 'old' AND live`); n != 1 {
		t.Fatal("a rollback must bring the retired definition back into the map")
	}
}

// startedUpdate desires LRP guid with instances instances (index 0 RUNNING on its first
// definition, named guid) and starts its update to definition to; it returns the rollout's id.
func startedUpdate(t *testing.T, s *db.Store, guid string, instances int32, to string) string {
	t.Helper()
	desire(t, s, newLRP(guid, instances))
	makeRunning(t, s, guid, guid, 0)
	st, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: guid, Kind: model.RolloutKindUpdate, Definition: newDef(to)})
	if err != nil {
		t.Fatal(err)
	}
	return st.Rollout.ID
}

func TestWalkStepsAreIdempotent(t *testing.T) {
	s := dbtest.NewStore(t)
	id := startedUpdate(t, s, "app", 2, "v2")
	for i := 0; i < 2; i++ {
		a, err := s.DesireInstance(ctx, "app", "v2", 0)
		if err != nil || a.State != model.StateUnclaimed || a.DefinitionID != "v2" {
			t.Fatalf("desire instance (%d): %+v %v", i, a, err)
		}
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE instance_index = 0`); n != 2 {
		t.Fatalf("index 0 holds %d instances, want old and new", n)
	}
	// The new instance runs: the old one at its index is handed to its cell.
	if _, err := s.StartActualLRP(ctx, model.ActualLRPKey{ProcessGUID: "app", DefinitionID: "v2", Index: 0, Domain: "cf-apps"}, cellB, net, nil); err != nil {
		t.Fatal(err)
	}
	if dep, _ := s.LRPDeploymentByProcessGUID(ctx, "app"); dep.HealthyDefinitionID != "v2" {
		t.Fatalf("healthy = %q after the new definition ran", dep.HealthyDefinitionID)
	}
	stop, err := s.RetireOthers(ctx, "app", "v2", 0)
	if err != nil || len(stop) != 1 || stop[0].DefinitionID != "app" || stop[0].CellID != "cell-1" {
		t.Fatalf("retire others = %+v %v", stop, err)
	}
	if err := s.RecordRolloutProgress(ctx, id, model.RolloutProgress{State: model.RolloutActive, CurrentIndex: 1, UpdatedInstances: 1, Instances: 2, GivenUpIndices: []int32{}}); err != nil {
		t.Fatal(err)
	}
	// Cancel: back to the old definition.
	for i := 0; i < 2; i++ {
		if err := s.BeginCancel(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	d, _ := s.DesiredLRPByProcessGUID(ctx, "app")
	if d.DefinitionID != "app" || d.PreviousDefinitionID != "v2" {
		t.Fatalf("while canceling: active %q previous %q", d.DefinitionID, d.PreviousDefinitionID)
	}
	for i := 0; i < 2; i++ {
		finished, err := s.FinishRollout(ctx, id, model.RolloutCanceled, "")
		if err != nil {
			t.Fatal(err)
		}
		if finished != (i == 0) {
			t.Fatalf("call %d: finished = %v; only the first call ends the rollout", i+1, finished)
		}
	}
	d, _ = s.DesiredLRPByProcessGUID(ctx, "app")
	r, _ := s.RolloutByID(ctx, id)
	if d.PreviousDefinitionID != "" || r.State != model.RolloutCanceled || r.UpdatedInstances != 1 {
		t.Fatalf("after cancel: previous %q, rollout %+v", d.PreviousDefinitionID, r)
	}
	// v2 still runs at index 0: not prunable yet.
	if pruned, err := s.PruneDefinition(ctx, "app", "v2"); err != nil || pruned {
		t.Fatalf("prune while running = %v %v", pruned, err)
	}
	exec(t, s, `DELETE FROM actual_lrps WHERE definition_id = 'v2'`)
	if pruned, err := s.PruneDefinition(ctx, "app", "v2"); err != nil || !pruned {
		t.Fatalf("prune = %v %v", pruned, err)
	}
	_, err = s.RolloutByID(ctx, "not-a-uuid")
	wantType(t, err, model.ErrInvalidRequest)
}

// Seed 000: a crash outside the walk restarts with the healthy definition.
func TestCrashRestartUsesTheHealthyDefinition(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 2))
	makeRunning(t, s, "app", "app", 1)
	addDefinition(t, s, "app", "v2")
	exec(t, s, `UPDATE desired_lrps SET active_definition_id = 'v2', healthy_definition_id = 'v2', previous_definition_id = 'app'`)
	a, err := s.CrashActualLRP(ctx, key("app", 1), model.ActualLRPInstanceKey{InstanceGUID: "ig-1", CellID: "cell-1"}, "boom", nil)
	if err != nil || a.DefinitionID != "v2" || a.State != model.StateUnclaimed || a.CrashCount != 1 {
		t.Fatalf("crash = %+v %v", a, err)
	}
}

// A rollout's end is one transaction: its final progress, its state, its LRP's previous
// definition cleared and the definitions it left unused pruned — after the end, which
// releases the ones the rollout held (a prune before it could never retire them). One whose
// instances are still stopping stays; a retry writes nothing.
func TestCompleteRolloutEndsAndPrunesTogether(t *testing.T) {
	s := dbtest.NewStore(t)
	id := startedUpdate(t, s, "app", 2, "v2")
	_, err := s.CompleteRollout(ctx, id, model.RolloutProgress{}, model.RolloutFailed, nil)
	wantType(t, err, model.ErrInvalidRequest)
	// The old definition runs nowhere any more.
	exec(t, s, `DELETE FROM actual_lrps WHERE definition_id = 'app'`)
	events := count(t, s, `SELECT count(*) FROM events WHERE name = 'rollout_changed'`)
	p := model.RolloutProgress{State: model.RolloutActive, CurrentIndex: 2, UpdatedInstances: 2, Instances: 2, GivenUpIndices: []int32{}, RunID: "run-1"}
	for i := range 2 {
		finished, err := s.CompleteRollout(ctx, id, p, model.RolloutCompleted, []string{"app", "never-stored"})
		if err != nil || finished != (i == 0) {
			t.Fatalf("call %d: finished %v, %v; only the first call ends the rollout", i+1, finished, err)
		}
	}
	r, _ := s.RolloutByID(ctx, id)
	if r.State != model.RolloutCompleted || r.CurrentIndex != 2 || r.UpdatedInstances != 2 || r.RunID != "run-1" || r.FinishedAt == 0 {
		t.Fatalf("rollout %+v", r)
	}
	d, _ := s.DesiredLRPByProcessGUID(ctx, "app")
	if d.PreviousDefinitionID != "" {
		t.Fatalf("previous definition %q after the end", d.PreviousDefinitionID)
	}
	if n := count(t, s, `SELECT count(*) FROM lrp_definitions WHERE definition_id = 'app' AND live`); n != 0 {
		t.Fatal("the unused from definition was not pruned with the end")
	}
	if n := count(t, s, `SELECT count(*) FROM events WHERE name = 'rollout_changed'`) - events; n != 1 {
		t.Fatalf("%d rollout_changed events, want the end's one", n)
	}

	// A definition with an instance still stopping stays live.
	busy := startedUpdate(t, s, "busy", 1, "b2")
	if finished, err := s.CompleteRollout(ctx, busy, p, model.RolloutCompleted, []string{"busy"}); err != nil || !finished {
		t.Fatalf("complete: %v %v", finished, err)
	}
	if n := count(t, s, `SELECT count(*) FROM lrp_definitions WHERE process_guid = 'busy' AND definition_id = 'busy' AND live`); n != 1 {
		t.Fatal("a definition an instance still runs was pruned")
	}
	_, err = s.CompleteRollout(ctx, "not-a-uuid", p, model.RolloutCompleted, nil)
	wantType(t, err, model.ErrInvalidRequest)
}

// A rollout's cancel and its end change the desired LRP (the definition back, the previous
// one cleared), and each such change is a desired_lrp_changed event, as its start is: a BBS
// client watching the event streams sees the whole rollout. A retry changes nothing and
// writes no event; a failed rollout leaves the LRP as it is.
func TestRolloutCancelAndEndAreDesiredLRPChanges(t *testing.T) {
	s := dbtest.NewStore(t)
	lastChange := func() model.Change[model.DesiredLRPEvent] {
		t.Helper()
		var raw []byte
		if err := s.DB().QueryRow(`SELECT data FROM events WHERE name = 'desired_lrp_changed' ORDER BY id DESC LIMIT 1`).Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var c model.Change[model.DesiredLRPEvent]
		if err := json.Unmarshal(raw, &c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	id := startedUpdate(t, s, "app", 2, "v2")
	changes := events(t, s, model.EventDesiredLRPChanged)
	for range 2 {
		if err := s.BeginCancel(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if n := events(t, s, model.EventDesiredLRPChanged); n != changes+1 {
		t.Fatalf("%d desired_lrp_changed events for a cancel begun twice, want 1", n-changes)
	}
	c := lastChange()
	before, after := c.Before.Model(), c.After.Model()
	if before.DefinitionID != "v2" || before.PreviousDefinitionID != "app" || after.DefinitionID != "app" || after.PreviousDefinitionID != "v2" ||
		after.ModificationTag.Index != before.ModificationTag.Index+1 {
		t.Fatalf("the cancel's change: before %s/%s (%d), after %s/%s (%d)", before.DefinitionID, before.PreviousDefinitionID,
			before.ModificationTag.Index, after.DefinitionID, after.PreviousDefinitionID, after.ModificationTag.Index)
	}
	for range 2 {
		if _, err := s.FinishRollout(ctx, id, model.RolloutCanceled, ""); err != nil {
			t.Fatal(err)
		}
	}
	if n := events(t, s, model.EventDesiredLRPChanged); n != changes+2 {
		t.Fatalf("%d desired_lrp_changed events after the cancel's end (twice), want 2", n-changes)
	}
	if after := lastChange().After.Model(); after.DefinitionID != "app" || after.PreviousDefinitionID != "" {
		t.Fatalf("the end's change: after %s/%s", after.DefinitionID, after.PreviousDefinitionID)
	}

	// A completed walk clears the previous definition with one event; a failed rollout
	// changes nothing of the LRP.
	done := startedUpdate(t, s, "done", 1, "d2")
	changes = events(t, s, model.EventDesiredLRPChanged)
	if _, err := s.CompleteRollout(ctx, done, model.RolloutProgress{State: model.RolloutActive, Instances: 1, GivenUpIndices: []int32{}}, model.RolloutCompleted, nil); err != nil {
		t.Fatal(err)
	}
	if after := lastChange().After.Model(); events(t, s, model.EventDesiredLRPChanged) != changes+1 || after.ProcessGUID != "done" ||
		after.DefinitionID != "d2" || after.PreviousDefinitionID != "" {
		t.Fatalf("the completion's change: %+v", after)
	}
	failed := startedUpdate(t, s, "failed", 1, "f2")
	changes = events(t, s, model.EventDesiredLRPChanged)
	if _, err := s.FinishRollout(ctx, failed, model.RolloutFailed, "x"); err != nil {
		t.Fatal(err)
	}
	if n := events(t, s, model.EventDesiredLRPChanged); n != changes {
		t.Fatalf("a failed rollout wrote %d desired_lrp_changed events", n-changes)
	}
}
