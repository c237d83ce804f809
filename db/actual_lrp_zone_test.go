package db_test

import (
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

func upsertCell(t *testing.T, s *db.Store, id, zone string) {
	t.Helper()
	if err := s.UpsertCell(ctx, model.CellPresence{CellID: id, Zone: zone, RepAddress: "http://" + id}, time.Minute); err != nil {
		t.Fatal(err)
	}
}

// An instance carries its cell's zone from the claim (or the start that finds no record) until
// it leaves the cell, whichever write moves it: single, batched, evacuating. A zone recorded on
// the instance stays while it keeps its cell, even if the cell's presence changes.
func TestInstancesRecordTheirCellsZone(t *testing.T) {
	s := dbtest.NewStore(t)
	upsertCell(t, s, "cell-a", "z1")
	upsertCell(t, s, "cell-b", "z2")
	desire(t, s, newLRP("app", 3))
	zone := func(what string, a *model.ActualLRP, err error, want string) {
		t.Helper()
		if err != nil || a.AvailabilityZone != want {
			t.Fatalf("%s: zone %q (%v), want %q", what, a.AvailabilityZone, err, want)
		}
		stored, lerr := s.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: a.ProcessGUID, Index: &a.Index})
		if lerr != nil || len(stored) == 0 || stored[0].AvailabilityZone != want {
			t.Fatalf("%s: stored %+v (%v), want zone %q", what, stored, lerr, want)
		}
	}

	a, err := s.ClaimActualLRP(ctx, key("app", 0), cellA, nil)
	zone("claim", a, err, "z1")
	upsertCell(t, s, "cell-a", "z9") // the cell moved: what the instance recorded stays
	pref := net
	pref.PreferredAddress = model.PreferredAddressInstance
	a, err = s.StartActualLRP(ctx, key("app", 0), cellA, pref, nil)
	zone("start", a, err, "z1")
	if a.PreferredAddress != model.PreferredAddressInstance {
		t.Fatalf("preferred address = %q, want INSTANCE", a.PreferredAddress)
	}
	a, err = s.CrashActualLRP(ctx, key("app", 0), cellA, "boom", nil)
	zone("crash", a, err, "")
	if a.PreferredAddress != "" {
		t.Fatalf("preferred address after a crash = %q, want none", a.PreferredAddress)
	}

	res, err := s.StartActualLRPs(ctx, []db.InstanceReport{{Key: key("app", 1), InstanceKey: cellB, NetInfo: net}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("batch start: %v %+v", err, res)
	}
	zone("batch start", res[0].ActualLRP, nil, "z2")

	k := model.ActualLRPKey{ProcessGUID: "lost", Index: 0, Domain: "cf-apps"}
	a, err = s.StartActualLRP(ctx, k, cellB, net, nil)
	zone("start of an unknown instance", a, err, "z2")

	a, err = s.ClaimActualLRP(ctx, key("app", 2), cellA, nil)
	zone("claim of a moved cell", a, err, "z9")
	a, err = s.UnclaimActualLRP(ctx, key("app", 2), cellA)
	zone("unclaim", a, err, "")

	// The EVACUATING copy takes the zone of the cell that reports it.
	if _, err := s.EvacuateRunningActualLRP(ctx, key("app", 1), cellB, net); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE presence = 'EVACUATING' AND availability_zone = 'z2'`); n != 1 {
		t.Fatalf("evacuating copies in z2 = %d, want 1", n)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE cell_id = '' AND availability_zone <> ''`); n != 0 {
		t.Fatalf("%d instances without a cell keep a zone", n)
	}
}
