package db_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

// openRun is an LRP of three instances RUNNING its first definition, a rollout of it to v2
// and an index run opened for that rollout.
func openRun(t *testing.T) (s *db.Store, id string, fence int64) {
	t.Helper()
	s = dbtest.NewStore(t)
	desire(t, s, newLRP("app", 3))
	for i := range 3 {
		makeRunning(t, s, "app", "app", i)
	}
	st, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: newDef("v2")})
	if err != nil {
		t.Fatal(err)
	}
	if fence, err = s.OpenRun(ctx, st.Rollout.ID); err != nil {
		t.Fatal(err)
	}
	return s, st.Rollout.ID, fence
}

// An index run walks in one transaction per index: the decided index's old instances retire
// and are recorded, the next index's instance is desired, the row shows the progress.
func TestIndexRunAdvances(t *testing.T) {
	s, id, fence := openRun(t)
	h := db.RunHold{RolloutID: id, Fence: fence, Attempt: 1}
	if run, err := s.TakeRun(ctx, h); err != nil || run.Index != -1 || len(run.Updated) != 0 {
		t.Fatalf("TakeRun = %+v, %v", run, err)
	}
	step := db.RunAdvance{ProcessGUID: "app", DefinitionID: "v2", Next: []int32{0}, Before: []int32{}}
	adv, err := s.AdvanceRun(ctx, h, step)
	if err != nil || !adv.Exists || adv.Instances != 3 || !slices.Equal(adv.Run.InFlight, []int32{0}) || adv.Run.Index != 0 {
		t.Fatalf("first step = %+v, %v", adv, err)
	}
	makeRunning(t, s, "app", "v2", 0)
	step.Decided, step.Next = []db.RunDecision{{Index: 0, Outcome: model.StepUpdated}}, []int32{1}
	adv, err = s.AdvanceRun(ctx, h, step)
	if err != nil || len(adv.ToStop) != 1 || adv.ToStop[0].DefinitionID != "app" || !slices.Equal(adv.Run.Updated, []int32{0}) || adv.Run.Index != 1 {
		t.Fatalf("second step = %+v, %v", adv, err)
	}
	// Repeated (a retried transaction whose answer was lost): the same state.
	if again, err := s.AdvanceRun(ctx, h, step); err != nil || len(again.ToStop) != 1 || !slices.Equal(again.Run.Updated, []int32{0}) {
		t.Fatalf("repeated step = %+v, %v", again, err)
	}
	ro, err := s.RolloutByID(ctx, id)
	if err != nil || ro.CurrentIndex != 1 || ro.UpdatedInstances != 1 || ro.Instances != 3 {
		t.Fatalf("row = %+v, %v", ro, err)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE definition_id = 'v2' AND instance_index = 1`); n != 1 {
		t.Fatalf("%d instances of v2 at index 1, want the one desired", n)
	}
	// Given up: v2's instance at 1 retires, the old one stays; the count of given-up grows.
	step.Decided, step.Next = []db.RunDecision{{Index: 1, Outcome: model.StepGivenUp}}, []int32{2}
	if adv, err = s.AdvanceRun(ctx, h, step); err != nil || !slices.Equal(adv.Run.GivenUp, []int32{1}) {
		t.Fatalf("given up = %+v, %v", adv, err)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE definition_id = 'v2' AND instance_index = 1`); n != 0 {
		t.Fatalf("v2's instance at the given-up index left")
	}
	if ro, _ := s.RolloutByID(ctx, id); !slices.Equal(ro.GivenUpIndices, []int32{1}) {
		t.Fatalf("given up on the row = %v", ro.GivenUpIndices)
	}
}

