package db_test

import (
	"slices"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/model"
)

// A cell's claim of a stop and a withdrawal of the retirement exclude each other: a walk back
// takes a draining instance back into service unless its cell has claimed the stop, and a
// cell stops only what it claimed.
func TestAStopClaimAndAWithdrawalExcludeEachOther(t *testing.T) {
	s, id, fence := openRun(t) // app: 3 RUNNING on "app", a rollout to v2 with a run open
	exec(t, s, `UPDATE actual_lrps SET retiring = true WHERE definition_id = 'app'`)
	key := func(i int32) model.ActualLRPKey {
		return model.ActualLRPKey{ProcessGUID: "app", DefinitionID: "app", Index: i}
	}
	ik := func(i int32) model.ActualLRPInstanceKey {
		return model.ActualLRPInstanceKey{InstanceGUID: "ig-" + string(rune('0'+i)), CellID: "cell-1"}
	}
	// Index 0's cell claims its stop: from then on it is the cell's to stop.
	if stop, err := s.ClaimStop(ctx, key(0), ik(0)); err != nil || !stop {
		t.Fatalf("ClaimStop(0) = %v, %v", stop, err)
	}
	h := db.RunHold{RolloutID: id, Fence: fence, Attempt: 1}
	if _, err := s.TakeRun(ctx, h); err != nil {
		t.Fatal(err)
	}
	// A walk back to "app" over 0-2: 1 and 2 are withdrawn and serve on; 0 is not.
	adv, err := s.AdvanceRun(ctx, h, db.RunAdvance{ProcessGUID: "app", DefinitionID: "app", Back: true, Next: []int32{2, 1, 0}})
	if err != nil || !slices.Equal(adv.Run.InFlight, []int32{0, 1, 2}) {
		t.Fatalf("walk back = %+v, %v", adv, err)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE definition_id = 'app' AND retiring`); n != 1 {
		t.Fatalf("%d retiring after the walk back's withdrawal, want index 0's alone", n)
	}
	// Withdrawn: the cells keep them; claimed: stopped.
	for i, want := range []bool{true, false, false} {
		if stop, err := s.ClaimStop(ctx, key(int32(i)), ik(int32(i))); err != nil || stop != want {
			t.Fatalf("ClaimStop(%d) = %v, %v; want %v", i, stop, err, want)
		}
	}
	// An instance the BBS no longer has there is stopped.
	if stop, err := s.ClaimStop(ctx, key(1), model.ActualLRPInstanceKey{InstanceGUID: "other", CellID: "cell-1"}); err != nil || !stop {
		t.Fatalf("ClaimStop(a stranger) = %v, %v", stop, err)
	}
	// The withdrawal was announced: routers put the instances back.
	if n := count(t, s, `SELECT count(*) FROM events WHERE name = 'actual_lrp_instance_changed' AND data->'after'->>'retiring' IS DISTINCT FROM 'true'
  AND data->'before'->>'retiring' = 'true'`); n < 2 {
		t.Fatalf("%d withdrawal events", n)
	}
}

// A claim that comes while a withdrawal holds the instance waits for it and answers keep.
func TestAStopClaimWaitsForAWithdrawalUnderWay(t *testing.T) {
	s, _, _ := openRun(t)
	exec(t, s, `UPDATE actual_lrps SET retiring = true WHERE definition_id = 'app' AND instance_index = 1`)
	tx, err := s.DB().BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`UPDATE actual_lrps SET retiring = false WHERE definition_id = 'app' AND instance_index = 1 AND NOT stop_claimed`); err != nil {
		t.Fatal(err)
	}
	answer := make(chan bool)
	go func() {
		stop, err := s.ClaimStop(ctx, model.ActualLRPKey{ProcessGUID: "app", DefinitionID: "app", Index: 1},
			model.ActualLRPInstanceKey{InstanceGUID: "ig-1", CellID: "cell-1"})
		if err != nil {
			t.Error(err)
		}
		answer <- stop
	}()
	time.Sleep(200 * time.Millisecond) // the claim waits on the row's lock
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if <-answer {
		t.Fatal("a claim answered stop for an instance whose retirement was withdrawn under it")
	}
}
