package api_test

import (
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/updatable-lrps/bbs/model"
)

// actualKey names an instance in test expectations: process guid, definition id and index.
type actualKey struct {
	guid, def string
	index     int64
}

func keysOf(t *testing.T, l []obj) []actualKey {
	t.Helper()
	out := []actualKey{}
	for _, a := range l {
		out = append(out, actualKey{a.str(t, "process_guid"), a.str(t, "definition_id"), a.integer(t, "index")})
	}
	return out
}

func TestListActualLRPs(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.desire(lrp("a", "x", 2, nil))
	h.desire(lrp("b", "y", 3, obj{"definition_id": "b-v1"}))
	h.makeRunning("a", "a", 0, "cell-1")
	h.makeRunning("b", "b-v1", 2, "cell-2")

	a0, a1 := actualKey{"a", "a", 0}, actualKey{"a", "a", 1}
	b0, b1, b2 := actualKey{"b", "b-v1", 0}, actualKey{"b", "b-v1", 1}, actualKey{"b", "b-v1", 2}
	for _, c := range []struct {
		name   string
		filter obj
		want   []actualKey
	}{
		{"all", obj{}, []actualKey{a0, a1, b0, b1, b2}},
		{"domain", obj{"domain": "x"}, []actualKey{a0, a1}},
		{"process_guid", obj{"process_guid": "b"}, []actualKey{b0, b1, b2}},
		{"process_guid and index", obj{"process_guid": "b", "index": 2}, []actualKey{b2}},
		{"index 0", obj{"process_guid": "a", "index": 0}, []actualKey{a0}},
		{"definition_id", obj{"definition_id": "b-v1"}, []actualKey{b0, b1, b2}},
		{"promoted definition_id", obj{"definition_id": "a"}, []actualKey{a0, a1}},
		{"cell_id", obj{"cell_id": "cell-1"}, []actualKey{a0}},
		{"cell_id and domain", obj{"cell_id": "cell-2", "domain": "y"}, []actualKey{b2}},
		{"no match", obj{"cell_id": "cell-2", "domain": "x"}, []actualKey{}},
		{"unknown process", obj{"process_guid": "nope"}, []actualKey{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := h.actuals(c.filter)
			if k := keysOf(t, got); !reflect.DeepEqual(k, c.want) {
				t.Errorf("actual_lrps = %v, want %v", k, c.want)
			}
			for _, a := range got {
				requireKeys(t, "actual_lrp", a, actualLRPRequired, actualLRPAllowed)
			}
		})
	}
	t.Run("a running instance names its cell", func(t *testing.T) {
		got := h.actuals(obj{"cell_id": "cell-1"})[0]
		if got.str(t, "state") != model.StateRunning || got.str(t, "cell_id") != "cell-1" || got.str(t, "instance_guid") == "" ||
			got.str(t, "address") != "10.0.0.1" {
			t.Errorf("instance = %v", got)
		}
	})
	t.Run("invalid filters", func(t *testing.T) {
		for _, f := range []obj{
			{"index": 0},
			{"process_guid": "a", "index": -1},
		} {
			requireError(t, h.postJSON("/v1/actual_lrps/list", f), http.StatusBadRequest, model.ErrInvalidRequest)
		}
	})
}