// Once the workflow stops a run, or a later attempt takes it over, the run writes nothing:
// StopRun's answer is all it did.
func TestIndexRunIsFenced(t *testing.T) {
	s, id, fence := openRun(t)
	first := db.RunHold{RolloutID: id, Fence: fence, Attempt: 1}
	if _, err := s.TakeRun(ctx, first); err != nil {
		t.Fatal(err)
	}
	step := db.RunAdvance{ProcessGUID: "app", DefinitionID: "v2", Next: []int32{0}}
	if _, err := s.AdvanceRun(ctx, first, step); err != nil {
		t.Fatal(err)
	}
	// A second attempt (the first one's worker presumed dead) resumes where it was.
	second := first
	second.Attempt = 2
	run, err := s.TakeRun(ctx, second)
	if err != nil || run.Index != 0 {
		t.Fatalf("TakeRun by the second attempt = %+v, %v", run, err)
	}
	if _, err := s.TakeRun(ctx, first); !errors.Is(err, db.ErrRunFenced) {
		t.Fatalf("the first attempt took the run back: %v", err)
	}
	makeRunning(t, s, "app", "v2", 0)
	step.Decided, step.Next = []db.RunDecision{{Index: 0, Outcome: model.StepUpdated}}, []int32{1}
	if _, err := s.AdvanceRun(ctx, first, step); !errors.Is(err, db.ErrRunFenced) {
		t.Fatalf("the first attempt advanced: %v", err)
	}
	if held, _, err := s.HoldsRun(ctx, first); err != nil || held {
		t.Fatalf("HoldsRun(first) = %v, %v", held, err)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE definition_id = 'app' AND instance_index = 0 AND retiring`); n != 0 {
		t.Fatal("a fenced-out attempt retired an instance")
	}
	if _, err := s.AdvanceRun(ctx, second, step); err != nil {
		t.Fatal(err)
	}
	stopped, err := s.StopRun(ctx, id)
	if err != nil || !slices.Equal(stopped.Updated, []int32{0}) || stopped.Index != 1 {
		t.Fatalf("StopRun = %+v, %v", stopped, err)
	}
	if again, err := s.StopRun(ctx, id); err != nil || !slices.Equal(again.Updated, stopped.Updated) || again.Index != stopped.Index {
		t.Fatalf("StopRun again = %+v, %v", again, err)
	}
	makeRunning(t, s, "app", "v2", 1)
	step.Decided, step.Next = []db.RunDecision{{Index: 1, Outcome: model.StepUpdated}}, []int32{2}
	if _, err := s.AdvanceRun(ctx, second, step); !errors.Is(err, db.ErrRunFenced) {
		t.Fatalf("a stopped run advanced: %v", err)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE definition_id = 'v2' AND instance_index = 2`); n != 0 {
		t.Fatal("a stopped run desired an instance")
	}
	// A new run starts with a clean record and a new fence.
	next, err := s.OpenRun(ctx, id)
	if err != nil || next <= fence+2 {
		t.Fatalf("OpenRun = %d, %v (fence was %d, stopped twice)", next, err, fence)
	}
	if run, err := s.TakeRun(ctx, db.RunHold{RolloutID: id, Fence: next, Attempt: 1}); err != nil || len(run.Updated) != 0 || run.Index != -1 {
		t.Fatalf("new run = %+v, %v", run, err)
	}
}

// A run whose LRP is gone, or scaled below the index, changes nothing there.
func TestIndexRunAfterScaleDownAndRemoval(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 2))
	st, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: "app", Kind: model.RolloutKindUpdate, Definition: newDef("v2")})
	if err != nil {
		t.Fatal(err)
	}
	fence, _ := s.OpenRun(ctx, st.Rollout.ID)
	h := db.RunHold{RolloutID: st.Rollout.ID, Fence: fence, Attempt: 1}
	if _, err := s.TakeRun(ctx, h); err != nil {
		t.Fatal(err)
	}
	exec(t, s, `UPDATE desired_lrps SET instances = 1 WHERE process_guid = 'app'`)
	adv, err := s.AdvanceRun(ctx, h, db.RunAdvance{ProcessGUID: "app", DefinitionID: "v2", Next: []int32{1}})
	if err != nil || adv.Instances != 1 || len(adv.Run.InFlight) != 0 || adv.Run.Index != -1 {
		t.Fatalf("beyond the count = %+v, %v", adv, err)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE definition_id = 'v2'`); n != 0 {
		t.Fatal("an instance desired beyond the count")
	}
	if _, err := s.RemoveDesiredLRP(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	if adv, err := s.AdvanceRun(ctx, h, db.RunAdvance{ProcessGUID: "app", DefinitionID: "v2", Next: []int32{0}}); err != nil || adv.Exists {
		t.Fatalf("after removal = %+v, %v", adv, err)
	}
}

// A run keeps a set of indices in flight: a step may decide several and desire several, but
// no more new ones than the limit the workflow set on the row (a pause: none); HoldsRun tells
// the limit, and StopRunRetiring retires what is left in flight in the stopping transaction.
func TestIndexRunSetAndLimit(t *testing.T) {
	s, id, fence := openRun(t)
	h := db.RunHold{RolloutID: id, Fence: fence, Attempt: 1}
	if _, err := s.TakeRun(ctx, h); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRunLimit(ctx, id, fence, 2); err != nil {
		t.Fatal(err)
	}
	if _, limit, err := s.HoldsRun(ctx, h); err != nil || limit != 2 {
		t.Fatalf("HoldsRun limit = %d, %v", limit, err)
	}
	adv, err := s.AdvanceRun(ctx, h, db.RunAdvance{ProcessGUID: "app", DefinitionID: "v2", Next: []int32{0, 1, 2}})
	if err != nil || !slices.Equal(adv.Run.InFlight, []int32{0, 1}) || adv.Run.Limit != 2 {
		t.Fatalf("desire over the limit = %+v, %v", adv, err)
	}
	makeRunning(t, s, "app", "v2", 0)
	makeRunning(t, s, "app", "v2", 1)
	both := []db.RunDecision{{Index: 1, Outcome: model.StepUpdated}, {Index: 0, Outcome: model.StepUpdated}}
	adv, err = s.AdvanceRun(ctx, h, db.RunAdvance{ProcessGUID: "app", DefinitionID: "v2", Decided: both, Next: []int32{2}})
	if err != nil || !slices.Equal(adv.Run.Updated, []int32{0, 1}) || !slices.Equal(adv.Run.InFlight, []int32{2}) || len(adv.ToStop) != 2 {
		t.Fatalf("two decided together = %+v, %v", adv, err)
	}
	if ro, _ := s.RolloutByID(ctx, id); ro.UpdatedInstances != 2 || ro.CurrentIndex != 2 {
		t.Fatalf("row = %+v", ro)
	}
	if err := s.SetRunLimit(ctx, id, fence, -1); !model.IsType(err, model.ErrInvalidRequest) {
		t.Fatalf("a negative limit: %v", err)
	}
	st, stop, err := s.StopRunRetiring(ctx, id, "app", "v2")
	if err != nil || !slices.Equal(st.InFlight, []int32{2}) || len(stop) != 0 {
		t.Fatalf("StopRunRetiring = %+v, %v, %v", st, stop, err)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE definition_id = 'v2' AND instance_index = 2`); n != 0 {
		t.Fatal("the undecided index's new instance was left")
	}
	if _, err := s.AdvanceRun(ctx, h, db.RunAdvance{ProcessGUID: "app", DefinitionID: "v2", Next: []int32{2}}); !errors.Is(err, db.ErrRunFenced) {
		t.Fatalf("a stopped run advanced: %v", err)
	}
	// A later SetRunLimit for the stopped run's fence changes nothing.
	if err := s.SetRunLimit(ctx, id, fence, 5); err != nil {
		t.Fatal(err)
	}
	if _, limit, _ := s.HoldsRun(ctx, h); limit != 2 {
		t.Fatalf("a stopped run's limit changed to %d", limit)
	}
}

