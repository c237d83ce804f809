package db_test

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

// tableCounts are the rows of the tables a desire writes.
func tableCounts(t *testing.T, s *db.Store) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"desired_lrps", "lrp_definitions", "actual_lrps", "events"} {
		out[table] = count(t, s, `SELECT count(*) FROM `+table)
	}
	return out
}

// wantEvents checks that the events after `after` are want's names, each with the JSON of
// its value byte for byte: what the event stream sends.
func wantEvents(t *testing.T, s *db.Store, after int64, want []model.Event) {
	t.Helper()
	got, err := s.EventsAfter(ctx, after, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].Name != want[i].Name || string(got[i].Data) != string(want[i].Data) {
			t.Errorf("event %d = %s %s\nwant %s %s", i, got[i].Name, got[i].Data, want[i].Name, want[i].Data)
		}
	}
}

func jsonEvent(t *testing.T, name string, v any) model.Event {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return model.Event{Name: name, Data: b}
}

// instancesOf lists an LRP's instances of one definition, by index.
func instancesOf(t *testing.T, s *db.Store, guid, def string) []model.ActualLRP {
	t.Helper()
	lrps, err := s.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: guid, DefinitionID: def})
	if err != nil {
		t.Fatal(err)
	}
	return lrps
}

// A desire writes the LRP, its definition, an UNCLAIMED instance per index, and in this
// order the LRP's created event and one per instance, each the JSON of what a read returns
// (the event stream's consumers compare them with their lists). It wakes placement and the
// waiters on the LRP. Desiring the guid again changes nothing.
func TestDesireLRPWritesItsRowsAndEvents(t *testing.T) {
	s, _ := notifyStore(t)
	subCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	n := s.Notifications()
	placement := n.Subscribe(subCtx, db.PlacementChannel)
	changes := n.SubscribeKey(subCtx, db.LRPChangesChannel, "app")
	listen(t, n, db.PlacementChannel, db.LRPChangesChannel)
	in := newLRP("app", 3)
	in.MetricTags = map[string]json.RawMessage{"source_id": []byte(`{"static":"x"}`)}
	in.Protobuf = []byte{0x0a, 0x01, 0x78}

	before := tableCounts(t, s)
	created := desire(t, s, in)
	woken(t, "placement", placement)
	woken(t, "the LRP's waiters", changes)
	after := tableCounts(t, s)
	for table, added := range map[string]int{"desired_lrps": 1, "lrp_definitions": 1, "actual_lrps": 3, "events": 4} {
		if after[table]-before[table] != added {
			t.Errorf("%s: %d rows added, want %d", table, after[table]-before[table], added)
		}
	}
	got, err := s.DesiredLRPByProcessGUID(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	if g, w := jsonValue(t, got), jsonValue(t, created); !reflect.DeepEqual(g, w) {
		t.Fatalf("stored LRP differs from the one returned:\n got %v\nwant %v", g, w)
	}
	instances := instancesOf(t, s, "app", "app")
	want := []model.Event{jsonEvent(t, model.EventDesiredLRPCreated, model.NewDesiredLRPEvent(created))}
	for i, a := range instances {
		if a.Index != int32(i) || a.State != model.StateUnclaimed || a.Since != instances[0].Since || a.Since == 0 ||
			a.ModificationTag.Epoch == "" || a.ModificationTag.Epoch == created.ModificationTag.Epoch {
			t.Errorf("instance %d = %+v", i, a)
		}
		want = append(want, jsonEvent(t, model.EventActualLRPCreated, a))
	}
	wantEvents(t, s, 0, want)

	last, err := s.LastEventID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.DesireLRP(ctx, newLRP("app", 5))
	wantType(t, err, model.ErrResourceExists)
	if err.Error() != `ResourceExists: desired LRP "app" already exists` {
		t.Errorf("error = %q", err)
	}
	other := newLRP("app", 5)
	other.DefinitionID = "app-v2"
	_, err = s.DesireLRP(ctx, other)
	wantType(t, err, model.ErrResourceExists)
	if again := tableCounts(t, s); !reflect.DeepEqual(again, after) {
		t.Errorf("rows after desiring an existing guid: %v, want %v", again, after)
	}
	wantEvents(t, s, last, nil)
}

// A desired-again LRP meets the instances of its removed predecessor, which outlive it until
// their cells stop them: an index held by one still serving (of any definition), or by a
// retiring one of the same definition, gets no instance and no event; the others do.
func TestDesireLRPBesideLeftoverInstances(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 2))
	makeRunning(t, s, "app", "app", 0)
	makeRunning(t, s, "app", "app", 1)
	if _, err := s.RemoveDesiredLRP(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	// One the store lost track of, still serving at index 2 (a cell reported it).
	exec(t, s, `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state, since, modification_epoch,
    cell_id, instance_guid) VALUES ('app', 'old', 2, 'cf-apps', 'RUNNING', 1, 'e', 'cell-1', 'ig')`)
	last, err := s.LastEventID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	created := desire(t, s, newLRP("app", 4))
	fresh := []model.ActualLRP{}
	for _, a := range instancesOf(t, s, "app", "app") {
		if !a.Retiring {
			fresh = append(fresh, a)
		}
	}
	if len(fresh) != 1 || fresh[0].Index != 3 || fresh[0].State != model.StateUnclaimed {
		t.Fatalf("new instances = %+v, want index 3 alone", fresh)
	}
	wantEvents(t, s, last, []model.Event{
		jsonEvent(t, model.EventDesiredLRPCreated, model.NewDesiredLRPEvent(created)),
		jsonEvent(t, model.EventActualLRPCreated, fresh[0]),
	})
}

// Of concurrent desires of one guid, one is written with its rows and events; the others are
// told the LRP exists and write nothing.
func TestConcurrentDesiresOfOneGUID(t *testing.T) {
	s := dbtest.NewStore(t)
	const desirers = 8
	errs := make(chan error, desirers)
	for range desirers {
		go func() {
			_, err := s.DesireLRP(ctx, newLRP("app", 4))
			errs <- err
		}()
	}
	won := 0
	for range desirers {
		if err := <-errs; err == nil {
			won++
		} else {
			wantType(t, err, model.ErrResourceExists)
		}
	}
	want := map[string]int{"desired_lrps": 1, "lrp_definitions": 1, "actual_lrps": 4, "events": 5}
	if got := tableCounts(t, s); won != 1 || !reflect.DeepEqual(got, want) {
		t.Fatalf("%d desires succeeded, rows %v; want 1 and %v", won, got, want)
	}
}