func TestActualLRPGroups(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.desire(lrp("a", "x", 2, nil))
	h.desire(lrp("b", "y", 1, nil))
	h.makeRunning("a", "a", 0, "cell-1")
	// An instance of an older definition still serves index 0 of a, and index 1 of a is
	// evacuating from cell-2 while its replacement is UNCLAIMED.
	h.exec(`INSERT INTO actual_lrps (process_guid, definition_id, instance_index, presence, domain, state, since,
    modification_epoch, cell_id, instance_guid)
VALUES ('a', 'a-old', 0, 'ORDINARY', 'x', 'RUNNING', 1, 'e1', 'cell-3', 'ig-old'),
       ('a', 'a', 1, 'EVACUATING', 'x', 'RUNNING', 1, 'e2', 'cell-2', 'ig-evac')`)

	groupKey := func(t *testing.T, g obj) actualKey {
		t.Helper()
		requireKeys(t, "actual_lrp_group", g, nil, []string{"instance", "evacuating"})
		if len(g) == 0 {
			t.Fatalf("empty group")
		}
		for _, k := range []string{"instance", "evacuating"} {
			if a, ok := g[k]; ok {
				o := obj(a.(map[string]any))
				requireKeys(t, "actual_lrp", o, actualLRPRequired, actualLRPAllowed)
				return actualKey{o.str(t, "process_guid"), o.str(t, "definition_id"), o.integer(t, "index")}
			}
		}
		return actualKey{}
	}
	groupKeys := func(t *testing.T, groups []obj) []actualKey {
		t.Helper()
		out := []actualKey{}
		for _, g := range groups {
			out = append(out, groupKey(t, g))
		}
		return out
	}

	t.Run("list", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			filter obj
			want   []actualKey
		}{
			{"all", obj{}, []actualKey{{"a", "a", 0}, {"a", "a-old", 0}, {"a", "a", 1}, {"b", "b", 0}}},
			{"domain", obj{"domain": "y"}, []actualKey{{"b", "b", 0}}},
			{"cell", obj{"cell_id": "cell-3"}, []actualKey{{"a", "a-old", 0}}},
			{"none", obj{"domain": "nope"}, []actualKey{}},
		} {
			t.Run(c.name, func(t *testing.T) {
				got := h.ok("/v1/actual_lrp_groups/list", c.filter).list(t, "actual_lrp_groups")
				if k := groupKeys(t, got); !reflect.DeepEqual(k, c.want) {
					t.Errorf("groups = %v, want %v", k, c.want)
				}
			})
		}
	})
	t.Run("list by process guid", func(t *testing.T) {
		groups := h.ok("/v1/actual_lrp_groups/list_by_process_guid", obj{"process_guid": "a"}).list(t, "actual_lrp_groups")
		if k := groupKeys(t, groups); !reflect.DeepEqual(k, []actualKey{{"a", "a", 0}, {"a", "a-old", 0}, {"a", "a", 1}}) {
			t.Fatalf("groups = %v: want one per (process_guid, definition_id, index)", k)
		}
		evac := groups[2]
		if _, ok := evac["instance"]; !ok {
			t.Errorf("group a/1 has no instance: %v", evac)
		}
		if e, ok := evac["evacuating"].(map[string]any); !ok || e["presence"] != model.PresenceEvacuating || e["cell_id"] != "cell-2" {
			t.Errorf("group a/1 evacuating = %v", evac["evacuating"])
		}
		if _, ok := groups[0]["evacuating"]; ok {
			t.Errorf("group a/0 has an evacuating instance: %v", groups[0])
		}
		if got := h.ok("/v1/actual_lrp_groups/list_by_process_guid", obj{"process_guid": "nope"}).list(t, "actual_lrp_groups"); len(got) != 0 {
			t.Errorf("groups of an unknown LRP = %v", got)
		}
	})
	t.Run("get by process guid and index", func(t *testing.T) {
		g := h.ok("/v1/actual_lrp_groups/get_by_process_guid_and_index", obj{"process_guid": "a", "index": 0}).obj(t, "actual_lrp_group")
		if k := groupKey(t, g); k != (actualKey{"a", "a", 0}) {
			t.Errorf("group = %v, want the active definition's", k)
		}
		if g.obj(t, "instance").str(t, "state") != model.StateRunning {
			t.Errorf("instance = %v", g["instance"])
		}
		g = h.ok("/v1/actual_lrp_groups/get_by_process_guid_and_index", obj{"process_guid": "a", "index": 1}).obj(t, "actual_lrp_group")
		if g.obj(t, "instance").str(t, "state") != model.StateUnclaimed || g.obj(t, "evacuating").str(t, "instance_guid") != "ig-evac" {
			t.Errorf("group a/1 = %v", g)
		}
		for _, body := range []obj{{"process_guid": "a"}, {"process_guid": "a", "index": -1}} {
			requireError(t, h.postJSON("/v1/actual_lrp_groups/get_by_process_guid_and_index", body), http.StatusBadRequest, model.ErrInvalidRequest)
		}
	})
}

