package auctioneer_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/auctioneer"
	"github.com/updatable-lrps/bbs/cellapi"
	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
	"go.uber.org/zap"
)

// claimingCells claims in the store what it is handed, as a cell agent does, except the
// instances of refuse, which it refuses (a full cell), and its own claims that lose.
type claimingCells struct {
	store  *db.Store
	refuse string
	mu     sync.Mutex
	got    int
}

func (c *claimingCells) Perform(ctx context.Context, repURL string, work cellapi.PerformRequest) (*cellapi.PerformResponse, error) {
	resp := &cellapi.PerformResponse{}
	var reports []db.InstanceReport
	for _, w := range work.LRPs {
		if w.Key.ProcessGUID == c.refuse {
			resp.Rejected = append(resp.Rejected, cellapi.Rejection{Key: w.Key, Reason: model.PlacementErrorInsufficientResources})
			continue
		}
		reports = append(reports, db.InstanceReport{Key: w.Key,
			InstanceKey: model.ActualLRPInstanceKey{InstanceGUID: fmt.Sprintf("%s-%d", w.Key.ProcessGUID, w.Key.Index), CellID: repURL}})
	}
	res, err := c.store.ClaimActualLRPs(ctx, reports)
	if err != nil {
		return nil, err
	}
	for i, r := range res {
		if r.Err != nil {
			resp.Rejected = append(resp.Rejected, cellapi.Rejection{Key: reports[i].Key, Reason: "claim failed: " + r.Err.Error()})
		}
	}
	c.mu.Lock()
	c.got += len(work.LRPs)
	c.mu.Unlock()
	return resp, nil
}

// TestUsageKeptFromHandOutsMatchesFullRecompute: between full reads, placement keeps what
// each cell holds from what it hands out and what comes back; after rounds that place and
// have work refused, it equals the store's full aggregate.
func TestUsageKeptFromHandOutsMatchesFullRecompute(t *testing.T) {
	s := dbtest.NewStore(t)
	for i := 1; i <= 3; i++ {
		// The rep address is the cell id, so that the fake cells claim under the right cell.
		if _, err := s.DB().Exec(`INSERT INTO cells (cell_id, zone, rep_address, memory_mb, disk_mb, containers, expires_at)
VALUES ($1, 'z1', $1, 100000, 100000, 1000, now() + interval '1 hour')`, fmt.Sprintf("cell-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	cells := &claimingCells{store: s, refuse: "full"}
	a := auctioneer.New(s, s.Notifications(), cells, auctioneer.Options{Resync: time.Hour}, zap.NewNop())
	desireN(t, s, "before", 4) // placed by the round that reads the sums in full
	if err := a.Round(ctx); err != nil {
		t.Fatal(err)
	}
	desireN(t, s, "after", 7) // placed from the kept sums alone
	desireN(t, s, "full", 3)  // refused by every cell: taken back
	desireN(t, s, "more", 5)
	if err := a.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if cells.got != 4+7+3+5 {
		t.Fatalf("handed out %d instances, want %d", cells.got, 4+7+3+5)
	}
	want, err := s.CellUsages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]db.CellUsage{}
	for id, u := range a.Usage() {
		if u != (db.CellUsage{}) {
			got[id] = u
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("kept usage %+v, full recompute %+v", got, want)
	}
	var placed int
	for _, u := range want {
		placed += u.Containers
	}
	if placed != 4+7+5 {
		t.Fatalf("%d instances claimed, want %d", placed, 4+7+5)
	}
}

func desireN(t *testing.T, s *db.Store, guid string, n int32) {
	t.Helper()
	_, err := s.DesireLRP(context.Background(), &model.DesiredLRP{
		ProcessGUID: guid, Domain: "cf-apps", Instances: n,
		LRPDefinition: model.LRPDefinition{
			RootFS: "docker:///busybox", MemoryMB: 64, DiskMB: 32,
			Action: &model.Action{Run: &model.RunAction{Path: "/bin/true"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestKeptUsageIsReadAfreshBeforeWorkIsFoundNotToFit: capacity freed since the last full
// read (an instance gone) is not seen in the kept sums; work that does not fit on them is
// auctioned again on sums read afresh before it is recorded as not fitting.
func TestKeptUsageIsReadAfreshBeforeWorkIsFoundNotToFit(t *testing.T) {
	s := dbtest.NewStore(t)
	// Room for two 64 MB instances.
	if _, err := s.DB().Exec(`INSERT INTO cells (cell_id, zone, rep_address, memory_mb, disk_mb, containers, expires_at)
VALUES ('cell-1', 'z1', 'cell-1', 128, 100000, 1000, now() + interval '1 hour')`); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cells := &claimingCells{store: s}
	a := auctioneer.New(s, s.Notifications(), cells, auctioneer.Options{Resync: time.Hour}, zap.NewNop())
	desireN(t, s, "first", 2)
	if err := a.Round(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.DB().Exec(`DELETE FROM actual_lrps WHERE process_guid = 'first'`); err != nil {
		t.Fatal(err)
	}
	desireN(t, s, "second", 2)
	if err := a.Round(ctx); err != nil {
		t.Fatal(err)
	}
	var unplaced []string
	if err := s.DB().Select(&unplaced, `SELECT placement_error FROM actual_lrps WHERE process_guid = 'second' AND state <> 'CLAIMED'`); err != nil {
		t.Fatal(err)
	}
	if len(unplaced) > 0 {
		t.Fatalf("second's instances not placed on the freed cell: %q", unplaced)
	}
}
