package db_test

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

// addEvents appends n events committed age ago (as far as pruning can tell) and returns
// their ids.
func addEvents(t *testing.T, s *db.Store, n int, age time.Duration) []int64 {
	t.Helper()
	var ids []int64
	if err := s.DB().SelectContext(ctx, &ids, `INSERT INTO events (name, data, created_at)
SELECT 'desired_lrp_changed', '{}', now() - make_interval(secs => $2) FROM generate_series(1, $1)
RETURNING id`, n, age.Seconds()); err != nil {
		t.Fatal(err)
	}
	return ids
}

// eventIDs lists the stored events after an id, marker included, as EventsAfter gives them.
func eventIDs(t *testing.T, s *db.Store, after int64) []model.Event {
	t.Helper()
	evs, err := s.EventsAfter(ctx, after, 1_000_000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func prune(t *testing.T, s *db.Store, retention time.Duration, keep int) int {
	t.Helper()
	n, err := s.PruneEvents(ctx, retention, keep)
	if err != nil {
		t.Fatalf("PruneEvents: %v", err)
	}
	return n
}

// wantPruned checks that the log is the marker standing for pruned, then the events of kept.
func wantPruned(t *testing.T, s *db.Store, pruned int64, kept []int64) {
	t.Helper()
	evs := eventIDs(t, s, 0)
	if len(evs) != len(kept)+1 {
		t.Fatalf("%d rows left, want the marker and %d events", len(evs), len(kept))
	}
	if evs[0].Name != db.EventsPruned || evs[0].ID != pruned {
		t.Fatalf("oldest row = %d %s, want the marker at %d (the newest event pruned)", evs[0].ID, evs[0].Name, pruned)
	}
	for i, id := range kept {
		if evs[i+1].ID != id || evs[i+1].Name == db.EventsPruned {
			t.Fatalf("row %d = %d %s, want event %d", i+1, evs[i+1].ID, evs[i+1].Name, id)
		}
	}
}

func TestPruneEvents(t *testing.T) {
	t.Run("by age", func(t *testing.T) {
		s := dbtest.NewStore(t)
		old := addEvents(t, s, 10, 2*time.Hour)
		recent := addEvents(t, s, 5, 10*time.Minute)
		fresh := addEvents(t, s, 5, 0)
		if n := prune(t, s, time.Hour, 1000); n != 10 {
			t.Fatalf("pruned %d, want the 10 older than an hour", n)
		}
		wantPruned(t, s, old[9], append(recent, fresh...))
		if n := prune(t, s, time.Hour, 1000); n != 0 {
			t.Fatalf("a second pass pruned %d, want 0", n)
		}
		wantPruned(t, s, old[9], append(recent, fresh...))
		if n := prune(t, s, 5*time.Minute, 1000); n != 5 {
			t.Fatalf("pruned %d with a retention of 5 min, want 5", n)
		}
		wantPruned(t, s, recent[4], fresh)
	})
	t.Run("by count", func(t *testing.T) {
		s := dbtest.NewStore(t)
		ids := addEvents(t, s, 20, 0)
		if n := prune(t, s, time.Hour, 5); n != 15 {
			t.Fatalf("pruned %d keeping 5 of 20, want 15", n)
		}
		wantPruned(t, s, ids[14], ids[15:])
		// The marker is not an event: five are still kept.
		if n := prune(t, s, time.Hour, 5); n != 0 {
			t.Fatalf("a second pass pruned %d, want 0", n)
		}
		more := addEvents(t, s, 3, 0)
		if n := prune(t, s, time.Hour, 5); n != 3 {
			t.Fatalf("pruned %d after 3 more, want 3", n)
		}
		wantPruned(t, s, ids[17], append(ids[18:], more...))
	})
	t.Run("by age and count, whichever prunes more", func(t *testing.T) {
		s := dbtest.NewStore(t)
		old := addEvents(t, s, 5, 2*time.Hour)
		fresh := addEvents(t, s, 10, 0)
		if n := prune(t, s, time.Hour, 12); n != 5 {
			t.Fatalf("pruned %d, want the 5 old ones (12 would be kept by count)", n)
		}
		wantPruned(t, s, old[4], fresh)
		if n := prune(t, s, time.Hour, 3); n != 7 {
			t.Fatalf("pruned %d keeping 3, want 7", n)
		}
		wantPruned(t, s, fresh[6], fresh[7:])
	})
	t.Run("everything, when all is old", func(t *testing.T) {
		s := dbtest.NewStore(t)
		ids := addEvents(t, s, 4, 2*time.Hour)
		if n := prune(t, s, time.Hour, 1000); n != 4 {
			t.Fatalf("pruned %d, want all 4", n)
		}
		wantPruned(t, s, ids[3], nil)
		// The stream goes on from the marker: the next event follows it.
		last, err := s.LastEventID(ctx)
		if err != nil || last != ids[3] {
			t.Fatalf("LastEventID = %d, %v, want the marker's %d", last, err, ids[3])
		}
	})
	t.Run("a long log over several passes", func(t *testing.T) {
		s := dbtest.NewStore(t)
		// More than one pass deletes (100,000), as a log that grew unpruned for long is.
		ids := addEvents(t, s, 100_010, 2*time.Hour)
		if n := prune(t, s, time.Hour, 1000); n != 100_000 {
			t.Fatalf("the first pass pruned %d, want 100,000", n)
		}
		if n := prune(t, s, time.Hour, 1000); n != 10 {
			t.Fatalf("the second pass pruned %d, want the last 10", n)
		}
		wantPruned(t, s, ids[len(ids)-1], nil)
	})
	t.Run("negative bounds", func(t *testing.T) {
		s := dbtest.NewStore(t)
		if _, err := s.PruneEvents(ctx, -time.Second, 10); model.TypeOf(err) != model.ErrInvalidRequest {
			t.Fatalf("a negative retention = %v, want InvalidRequest", err)
		}
		if _, err := s.PruneEvents(ctx, time.Hour, -1); model.TypeOf(err) != model.ErrInvalidRequest {
			t.Fatalf("a negative count = %v, want InvalidRequest", err)
		}
	})
}

// A reader learns from the marker that events it had not read were pruned, and only then:
// one that read past the pruned events sees the log go on as if nothing happened.
func TestEventsAfterPruning(t *testing.T) {
	s := dbtest.NewStore(t)
	ids := addEvents(t, s, 10, 0)
	prune(t, s, time.Hour, 4) // ids[0..5] go, ids[5] becomes the marker
	behind := eventIDs(t, s, ids[2])
	if len(behind) == 0 || behind[0].Name != db.EventsPruned || behind[0].ID != ids[5] {
		t.Fatalf("a reader at %d gets %v first, want the marker at %d", ids[2], behind, ids[5])
	}
	if len(behind) != 5 || behind[1].ID != ids[6] {
		t.Fatalf("a reader at %d gets %d rows, want the marker and the 4 kept", ids[2], len(behind))
	}
	for _, at := range []int64{ids[5], ids[7]} {
		for _, e := range eventIDs(t, s, at) {
			if e.Name == db.EventsPruned {
				t.Fatalf("a reader at %d, who missed nothing, got the marker", at)
			}
		}
	}
}

// Convergence prunes the log, with the store's defaults unless told otherwise.
func TestConvergePrunesEvents(t *testing.T) {
	s := dbtest.NewStore(t)
	addEvents(t, s, 3, 2*time.Hour)
	addEvents(t, s, 8, 0)
	if res := converge(t, s, db.ConvergeOptions{}); res.EventsPruned != 3 {
		t.Fatalf("a default pass pruned %d events, want the 3 older than %v", res.EventsPruned, db.DefaultEventRetention)
	}
	if res := converge(t, s, db.ConvergeOptions{EventsKept: 5}); res.EventsPruned != 3 {
		t.Fatalf("a pass keeping 5 pruned %d, want 3", res.EventsPruned)
	}
	if res := converge(t, s, db.ConvergeOptions{EventRetention: time.Nanosecond}); res.EventsPruned != 5 {
		t.Fatalf("a pass keeping nothing older than 1 ns pruned %d, want 5", res.EventsPruned)
	}
	for _, opts := range []db.ConvergeOptions{{EventRetention: -time.Second}, {EventsKept: -1}} {
		if _, err := s.Converge(ctx, opts); model.TypeOf(err) != model.ErrInvalidRequest {
			t.Fatalf("Converge(%+v) = %v, want InvalidRequest", opts, err)
		}
	}
}

// TestEventsAreWrittenAsEncodingJSONWritesThem: a batch of events is stored in order, each
// event's data byte for byte what encoding/json writes for it — instances and their changes
// (written without reflection) with every kind of character JSON escapes, and other data.
func TestEventsAreWrittenAsEncodingJSONWritesThem(t *testing.T) {
	s := dbtest.NewStore(t)
	tricky := `"\<>&` + "\n\t\x01\x1f\x7f é 日本 \u2028\u2029 \xff 😀 '/"
	a := model.ActualLRP{
		ActualLRPKey:         model.ActualLRPKey{ProcessGUID: "p" + tricky, DefinitionID: "d", Index: 3, Domain: "cf-apps"},
		ActualLRPInstanceKey: model.ActualLRPInstanceKey{InstanceGUID: "ig", CellID: "cell-1"},
		ActualLRPNetInfo: model.ActualLRPNetInfo{Address: "10.0.0.1", Ports: []model.PortMapping{{ContainerPort: 8080, HostPort: 61001}},
			PreferredAddress: model.PreferredAddressHost},
		State: model.StateRunning, Since: 7, CrashReason: tricky, Presence: model.PresenceOrdinary,
		ModificationTag: model.ModificationTag{Epoch: "e", Index: 2}, InternalRoutes: []string{"a.apps.internal"},
		MetricTags: map[string]string{"source_id": tricky},
	}
	b := a
	b.State, b.CrashCount = model.StateCrashed, 1
	names := []string{model.EventActualLRPCreated, model.EventActualLRPChanged, model.EventActualLRPCrashed, model.EventRolloutChanged}
	data := []any{a, model.Change[model.ActualLRP]{Before: a, After: b}, model.Crash{ActualLRP: b, Before: a},
		map[string]any{"guid": tricky, "index": 4}}
	if err := s.AppendEvents(ctx, names, data); err != nil {
		t.Fatal(err)
	}
	got, err := s.EventsAfter(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(names) {
		t.Fatalf("%d events stored, want %d", len(got), len(names))
	}
	for i, e := range got {
		want, err := json.Marshal(data[i])
		if err != nil {
			t.Fatal(err)
		}
		if e.Name != names[i] || string(e.Data) != string(want) {
			t.Errorf("event %d: %s %s\nwant %s %s", i, e.Name, e.Data, names[i], want)
		}
	}
	// An escaped NUL cannot be stored in the log (the notification trigger reads the data):
	// the batch is refused as a whole, nothing of it written.
	err = s.AppendEvents(ctx, []string{model.EventRolloutChanged, model.EventRolloutChanged},
		[]any{map[string]any{"guid": "fine"}, map[string]any{"guid": "nul\x00"}})
	wantType(t, err, model.ErrInvalidRequest)
	if n := count(t, s, `SELECT count(*) FROM events`); n != len(names) {
		t.Fatalf("%d events stored, want %d", n, len(names))
	}
}

// TestEventNoticesAreTheTriggers: what the store writes beside an instance's event for the
// notification trigger (its LRP, whether it makes work for placement) is what the trigger
// reads out of the event's data when it is left out (migration 0014), for every name and
// state that matters; other events leave both to the trigger.
func TestEventNoticesAreTheTriggers(t *testing.T) {
	s := dbtest.NewStore(t)
	var names []string
	var data []any
	add := func(name string, d any) { names, data = append(names, name), append(data, d) }
	for _, state := range []string{model.StateUnclaimed, model.StateClaimed, model.StateRunning, model.StateCrashed, ""} {
		for _, guid := range []string{"app", ""} {
			a := model.ActualLRP{ActualLRPKey: model.ActualLRPKey{ProcessGUID: guid, Index: 1, Domain: "d"}, State: state}
			other := a
			other.ProcessGUID, other.State = "before", model.StateRunning
			for _, name := range []string{model.EventActualLRPCreated, model.EventActualLRPChanged, model.EventActualLRPRemoved, model.EventActualLRPCrashed} {
				add(name, a)
				add(name, model.Change[model.ActualLRP]{Before: other, After: a})
				add(name, model.Change[model.ActualLRP]{Before: a, After: other})
				add(name, model.Crash{ActualLRP: a, Before: other})
			}
		}
	}
	add(model.EventTaskCreated, map[string]any{"task_guid": "t", "state": model.StateUnclaimed})
	add(model.EventRolloutChanged, map[string]any{"process_guid": "app"})
	if err := s.AppendEvents(ctx, names, data); err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		ID                      int64
		Name                    string
		GUID, FromData          *string
		Placement, PlacementDue *bool
	}
	if err := s.DB().SelectContext(ctx, &rows, `SELECT id, name AS name, process_guid AS guid,
    coalesce(data->>'process_guid', data->'after'->>'process_guid', data->'before'->>'process_guid') AS fromdata,
    placement,
    (name IN ('actual_lrp_instance_created', 'actual_lrp_instance_changed')
        AND coalesce(data->'after'->>'state', data->>'state') = 'UNCLAIMED')
        OR (name IN ('task_created', 'task_changed') AND coalesce(data->'after'->>'state', data->>'state') = 'PENDING') AS placementdue
FROM events ORDER BY id`); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(names) {
		t.Fatalf("%d events, want %d", len(rows), len(names))
	}
	str := func(p *string) string {
		if p == nil {
			return "NULL"
		}
		return strconv.Quote(*p)
	}
	written := 0
	for i, r := range rows {
		if _, other := data[i].(map[string]any); other {
			if r.GUID != nil || r.Placement != nil {
				t.Errorf("event %d (%s %v): wrote %s %v, want both left to the trigger", i, r.Name, data[i], str(r.GUID), r.Placement)
			}
			continue
		}
		written++
		if r.GUID == nil || r.Placement == nil || str(r.GUID) != str(r.FromData) || *r.Placement != *r.PlacementDue {
			t.Errorf("event %d (%s %+v): wrote %s %v, the trigger reads %s %v", i, r.Name, data[i], str(r.GUID), r.Placement,
				str(r.FromData), *r.PlacementDue)
		}
	}
	if written == 0 {
		t.Fatal("no event had its notice written")
	}
}
