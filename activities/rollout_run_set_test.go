package activities_test

import (
	"context"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/activities"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
)

// The one walk engine: a run with several indices in flight, walking back, drained by a
// pause, given a new pace, ended by a failure, stopped with its indices retired.

// waitFor polls q until it counts want.
func (w *runWorld) waitFor(q string, want int) {
	w.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for count(w.t, w.store, q) != want {
		if time.Now().After(deadline) {
			w.t.Fatalf("%s never counted %d", q, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// background runs WalkRun and hands its output over when it ends.
func (w *runWorld) background(in activities.WalkRunInput) <-chan activities.WalkRunOutput {
	done := make(chan activities.WalkRunOutput, 1)
	go func() {
		out, err := w.walk(in)
		if err != nil {
			w.t.Error(err)
		}
		done <- out
	}()
	return done
}

func (w *runWorld) ended(done <-chan activities.WalkRunOutput) activities.WalkRunOutput {
	w.t.Helper()
	select {
	case out := <-done:
		return out
	case <-time.After(20 * time.Second):
		w.t.Fatal("the run did not end")
	}
	return activities.WalkRunOutput{}
}

const v2Count = `SELECT count(*) FROM actual_lrps WHERE definition_id = 'v2'`

// With InFlight 3 the run desires three indices at once: none of them runs until three v2
// instances exist, which a run of one index at a time would never reach.
func TestWalkRunKeepsSeveralIndicesInFlight(t *testing.T) {
	var w *runWorld
	w = newRunWorldOf(t, 6, func(int32) bool { return count(t, w.store, v2Count) >= 3 })
	out, err := w.walk(activities.WalkRunInput{Deadline: time.Minute, Healthy: true, InFlight: 3})
	if err != nil || !slices.Equal(out.Updated, []int32{0, 1, 2, 3, 4, 5}) || out.Next != 6 {
		t.Fatalf("WalkRun = %+v, %v", out, err)
	}
	if n := count(t, w.store, `SELECT count(*) FROM actual_lrps WHERE definition_id = 'app' AND NOT retiring`); n != 0 {
		t.Fatalf("%d old instances not retired", n)
	}
}

// Until the definition has run once, one index is in flight whatever the pace (seed 000's
// failing definition keeps every old instance).
func TestWalkRunGatesAnUnhealthyDefinition(t *testing.T) {
	w := newRunWorldOf(t, 6, func(int32) bool { return false })
	done := w.background(activities.WalkRunInput{Deadline: time.Minute, InFlight: 3})
	w.waitFor(v2Count, 1)
	time.Sleep(300 * time.Millisecond)
	if n := count(t, w.store, v2Count); n != 1 {
		t.Fatalf("%d v2 instances desired before the definition ran", n)
	}
	if _, err := w.store.StopRun(context.Background(), w.id); err != nil {
		t.Fatal(err)
	}
	w.ended(done)
}

// A run given Indices walks them back: the definition it returns to runs at each (here it
// still does), the other retires, and the row counts the indices walked back off.
func TestWalkRunWalksBack(t *testing.T) {
	w := newRunWorld(t, func(int32) bool { return true })
	for i := range int32(3) {
		if _, err := w.store.DesireInstance(context.Background(), "app", "v2", i); err != nil {
			t.Fatal(err)
		}
	}
	w.waitFor(v2Count+` AND state = 'RUNNING'`, 3)
	in := activities.WalkRunInput{Deadline: time.Minute, Healthy: true, InFlight: 2, Indices: []int32{2, 1, 0}, Back: true,
		Before: []int32{0, 1, 2}}
	out, err := w.walkDef(in, "app")
	if err != nil || !slices.Equal(out.Updated, []int32{0, 1, 2}) {
		t.Fatalf("WalkRun back = %+v, %v", out, err)
	}
	if n := count(t, w.store, v2Count+` AND NOT retiring`); n != 0 {
		t.Fatalf("%d v2 instances left serving after the walk back", n)
	}
	ro, err := w.store.RolloutByID(context.Background(), w.id)
	if err != nil || ro.UpdatedInstances != 0 || len(ro.GivenUpIndices) != 0 {
		t.Fatalf("row after the walk back = %+v, %v", ro, err)
	}
}

// A limit of 0 (a pause) drains the run: the index in flight finishes, no other starts.
func TestWalkRunDrains(t *testing.T) {
	var release atomic.Bool
	w := newRunWorld(t, func(i int32) bool { return i != 1 || release.Load() })
	done := w.background(activities.WalkRunInput{Deadline: time.Minute, Healthy: true})
	w.waitFor(`SELECT count(*) FROM rollouts WHERE run_in_flight = '{1}'`, 1)
	if err := w.store.SetRunLimit(context.Background(), w.id, w.fence, 0); err != nil {
		t.Fatal(err)
	}
	release.Store(true)
	out := w.ended(done)
	if !slices.Equal(out.Updated, []int32{0, 1}) || out.Next != 2 {
		t.Fatalf("drained run = %+v", out)
	}
	if n := count(t, w.store, v2Count+` AND instance_index = 2`); n != 0 {
		t.Fatal("a drained run started another index")
	}
}

// A new pace reaches a run while it waits: more indices start at once.
func TestWalkRunTakesANewPace(t *testing.T) {
	var release atomic.Bool
	w := newRunWorldOf(t, 4, func(i int32) bool { return i != 0 || release.Load() })
	done := w.background(activities.WalkRunInput{Deadline: time.Minute, Healthy: true})
	w.waitFor(v2Count, 1)
	if err := w.store.SetRunLimit(context.Background(), w.id, w.fence, 3); err != nil {
		t.Fatal(err)
	}
	w.waitFor(v2Count+` AND state = 'RUNNING' AND instance_index IN (1, 2)`, 2)
	release.Store(true)
	if out := w.ended(done); !slices.Equal(out.Updated, []int32{0, 1, 2, 3}) {
		t.Fatalf("WalkRun = %+v", out)
	}
}

// With a failure policy the run ends at the first index it gives up: the others in flight
// retire their new instance undecided, their old one serving, and the forward walk would
// resume at the lowest of them.
func TestWalkRunEndsAtAFailure(t *testing.T) {
	w := newRunWorldOf(t, 4, func(i int32) bool { return i == 0 })
	// Placed but never RUNNING (a wait for placement is a platform failure, never counted).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			_, _ = w.store.DB().ExecContext(ctx, `UPDATE actual_lrps SET state = 'CLAIMED', cell_id = 'cell-2', instance_guid = 'new-'||instance_index
WHERE definition_id = 'v2' AND instance_index > 0 AND state = 'UNCLAIMED'`)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	out, err := w.walk(activities.WalkRunInput{Deadline: 300 * time.Millisecond, DeadlineAlways: true, Healthy: true,
		InFlight: 3, Failures: true})
	if err != nil || out.Failure == nil || len(out.GivenUp) == 0 {
		t.Fatalf("WalkRun = %+v, %v", out, err)
	}
	if want := int32(4); len(out.Interrupted) > 0 && out.Next != slices.Min(out.Interrupted) || len(out.Interrupted) == 0 && out.Next != want {
		t.Fatalf("next %d, want %d", out.Next, want)
	}
	if n := count(t, w.store, v2Count+` AND instance_index IN (1, 2, 3) AND NOT retiring`); n != 0 {
		t.Fatalf("%d new instances left at the failed and interrupted indices", n)
	}
	if n := count(t, w.store, `SELECT count(*) FROM actual_lrps WHERE definition_id = 'app' AND instance_index IN (1, 2, 3) AND NOT retiring`); n != 3 {
		t.Fatalf("old instances serving at 1-3: %d", n)
	}
}

// StopRunRetiring stops a run with indices in flight and retires their new instances in
// the same transaction; the run ends without another write.
func TestWalkRunStoppedRetiring(t *testing.T) {
	w := newRunWorldOf(t, 4, func(int32) bool { return false })
	done := w.background(activities.WalkRunInput{Healthy: true, InFlight: 2})
	w.waitFor(`SELECT count(*) FROM rollouts WHERE run_in_flight = '{0,1}'`, 1)
	st, stop, err := w.store.StopRunRetiring(context.Background(), w.id, "app", "v2")
	if err != nil || !slices.Equal(st.InFlight, []int32{0, 1}) || len(stop) != 0 {
		t.Fatalf("StopRunRetiring = %+v, %v, %v", st, stop, err)
	}
	if n := count(t, w.store, v2Count); n != 0 {
		t.Fatalf("%d new instances left by a stopped run", n)
	}
	w.ended(done)
	if n := count(t, w.store, v2Count); n != 0 {
		t.Fatal("a stopped run desired again")
	}
}

// An attempt retried after an earlier one ended at a failure (its worker lost before the
// workflow heard) answers what the earlier one did, the indices it interrupted included: the
// forward walk resumes at the lowest of them, not past them.
func TestWalkRunRetriedAfterAFailureKeepsTheInterrupted(t *testing.T) {
	w := newRunWorldOf(t, 4, func(int32) bool { return false })
	earlier := db.RunHold{RolloutID: w.id, Fence: w.fence, Attempt: 0}
	if _, err := w.store.TakeRun(context.Background(), earlier); err != nil {
		t.Fatal(err)
	}
	step := db.RunAdvance{ProcessGUID: "app", DefinitionID: "v2", Next: []int32{0, 1, 2}}
	if _, err := w.store.AdvanceRun(context.Background(), earlier, step); err != nil {
		t.Fatal(err)
	}
	step = db.RunAdvance{ProcessGUID: "app", DefinitionID: "v2", Decided: []db.RunDecision{{Index: 1, Outcome: model.StepGivenUp}},
		Interrupt: []int32{0, 2}}
	if _, err := w.store.AdvanceRun(context.Background(), earlier, step); err != nil {
		t.Fatal(err)
	}
	out, err := w.walk(activities.WalkRunInput{Deadline: time.Minute, Healthy: true, InFlight: 3, Failures: true})
	if err != nil || out.Failure == nil || !slices.Equal(out.GivenUp, []int32{1}) || out.Next != 0 || !slices.Equal(out.Interrupted, []int32{0}) {
		t.Fatalf("retried WalkRun = %+v, %v", out, err)
	}
}
