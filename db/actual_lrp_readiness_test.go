package db_test

import (
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

// A cell reports a RUNNING instance whose readiness checks do not pass yet: it is RUNNING but
// not routable, and its definition is not proven healthy by it; its becoming ready, and unready again, are changes of their own (with their
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

	healthy := func() string {
		t.Helper()
		infos, err := s.DesiredLRPSchedulingInfos(ctx, model.DesiredLRPFilter{ProcessGUIDs: []string{"app"}})
		if err != nil || len(infos) != 1 {
			t.Fatal(infos, err)
		}
		return infos[0].HealthyDefinitionID
	}
	a, err := s.StartReported(ctx, db.InstanceReport{Key: key("app", 0), InstanceKey: cellA, NetInfo: net, NotReady: true}, nil)
	routable("started, not ready", a, err, false)
	if h := healthy(); h != "" {
		t.Fatalf("healthy definition %q while its only instance is not ready, want none yet", h)
	}
	n := changes()
	a, err = s.StartReported(ctx, db.InstanceReport{Key: key("app", 0), InstanceKey: cellA, NetInfo: net, NotReady: true}, nil)
	routable("reported again, still not ready", a, err, false)
	if changes() != n {
		t.Fatal("a report that changes nothing wrote an event")
	}
	a, err = s.StartActualLRP(ctx, key("app", 0), cellA, net, nil)
	routable("ready", a, err, true)
	if h := healthy(); h != "app" {
		t.Fatalf("healthy definition %q once its instance is ready, want app", h)
	}
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

// A draining cell keeps its EVACUATING instance while the replacement runs but is not ready
// (it alone takes the traffic), and lets it go once the replacement is ready.
func TestEvacuationWaitsForAReadyReplacement(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 1))
	if _, err := s.StartActualLRP(ctx, key("app", 0), cellA, net, nil); err != nil {
		t.Fatal(err)
	}
	evacuate := func(what string, want bool) {
		t.Helper()
		keep, err := s.EvacuateRunningActualLRP(ctx, key("app", 0), cellA, net)
		if err != nil || keep != want {
			t.Fatalf("%s: keep %v (%v), want %v", what, keep, err, want)
		}
	}
	evacuate("first report", true)
	if _, err := s.ClaimActualLRP(ctx, key("app", 0), cellB, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StartReported(ctx, db.InstanceReport{Key: key("app", 0), InstanceKey: cellB, NetInfo: net, NotReady: true}, nil); err != nil {
		t.Fatal(err)
	}
	evacuate("replacement running, not ready", true)
	if _, err := s.StartActualLRP(ctx, key("app", 0), cellB, net, nil); err != nil {
		t.Fatal(err)
	}
	evacuate("replacement ready", false)
}
