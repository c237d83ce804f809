package db_test

import (
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

// A cell reports a RUNNING instance whose readiness checks do not pass yet: it is RUNNING but
// not routable; its becoming ready, and unready again, are changes of their own (with their
// events, which routers and tps-watcher follow); leaving RUNNING clears it.
func TestReadinessDecidesRoutable(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 2))
	routable := func(what string, a *model.ActualLRP, err error, want bool) {
		t.Helper()
		if err != nil || a.State != model.StateRunning || a.Routable() != want {
			t.Fatalf("%s: %+v (%v), want RUNNING with routable %v", what, a, err, want)
		}
	}
	changes := func() int { return events(t, s, model.EventActualLRPChanged) }

	a, err := s.StartReported(ctx, db.InstanceReport{Key: key("app", 0), InstanceKey: cellA, NetInfo: net, NotReady: true}, nil)
	routable("started, not ready", a, err, false)
	n := changes()
	a, err = s.StartReported(ctx, db.InstanceReport{Key: key("app", 0), InstanceKey: cellA, NetInfo: net, NotReady: true}, nil)
	routable("reported again, still not ready", a, err, false)
	if changes() != n {
		t.Fatal("a report that changes nothing wrote an event")
	}
	a, err = s.StartActualLRP(ctx, key("app", 0), cellA, net, nil)
	routable("ready", a, err, true)
	if changes() != n+1 {
		t.Fatal("becoming ready wrote no changed event")
	}
	res, err := s.StartActualLRPs(ctx, []db.InstanceReport{{Key: key("app", 0), InstanceKey: cellA, NetInfo: net, NotReady: true}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("batch: %v %+v", err, res)
	}
	routable("unready again, in a batch", res[0].ActualLRP, nil, false)
	a, err = s.CrashActualLRP(ctx, key("app", 0), cellA, "boom", nil)
	if err != nil || a.NotReady {
		t.Fatalf("crashed: %+v (%v), want not_ready cleared", a, err)
	}

	unknown := model.ActualLRPKey{ProcessGUID: "app", Index: 1, Domain: "cf-apps"}
	a, err = s.StartReported(ctx, db.InstanceReport{Key: unknown, InstanceKey: cellB, NetInfo: net, NotReady: true}, nil)
	routable("an instance the store did not know, not ready", a, err, false)
}
