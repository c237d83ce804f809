package db_test

import (
	"testing"

	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

func TestActualLRPFilters(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("a", 3))
	b := newLRP("b", 2)
	b.Domain = "other"
	desire(t, s, b)
	makeRunning(t, s, "a", "a", 1)
	addDefinition(t, s, "a", "v2")
	exec(t, s, `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state, since, modification_epoch)
VALUES ('a', 'v2', 0, 'cf-apps', 'UNCLAIMED', 1, 'e')`)

	two := int32(2)
	zero := int32(0)
	cases := []struct {
		name   string
		filter model.ActualLRPFilter
		want   int
	}{
		{"all", model.ActualLRPFilter{}, 6},
		{"domain", model.ActualLRPFilter{Domain: "other"}, 2},
		{"cell", model.ActualLRPFilter{CellID: "cell-1"}, 1},
		{"process guid", model.ActualLRPFilter{ProcessGUID: "a"}, 4},
		{"index", model.ActualLRPFilter{ProcessGUID: "a", Index: &two}, 1},
		{"index 0 of two definitions", model.ActualLRPFilter{ProcessGUID: "a", Index: &zero}, 2},
		{"definition", model.ActualLRPFilter{ProcessGUID: "a", DefinitionID: "v2"}, 1},
		{"unknown guid", model.ActualLRPFilter{ProcessGUID: "zz"}, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lrps, err := s.ActualLRPs(ctx, c.filter)
			if err != nil {
				t.Fatal(err)
			}
			if len(lrps) != c.want {
				t.Fatalf("got %d instances, want %d: %+v", len(lrps), c.want, lrps)
			}
		})
	}
	running, _ := s.ActualLRPs(ctx, model.ActualLRPFilter{CellID: "cell-1"})
	r := running[0]
	if r.State != model.StateRunning || r.Address != "10.0.0.1" || len(r.Ports) != 1 || r.Ports[0].HostPort != 61000 || r.InstanceGUID != "ig-1" {
		t.Fatalf("running instance = %+v", r)
	}
}

func TestGroupByIndexPrefersTheActiveDefinition(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("a", 2))
	addDefinition(t, s, "a", "v2")
	exec(t, s, `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state, since, modification_epoch)
VALUES ('a', 'v2', 0, 'cf-apps', 'UNCLAIMED', 1, 'e')`)
	exec(t, s, `UPDATE desired_lrps SET active_definition_id = 'v2', previous_definition_id = 'a' WHERE process_guid = 'a'`)

	g, err := s.ActualLRPGroupByProcessGUIDAndIndex(ctx, "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if g.Instance == nil || g.Instance.DefinitionID != "v2" {
		t.Fatalf("group at 0 = %+v, want the active definition v2", g.Instance)
	}
	// The rollout has not reached index 1: the old definition's instance is what runs there.
	g, err = s.ActualLRPGroupByProcessGUIDAndIndex(ctx, "a", 1)
	if err != nil {
		t.Fatal(err)
	}
	if g.Instance == nil || g.Instance.DefinitionID != "a" {
		t.Fatalf("group at 1 = %+v, want definition a", g.Instance)
	}
	_, err = s.ActualLRPGroupByProcessGUIDAndIndex(ctx, "a", 7)
	wantType(t, err, model.ErrResourceNotFound)
}

func TestRetireActualLRP(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("a", 3))
	makeRunning(t, s, "a", "a", 1)
	addDefinition(t, s, "a", "v2")
	exec(t, s, `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state, since, modification_epoch)
VALUES ('a', 'v2', 2, 'cf-apps', 'UNCLAIMED', 1, 'e')`)

	t.Run("an unclaimed instance is deleted", func(t *testing.T) {
		stop, err := s.RetireActualLRP(ctx, model.ActualLRPKey{ProcessGUID: "a", Index: 0, Domain: "cf-apps"})
		if err != nil || stop != nil {
			t.Fatalf("retire = %v, %v", stop, err)
		}
		if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE process_guid = 'a' AND instance_index = 0`); n != 0 {
			t.Fatalf("index 0 still has %d rows", n)
		}
	})
	t.Run("a running instance is handed to its cell", func(t *testing.T) {
		stop, err := s.RetireActualLRP(ctx, model.ActualLRPKey{ProcessGUID: "a", Index: 1})
		if err != nil || stop == nil || stop.CellID != "cell-1" {
			t.Fatalf("retire = %+v, %v", stop, err)
		}
		if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE process_guid = 'a' AND instance_index = 1`); n != 1 {
			t.Fatalf("the running instance's record went before its cell stopped it")
		}
	})
	t.Run("the active definition wins when ambiguous", func(t *testing.T) {
		if _, err := s.RetireActualLRP(ctx, model.ActualLRPKey{ProcessGUID: "a", Index: 2}); err != nil {
			t.Fatal(err)
		}
		if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE process_guid = 'a' AND instance_index = 2 AND definition_id = 'v2'`); n != 1 {
			t.Fatalf("the other definition's instance was retired instead of the active one's")
		}
		if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE process_guid = 'a' AND instance_index = 2`); n != 1 {
			t.Fatalf("the active definition's instance was not retired")
		}
	})
	t.Run("two definitions at an index, neither active, are ambiguous", func(t *testing.T) {
		addDefinition(t, s, "a", "v3")
		exec(t, s, `UPDATE desired_lrps SET active_definition_id = 'v3' WHERE process_guid = 'a'`)
		exec(t, s, `INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state, since, modification_epoch)
VALUES ('a', 'a', 2, 'cf-apps', 'CRASHED', 1, 'e')`)
		_, err := s.RetireActualLRP(ctx, model.ActualLRPKey{ProcessGUID: "a", Index: 2})
		wantType(t, err, model.ErrInvalidRequest)
	})
	t.Run("the named definition is retired", func(t *testing.T) {
		if _, err := s.RetireActualLRP(ctx, model.ActualLRPKey{ProcessGUID: "a", Index: 2, DefinitionID: "v2"}); err != nil {
			t.Fatal(err)
		}
		if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE process_guid = 'a' AND instance_index = 2 AND definition_id = 'a'`); n != 1 {
			t.Fatalf("index 2 lost definition a's instance")
		}
		if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE process_guid = 'a' AND instance_index = 2`); n != 1 {
			t.Fatalf("definition v2's instance at index 2 was not retired")
		}
	})
	t.Run("unknown instance or wrong domain", func(t *testing.T) {
		_, err := s.RetireActualLRP(ctx, model.ActualLRPKey{ProcessGUID: "a", Index: 9})
		wantType(t, err, model.ErrResourceNotFound)
		_, err = s.RetireActualLRP(ctx, model.ActualLRPKey{ProcessGUID: "a", Index: 1, Domain: "elsewhere"})
		wantType(t, err, model.ErrResourceNotFound)
	})
}
