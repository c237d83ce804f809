package db_test

import (
	"encoding/json"
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

func key(guid string, index int32) model.ActualLRPKey {
	return model.ActualLRPKey{ProcessGUID: guid, DefinitionID: guid, Index: index, Domain: "cf-apps"}
}

var (
	cellA = model.ActualLRPInstanceKey{InstanceGUID: "ig-a", CellID: "cell-a"}
	cellB = model.ActualLRPInstanceKey{InstanceGUID: "ig-b", CellID: "cell-b"}
	net   = model.ActualLRPNetInfo{Address: "127.0.0.1", Ports: []model.PortMapping{{ContainerPort: 8080, HostPort: 61001}}}
)

func events(t *testing.T, s *db.Store, name string) int {
	t.Helper()
	return count(t, s, `SELECT count(*) FROM events WHERE name = $1`, name)
}

func TestClaimAndStart(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 2))

	a, err := s.ClaimActualLRP(ctx, key("app", 0), cellA, nil)
	if err != nil || a.State != model.StateClaimed || a.CellID != "cell-a" || a.ModificationTag.Index != 1 {
		t.Fatalf("claim = %+v, %v", a, err)
	}
	again, err := s.ClaimActualLRP(ctx, key("app", 0), cellA, nil)
	if err != nil || again.ModificationTag != a.ModificationTag {
		t.Fatalf("a repeated claim by the same cell must change nothing: %+v, %v", again, err)
	}
	_, err = s.ClaimActualLRP(ctx, key("app", 0), cellB, nil)
	wantType(t, err, model.ErrCannotBeClaimed)
	_, err = s.StartActualLRP(ctx, key("app", 0), cellA, net, &model.ModificationTag{Epoch: a.ModificationTag.Epoch, Index: 0})
	wantType(t, err, model.ErrResourceConflict)

	r, err := s.StartActualLRP(ctx, key("app", 0), cellA, net, &a.ModificationTag)
	if err != nil || r.State != model.StateRunning || r.Address != "127.0.0.1" || r.Ports[0].HostPort != 61001 {
		t.Fatalf("start = %+v, %v", r, err)
	}
	// The first RUNNING instance of the active definition makes it healthy (seed 000).
	dep, _ := s.LRPDeploymentByProcessGUID(ctx, "app")
	if dep.HealthyDefinitionID != "app" {
		t.Fatalf("healthy definition = %q, want app", dep.HealthyDefinitionID)
	}
	// Another cell cannot take over a running instance by starting it under its own key.
	_, err = s.StartActualLRP(ctx, key("app", 0), cellB, net, nil)
	if err != nil {
		// BBS lets RUNNING → RUNNING only with the same key; a second cell is refused...
		wantType(t, err, model.ErrCannotBeStarted)
	} else {
		t.Fatal("a second cell started an instance running elsewhere")
	}
	// ...but an UNCLAIMED instance may be started directly (the cell already runs it).
	if _, err := s.StartActualLRP(ctx, key("app", 1), cellB, net, nil); err != nil {
		t.Fatal(err)
	}
	if n := events(t, s, model.EventActualLRPChanged); n != 3 {
		t.Fatalf("changed events = %d, want 3 (claim, start, start)", n)
	}
}

func TestStartRecordsAnInstanceTheStoreDoesNotKnow(t *testing.T) {
	s := dbtest.NewStore(t)
	k := model.ActualLRPKey{ProcessGUID: "lost", Index: 3, Domain: "cf-apps"}
	a, err := s.StartActualLRP(ctx, k, cellA, net, nil)
	if err != nil || a.State != model.StateRunning || a.DefinitionID != "lost" {
		t.Fatalf("start of an unknown instance = %+v, %v", a, err)
	}
	k.Domain = ""
	k.Index = 4
	_, err = s.StartActualLRP(ctx, k, cellA, net, nil)
	wantType(t, err, model.ErrInvalidRequest)
}

