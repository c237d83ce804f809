package db_test

import (
	"reflect"
	"testing"

	"github.com/updatable-lrps/bbs/db"
	"github.com/updatable-lrps/bbs/internal/dbtest"
)

// seedFleet stores a fleet whose every count differs from the others, so that a count read
// from the wrong column shows.
func seedFleet(t *testing.T, s *db.Store) {
	t.Helper()
	desire(t, s, newLRP("a", 3))
	desire(t, s, newLRP("b", 2))
	desire(t, s, newLRP("c", 1))
	putCell(t, s, "cell-1", true)
	putCell(t, s, "cell-2", false)
	putCell(t, s, "cell-3", true)
	putDomain(t, s, "cf-apps", true)
	putDomain(t, s, "cf-tasks", false)
	placeOn(t, s, "a", 0, "RUNNING", "cell-1")
	placeOn(t, s, "a", 1, "CLAIMED", "cell-1")
	exec(t, s, `UPDATE actual_lrps SET state = 'CRASHED', crash_count = 1 WHERE process_guid = 'b'`)
	placeOn(t, s, "c", 0, "RUNNING", "cell-2")
	exec(t, s, `UPDATE actual_lrps SET presence = 'SUSPECT' WHERE process_guid = 'c'`)
	for _, task := range []struct{ guid, state, cell, callback string }{
		{"p1", "PENDING", "", ""}, {"p2", "PENDING", "", ""}, {"p3", "PENDING", "", "http://cc/p3"},
		{"r1", "RUNNING", "cell-1", "http://cc/r1"},
		{"c1", "COMPLETED", "", "http://cc/c1"}, {"c2", "COMPLETED", "", ""},
		{"x1", "RESOLVING", "", "http://cc/x1"},
	} {
		exec(t, s, `INSERT INTO tasks (task_guid, domain, state, cell_id, definition, memory_mb, disk_mb, callback_url, created_at, updated_at)
VALUES ($1, 'cf-tasks', $2, $3, '{}', 1, 1, $4, 1, 1)`, task.guid, task.state, task.cell, task.callback)
	}
	for _, r := range []struct{ guid, state string }{{"a", "active"}, {"b", "paused"}, {"a", "completed"}, {"b", "completed"}, {"c", "canceled"}} {
		exec(t, s, `INSERT INTO rollouts (id, process_guid, kind, from_definition_id, to_definition_id, state, instances, workflow_id)
VALUES (gen_random_uuid(), $1, 'update', $1, 'v2', $2, 1, 'rollout:'||$1)`, r.guid, r.state)
	}
}

func TestFleetCountsEachKind(t *testing.T) {
	s := dbtest.NewStore(t)
	seedFleet(t, s)
	got, err := s.Fleet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := &db.Fleet{
		LRPsDesired:   6,
		LRPsUnclaimed: 1, LRPsClaimed: 1, LRPsRunning: 1, LRPsCrashed: 2, CrashingDesiredLRPs: 1,
		SuspectRunning: 1,
		PresentCells:   2,
		TasksPending:   3, TasksRunning: 1, TasksCompleted: 2, TasksResolving: 1,
		CallbacksPending:   2,
		RolloutsInProgress: map[string]int{"active": 1, "paused": 1, "canceling": 0},
		Domains:            map[string]bool{"cf-apps": true, "cf-tasks": false},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Fleet:\n got %+v\nwant %+v", got, want)
	}
}

func TestFleetOfAnEmptyStore(t *testing.T) {
	got, err := dbtest.NewStore(t).Fleet(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := &db.Fleet{RolloutsInProgress: map[string]int{"active": 0, "paused": 0, "canceling": 0}, Domains: map[string]bool{}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Fleet of an empty store: %+v", got)
	}
}