func TestRetireActualLRP(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	h.desire(lrp("r", "d", 3, nil))
	retire := func(t *testing.T, key obj) {
		t.Helper()
		rec := h.postJSON("/v1/actual_lrps/retire", obj{"actual_lrp_key": key})
		if rec.Code != http.StatusOK || strings.TrimSpace(rec.Body.String()) != "{}" {
			t.Fatalf("retire %v: %d %s, want 200 {}", key, rec.Code, rec.Body)
		}
	}

	t.Run("unclaimed is deleted", func(t *testing.T) {
		retire(t, obj{"process_guid": "r", "index": 0, "domain": "d"})
		if got := indicesOf(t, h.actuals(obj{"process_guid": "r"})); !reflect.DeepEqual(got, []int64{1, 2}) {
			t.Errorf("indices = %v, want 1, 2", got)
		}
		if s := h.stopper.Stopped(); len(s) != 0 {
			t.Errorf("stopped %v, want nothing", s)
		}
		// Retiring does not change the desired state.
		if n := h.ok("/v1/desired_lrps/get_by_process_guid", obj{"process_guid": "r"}).obj(t, "desired_lrp").integer(t, "instances"); n != 3 {
			t.Errorf("instances = %d, want 3", n)
		}
		requireError(t, h.postJSON("/v1/actual_lrps/retire", obj{"actual_lrp_key": obj{"process_guid": "r", "index": 0, "domain": "d"}}),
			http.StatusNotFound, model.ErrResourceNotFound)
	})
	t.Run("running is stopped", func(t *testing.T) {
		h.makeRunning("r", "r", 1, "cell-1")
		retire(t, obj{"process_guid": "r", "index": 1, "domain": "d"})
		s := h.stopper.Stopped()
		if len(s) != 1 || s[0].ProcessGUID != "r" || s[0].Index != 1 || s[0].CellID != "cell-1" || s[0].InstanceGUID == "" ||
			s[0].DefinitionID != "r" || s[0].State != model.StateRunning {
			t.Fatalf("stopped %+v, want r/1 on cell-1", s)
		}
		// The record stays until the cell reports the stop.
		if got := h.actuals(obj{"process_guid": "r", "index": 1}); len(got) != 1 || got[0].str(t, "state") != model.StateRunning {
			t.Errorf("instance 1 = %v, want it still RUNNING", got)
		}
	})
	t.Run("claimed is stopped", func(t *testing.T) {
		h.exec(`UPDATE actual_lrps SET state = 'CLAIMED', cell_id = 'cell-2', instance_guid = 'ig-2'
WHERE process_guid = 'r' AND instance_index = 2`)
		retire(t, obj{"process_guid": "r", "index": 2, "domain": "d"})
		s := h.stopper.Stopped()
		if len(s) != 2 || s[1].Index != 2 || s[1].CellID != "cell-2" || s[1].State != model.StateClaimed {
			t.Errorf("stopped %+v, want r/2 on cell-2 last", s)
		}
	})
	t.Run("crashed is deleted", func(t *testing.T) {
		h.desire(lrp("c", "d", 1, nil))
		h.exec(`UPDATE actual_lrps SET state = 'CRASHED', crash_count = 3, crash_reason = 'boom' WHERE process_guid = 'c'`)
		retire(t, obj{"process_guid": "c", "index": 0, "domain": "d"})
		if n := len(h.actuals(obj{"process_guid": "c"})); n != 0 {
			t.Errorf("%d instances left", n)
		}
	})
	t.Run("the active definition's when ambiguous", func(t *testing.T) {
		h.desire(lrp("amb", "d", 1, nil))
		h.exec(`INSERT INTO actual_lrps (process_guid, definition_id, instance_index, domain, state, since, modification_epoch)
VALUES ('amb', 'amb-old', 0, 'd', 'UNCLAIMED', 1, 'e')`)
		retire(t, obj{"process_guid": "amb", "index": 0, "domain": "d"})
		if got := keysOf(t, h.actuals(obj{"process_guid": "amb"})); !reflect.DeepEqual(got, []actualKey{{"amb", "amb-old", 0}}) {
			t.Errorf("left %v, want the old definition's instance", got)
		}
		retire(t, obj{"process_guid": "amb", "index": 0, "domain": "d", "definition_id": "amb-old"})
		if n := len(h.actuals(obj{"process_guid": "amb"})); n != 0 {
			t.Errorf("%d instances left", n)
		}
	})
	t.Run("another domain is not found", func(t *testing.T) {
		requireError(t, h.postJSON("/v1/actual_lrps/retire", obj{"actual_lrp_key": obj{"process_guid": "r", "index": 1, "domain": "other"}}),
			http.StatusNotFound, model.ErrResourceNotFound)
	})
	t.Run("invalid keys", func(t *testing.T) {
		for _, body := range []obj{
			{},
			{"actual_lrp_key": nil},
			{"actual_lrp_key": obj{}},
			{"actual_lrp_key": obj{"process_guid": "r", "domain": "d"}},
			{"actual_lrp_key": obj{"process_guid": "r", "index": -1, "domain": "d"}},
			{"actual_lrp_key": obj{"index": 0, "domain": "d"}},
		} {
			requireError(t, h.postJSON("/v1/actual_lrps/retire", body), http.StatusBadRequest, model.ErrInvalidRequest)
		}
	})
}