func TestCrashDance(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 1))
	k := key("app", 0)
	for i := int32(1); i <= 4; i++ {
		if _, err := s.StartActualLRP(ctx, k, cellA, net, nil); err != nil {
			t.Fatalf("start %d: %v", i, err)
		}
		a, err := s.CrashActualLRP(ctx, k, cellA, "exit status 1", nil)
		if err != nil {
			t.Fatalf("crash %d: %v", i, err)
		}
		want := model.StateUnclaimed
		if i == 4 {
			want = model.StateCrashed
		}
		if a.CrashCount != i || a.State != want || a.CrashReason != "exit status 1" || a.CellID != "" || a.Address != "" {
			t.Fatalf("after crash %d: %+v, want %s", i, a, want)
		}
		if i == 4 {
			break
		}
	}
	if n := events(t, s, model.EventActualLRPCrashed); n != 4 {
		t.Fatalf("crashed events = %d, want 4", n)
	}
	// A crash report names the incarnation that crashed, which the crash takes off its cell.
	c := lastCrash(t, s)
	if c.State != model.StateCrashed || c.CrashCount != 4 || c.CellID != "" ||
		c.Before.ActualLRPInstanceKey != cellA || c.Before.State != model.StateRunning {
		t.Fatalf("crash event = %+v", c)
	}
	_, err := s.CrashActualLRP(ctx, k, cellA, "again", nil)
	wantType(t, err, model.ErrCannotBeCrashed)
}

func TestCrashOfAnInstanceNoLongerDesiredRemovesIt(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 2))
	if _, err := s.StartActualLRP(ctx, key("app", 1), cellA, net, nil); err != nil {
		t.Fatal(err)
	}
	one := int32(1)
	if _, err := s.UpdateDesiredLRP(ctx, "app", &model.DesiredLRPUpdate{Instances: &one}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CrashActualLRP(ctx, key("app", 1), cellA, "stopped", nil); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE instance_index = 1`); n != 0 {
		t.Fatal("the crashed instance beyond the count was kept")
	}
	if c := lastCrash(t, s); c.Before.ActualLRPInstanceKey != cellA || c.CrashReason != "stopped" || c.CrashCount != 1 {
		t.Fatalf("crash event = %+v", c)
	}
}

// lastCrash is the data of the newest crash event.
func lastCrash(t *testing.T, s *db.Store) model.Crash {
	t.Helper()
	var data []byte
	if err := s.DB().GetContext(ctx, &data, `SELECT data FROM events WHERE name = $1 ORDER BY id DESC LIMIT 1`,
		model.EventActualLRPCrashed); err != nil {
		t.Fatal(err)
	}
	var c model.Crash
	if err := json.Unmarshal(data, &c); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFailAndRemove(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 2))
	a, err := s.FailActualLRP(ctx, key("app", 0), model.PlacementErrorInsufficientResources, nil)
	if err != nil || a.PlacementError != model.PlacementErrorInsufficientResources || a.State != model.StateUnclaimed {
		t.Fatalf("fail = %+v, %v", a, err)
	}
	if _, err := s.ClaimActualLRP(ctx, key("app", 0), cellA, nil); err != nil {
		t.Fatal(err)
	}
	if a, _ := s.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: "app", Index: new(int32)}); a[0].PlacementError != "" {
		t.Fatal("a claim must clear the placement error")
	}
	_, err = s.FailActualLRP(ctx, key("app", 0), "no", nil)
	wantType(t, err, model.ErrCannotBeFailed)

	err = s.RemoveActualLRP(ctx, key("app", 0), model.PresenceOrdinary, &cellB, nil)
	wantType(t, err, model.ErrCannotBeRemoved)
	if err := s.RemoveActualLRP(ctx, key("app", 0), model.PresenceOrdinary, &cellA, nil); err != nil {
		t.Fatal(err)
	}
	err = s.RemoveActualLRP(ctx, key("app", 0), model.PresenceOrdinary, nil, nil)
	wantType(t, err, model.ErrResourceNotFound)
	if n := events(t, s, model.EventActualLRPRemoved); n != 1 {
		t.Fatalf("removed events = %d", n)
	}
}