// An index decided as updated whose instance crashed since the run saw it serve is not
// decided: nothing retires there, and it stays in flight to be waited for again.
func TestIndexRunRewaitsAnInstanceThatStoppedServing(t *testing.T) {
	s, id, fence := openRun(t)
	h := db.RunHold{RolloutID: id, Fence: fence, Attempt: 1}
	if _, err := s.TakeRun(ctx, h); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AdvanceRun(ctx, h, db.RunAdvance{ProcessGUID: "app", DefinitionID: "v2", Next: []int32{0}}); err != nil {
		t.Fatal(err)
	}
	// v2 at 0 stays UNCLAIMED (as after a crash): the run's decision comes anyway.
	adv, err := s.AdvanceRun(ctx, h, db.RunAdvance{ProcessGUID: "app", DefinitionID: "v2",
		Decided: []db.RunDecision{{Index: 0, Outcome: model.StepUpdated}}})
	if err != nil || !slices.Equal(adv.Rewait, []int32{0}) || !slices.Equal(adv.Run.InFlight, []int32{0}) || len(adv.Run.Updated) != 0 || len(adv.ToStop) != 0 {
		t.Fatalf("a decision on an instance not serving = %+v, %v", adv, err)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE definition_id = 'app' AND instance_index = 0 AND NOT retiring`); n != 1 {
		t.Fatal("the old instance was retired for a new one that does not serve")
	}
}

// A run opened by the OpenRun of the version before (which knew no limit, no set) inherits
// neither the pause nor the indices in flight of an earlier run.
func TestIndexRunOpenedByTheVersionBeforeIsClean(t *testing.T) {
	s, id, fence := openRun(t)
	h := db.RunHold{RolloutID: id, Fence: fence, Attempt: 1}
	if _, err := s.TakeRun(ctx, h); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AdvanceRun(ctx, h, db.RunAdvance{ProcessGUID: "app", DefinitionID: "v2", Next: []int32{0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetRunLimit(ctx, id, fence, 0); err != nil {
		t.Fatal(err)
	}
	// The version before's OpenRun.
	exec(t, s, `UPDATE rollouts SET run_fence = run_fence + 1, run_attempt = 0, run_updated = '{}', run_given_up = '{}', run_index = -1 WHERE id = $1`, id)
	run, err := s.TakeRun(ctx, db.RunHold{RolloutID: id, Fence: fence + 1, Attempt: 1})
	if err != nil || len(run.InFlight) != 0 || run.Index != -1 || run.Limit != -1 {
		t.Fatalf("a run opened by the version before = %+v, %v", run, err)
	}
	if _, limit, err := s.HoldsRun(ctx, db.RunHold{RolloutID: id, Fence: fence + 1, Attempt: 1}); err != nil || limit != -1 {
		t.Fatalf("its limit = %d, %v", limit, err)
	}
}
