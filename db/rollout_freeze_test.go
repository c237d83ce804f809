package db_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

// A freeze and the starts racing it: every start either committed before the freeze — and is
// among the rollouts under way the freeze's caller lists right after it (those it signals) —
// or was refused with Frozen. None slips in between.
func TestFreezeIsAtomicWithStarts(t *testing.T) {
	s := dbtest.NewStore(t)
	const n = 24
	for i := range n {
		desire(t, s, newLRP(fmt.Sprintf("app-%d", i), 1))
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		started []string
		listed  []string
	)
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			guid := fmt.Sprintf("app-%d", i)
			_, err := s.StartRollout(ctx, db.RolloutRequest{ProcessGUID: guid, Kind: model.RolloutKindUpdate, Definition: newDef("v2")})
			switch {
			case err == nil:
				mu.Lock()
				started = append(started, guid)
				mu.Unlock()
			case !model.IsType(err, model.ErrFrozen):
				t.Errorf("%s: %v", guid, err)
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-start
		f, changed, err := s.SetFreeze(ctx, true, "race")
		if err != nil || !changed || !f.Frozen || f.Generation != 1 {
			t.Errorf("SetFreeze = %+v %v %v", f, changed, err)
		}
		rs, err := s.Rollouts(ctx, model.RolloutFilter{Active: true})
		if err != nil {
			t.Error(err)
		}
		for _, r := range rs {
			listed = append(listed, r.ProcessGUID)
		}
	}()
	close(start)
	wg.Wait()
	slices.Sort(started)
	slices.Sort(listed)
	if !slices.Equal(started, listed) {
		t.Fatalf("started %v, but the freeze's caller listed %v", started, listed)
	}
	t.Logf("%d of %d started before the freeze", len(started), n)
	if f, _ := s.FreezeState(ctx); !f.Frozen || f.Reason != "race" {
		t.Fatalf("FreezeState = %+v", f)
	}
	// Repeating changes nothing; an unfreeze takes the next generation.
	if _, changed, _ := s.SetFreeze(ctx, true, "race"); changed {
		t.Fatal("a repeated freeze changed the freeze")
	}
	if f, changed, err := s.SetFreeze(ctx, false, "ignored"); err != nil || !changed || f.Frozen || f.Reason != "" || f.Generation != 2 {
		t.Fatalf("unfreeze = %+v %v %v", f, changed, err)
	}
}

// A freeze waits for the starts in flight: one that holds the freeze row (as a start's
// transaction does, checkFreeze) keeps SetFreeze waiting on its lock until it commits.
func TestFreezeWaitsForAStartInFlight(t *testing.T) {
	s := dbtest.NewStore(t)
	tx, err := s.DB().Beginx()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	var frozen bool
	if err := tx.Get(&frozen, `SELECT frozen FROM rollout_freeze FOR SHARE`); err != nil || frozen {
		t.Fatalf("freeze row: %v %v", frozen, err)
	}
	done := make(chan error, 1)
	go func() {
		_, _, err := s.SetFreeze(ctx, true, "wait")
		done <- err
	}()
	for waiting := 0; waiting == 0; {
		waiting = count(t, s, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%rollout_freeze FOR UPDATE%'`)
	}
	select {
	case err := <-done:
		t.Fatalf("SetFreeze returned (%v) while a start held the freeze row", err)
	default:
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
