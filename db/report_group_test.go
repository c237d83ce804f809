package db_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

// groupedClaims has a claim of index 0 wait on a row lock while callers queue one claim
// each (cell-1 … for indices 1 …, a second cell for index 1, a missing index, and
// extra), then lets them all through, checks the answers of all but extra's callers, and
// returns each caller's answers and error in its order.
func groupedClaims(t *testing.T, s *db.Store, extra []db.InstanceReport) ([][]db.BatchResult, []error) {
	t.Helper()
	desire(t, s, newLRP("app", 12))
	lock, err := s.DB().BeginTxx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Rollback()
	if _, err := lock.ExecContext(ctx, `SELECT 1 FROM actual_lrps WHERE process_guid = 'app' AND instance_index = 0 FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	calls := [][]db.InstanceReport{{{Key: key("app", 0), InstanceKey: ik(0)}}}
	for i := int32(1); i <= 10; i++ {
		calls = append(calls, []db.InstanceReport{{Key: key("app", i), InstanceKey: ik(i)}})
	}
	calls = append(calls,
		[]db.InstanceReport{{Key: key("app", 1), InstanceKey: ik(100)}}, // the same slot as caller 1
		[]db.InstanceReport{{Key: key("app", 99), InstanceKey: ik(99)}}, // no such instance
	)
	for _, r := range extra {
		calls = append(calls, []db.InstanceReport{r})
	}
	out := make([][]db.BatchResult, len(calls))
	errs := make([]error, len(calls))
	var wg sync.WaitGroup
	run := func(i int) {
		wg.Add(1)
		go func() { defer wg.Done(); out[i], errs[i] = s.ClaimActualLRPs(ctx, calls[i]) }()
	}
	run(0)
	waitFor(t, func() bool { return s.ClaimCommits() == 1 && s.ClaimsWaiting() == 0 })
	for i := 1; i < len(calls); i++ {
		run(i)
	}
	waitFor(t, func() bool { return s.ClaimsWaiting() == len(calls)-1 })
	lock.Rollback()
	wg.Wait()
	for i, err := range errs[:13] {
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
		if len(out[i]) != 1 {
			t.Fatalf("caller %d: %d answers for 1 report", i, len(out[i]))
		}
		if r := out[i][0]; r.Err == nil && (r.ActualLRP.ActualLRPKey != calls[i][0].Key || r.ActualLRP.ActualLRPInstanceKey != calls[i][0].InstanceKey) {
			t.Fatalf("caller %d got %+v, the answer to another's report", i, r.ActualLRP)
		}
	}
	for i := 0; i <= 10; i++ {
		if i == 1 {
			continue
		}
		if err := out[i][0].Err; err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	// One of the two claims of index 1 wins, whichever came first; the other is refused.
	if (out[1][0].Err == nil) == (out[11][0].Err == nil) {
		t.Fatalf("claims of the same slot: %v and %v, want exactly one refused", out[1][0].Err, out[11][0].Err)
	}
	if refused := out[1][0].Err; refused != nil {
		wantType(t, refused, model.ErrCannotBeClaimed)
	} else {
		wantType(t, out[11][0].Err, model.ErrCannotBeClaimed)
	}
	wantType(t, out[12][0].Err, model.ErrResourceNotFound)
	return out, errs
}

func ik(i int32) model.ActualLRPInstanceKey {
	return model.ActualLRPInstanceKey{InstanceGUID: fmt.Sprintf("ig-%d", i), CellID: fmt.Sprintf("cell-%d", i)}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestConcurrentClaimsShareATransaction: claims that arrive while one is being written are
// written together in the next transaction, and each caller gets the answers to its own
// reports, refusals included.
func TestConcurrentClaimsShareATransaction(t *testing.T) {
	s := dbtest.NewStore(t)
	groupedClaims(t, s, nil)
	if n := s.ClaimCommits(); n != 2 {
		t.Fatalf("%d transactions for 13 claims, want 2 (the first, then the 12 that waited)", n)
	}
}

// TestFailedGroupIsRetriedCallerByCaller: a report PostgreSQL cannot store fails its group's
// transaction; each caller is then written on its own, so that only that report's caller
// sees the error.
func TestFailedGroupIsRetriedCallerByCaller(t *testing.T) {
	s := dbtest.NewStore(t)
	bad := db.InstanceReport{Key: key("app", 11), InstanceKey: model.ActualLRPInstanceKey{InstanceGUID: "ig\x00", CellID: "cell-x"}}
	_, errs := groupedClaims(t, s, []db.InstanceReport{bad})
	if errs[13] == nil {
		t.Fatal("a report with a NUL byte was taken")
	}
	if n := s.ClaimCommits(); n != 1+1+13 {
		t.Fatalf("%d transactions, want %d (the first, the failed group, then each of its 13 callers)", n, 1+1+13)
	}
}
