package db_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/updatable-lrps/bbs/internal/dbtest"
	"github.com/updatable-lrps/bbs/model"
)

func TestDesireLRPRoundTripsEveryField(t *testing.T) {
	s := dbtest.NewStore(t)
	in := newLRP("app", 3)
	in.MetricTags = map[string]json.RawMessage{"source_id": []byte(`{"static":"x"}`)}
	in.Setup = &model.Action{Serial: &model.SerialAction{Actions: []*model.Action{
		{Download: &model.DownloadAction{From: "http://x/y.tgz", To: "/app"}},
		{Try: &model.TryAction{Action: &model.Action{Run: &model.RunAction{Path: "/bin/true"}}}},
	}}}
	in.Monitor = &model.Action{Timeout: &model.TimeoutAction{TimeoutMs: 1000,
		Action: &model.Action{Run: &model.RunAction{Path: "/bin/nc", Args: []string{"-z", "localhost", "8080"}}}}}
	in.CheckDefinition = &model.CheckDefinition{Checks: []model.Check{{HTTPCheck: &model.HTTPCheck{Port: 8080, Path: "/health"}}}}
	in.StartTimeoutMs = 60000
	in.CPUWeight = 50
	in.Privileged = true
	in.LogSource, in.LogGUID, in.MetricsGUID = "APP", "log-guid", "metrics-guid"
	in.EgressRules = json.RawMessage(`[{"protocol":"tcp","destinations":["0.0.0.0/0"]}]`)
	in.CachedDependencies = json.RawMessage(`[{"from":"http://a","to":"/b"}]`)
	in.VolumeMounts = json.RawMessage(`[]`)
	in.Network = json.RawMessage(`{"properties":{"a":"b"}}`)
	in.PlacementTags = []string{"gpu"}

	created := desire(t, s, in)
	if created.DefinitionID != "app" {
		t.Fatalf("definition id = %q, want the process guid (promotion)", created.DefinitionID)
	}
	got, err := s.DesiredLRPByProcessGUID(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	want := *in
	want.DefinitionID = "app"
	want.ModificationTag = created.ModificationTag
	// Run info is JSONB, which keeps values but not the key order inside opaque objects
	// (JSON objects are unordered), so compare as JSON values.
	if g, w := jsonValue(t, got), jsonValue(t, &want); !reflect.DeepEqual(g, w) {
		t.Fatalf("round trip differs:\n got %v\nwant %v", g, w)
	}
	if created.ModificationTag.Epoch == "" || created.ModificationTag.Index != 0 {
		t.Fatalf("modification tag = %+v", created.ModificationTag)
	}

	lrps, err := s.ActualLRPs(ctx, model.ActualLRPFilter{ProcessGUID: "app"})
	if err != nil {
		t.Fatal(err)
	}
	if len(lrps) != 3 {
		t.Fatalf("instances = %d, want 3", len(lrps))
	}
	for i, a := range lrps {
		if a.Index != int32(i) || a.State != model.StateUnclaimed || a.DefinitionID != "app" ||
			a.Domain != "cf-apps" || a.Presence != model.PresenceOrdinary || a.Since == 0 || a.ModificationTag.Epoch == "" {
			t.Fatalf("instance %d = %+v", i, a)
		}
	}
}

func TestDesireLRPConflictsAndAtomicity(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 2))
	_, err := s.DesireLRP(ctx, newLRP("app", 5))
	wantType(t, err, model.ErrResourceExists)

	// A row the database refuses half-way (a negative memory limit that skipped validation)
	// must leave nothing behind.
	bad := newLRP("half", 4)
	bad.MemoryMB = -1
	if _, err := s.DesireLRP(ctx, bad); err == nil {
		t.Fatal("negative memory accepted by the database")
	}
	for table, want := range map[string]int{"desired_lrps": 1, "lrp_definitions": 1, "actual_lrps": 2} {
		if n := count(t, s, `SELECT count(*) FROM `+table); n != want {
			t.Errorf("%s has %d rows, want %d", table, n, want)
		}
	}
}

func TestListsFilterByDomainAndGUIDs(t *testing.T) {
	s := dbtest.NewStore(t)
	for _, g := range []string{"c", "a", "b"} {
		desire(t, s, newLRP(g, 1))
	}
	other := newLRP("d", 1)
	other.Domain = "other"
	desire(t, s, other)

	cases := []struct {
		name   string
		filter model.DesiredLRPFilter
		want   []string
	}{
		{"all, ordered", model.DesiredLRPFilter{}, []string{"a", "b", "c", "d"}},
		{"domain", model.DesiredLRPFilter{Domain: "other"}, []string{"d"}},
		{"guids", model.DesiredLRPFilter{ProcessGUIDs: []string{"b", "d", "zz"}}, []string{"b", "d"}},
		{"both", model.DesiredLRPFilter{Domain: "cf-apps", ProcessGUIDs: []string{"b", "d"}}, []string{"b"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lrps, err := s.DesiredLRPs(ctx, c.filter)
			if err != nil {
				t.Fatal(err)
			}
			infos, err := s.DesiredLRPSchedulingInfos(ctx, c.filter)
			if err != nil {
				t.Fatal(err)
			}
			deps, err := s.LRPDeployments(ctx, c.filter)
			if err != nil {
				t.Fatal(err)
			}
			var got, gotInfos, gotDeps []string
			for _, l := range lrps {
				got = append(got, l.ProcessGUID)
			}
			for _, i := range infos {
				gotInfos = append(gotInfos, i.ProcessGUID)
				if i.MemoryMB != 128 || i.DiskMB != 256 || i.RootFS == "" || i.DefinitionID != i.ProcessGUID || i.Instances != 1 {
					t.Errorf("scheduling info = %+v", i)
				}
			}
			for _, d := range deps {
				gotDeps = append(gotDeps, d.ProcessGUID)
			}
			for what, g := range map[string][]string{"desired": got, "scheduling": gotInfos, "deployments": gotDeps} {
				if !reflect.DeepEqual(g, c.want) {
					t.Errorf("%s = %v, want %v", what, g, c.want)
				}
			}
		})
	}
}

func TestUpdateScalesAndBumpsTag(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 2))
	five, two := int32(5), int32(2)
	ann := "v2"
	routes := model.Routes{"other": []byte(`"x"`)}

	res, err := s.UpdateDesiredLRP(ctx, "app", &model.DesiredLRPUpdate{Instances: &five, Annotation: &ann, Routes: &routes})
	if err != nil {
		t.Fatal(err)
	}
	if res.Before.Instances != 2 || res.After.Instances != 5 || res.After.Annotation != "v2" ||
		res.After.ModificationTag.Index != 1 || string(res.After.Routes["other"]) != `"x"` || len(res.After.Routes) != 1 {
		t.Fatalf("update result: before %+v after %+v", res.Before, res.After)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE state = 'UNCLAIMED'`); n != 5 {
		t.Fatalf("instances after scale up = %d, want 5", n)
	}

	makeRunning(t, s, "app", "app", 3)
	res, err = s.UpdateDesiredLRP(ctx, "app", &model.DesiredLRPUpdate{Instances: &two})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.ToStop) != 1 || res.ToStop[0].Index != 3 || res.ToStop[0].CellID != "cell-1" {
		t.Fatalf("to stop = %+v, want the RUNNING index 3", res.ToStop)
	}
	// Indices 2 and 4 (UNCLAIMED) are gone; index 3 stays until its cell stops it.
	if n := count(t, s, `SELECT count(*) FROM actual_lrps`); n != 3 {
		t.Fatalf("instances after scale down = %d, want 3", n)
	}
	if res.After.ModificationTag.Index != 2 {
		t.Fatalf("tag index = %d, want 2", res.After.ModificationTag.Index)
	}

	_, err = s.UpdateDesiredLRP(ctx, "missing", &model.DesiredLRPUpdate{Instances: &two})
	wantType(t, err, model.ErrResourceNotFound)
}

func TestScaleUpUsesTheHealthyDefinition(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 1))
	addDefinition(t, s, "app", "v2")
	// A rollout to v2 in which v2 has not yet proven itself: new instances use the healthy one.
	exec(t, s, `UPDATE desired_lrps SET active_definition_id = 'v2', previous_definition_id = 'app',
        healthy_definition_id = 'app' WHERE process_guid = 'app'`)
	three := int32(3)
	if _, err := s.UpdateDesiredLRP(ctx, "app", &model.DesiredLRPUpdate{Instances: &three}); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE definition_id = 'app'`); n != 3 {
		t.Fatalf("instances of the healthy definition = %d, want 3", n)
	}
}

func TestRemoveDesiredLRP(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 3))
	desire(t, s, newLRP("keep", 1))
	makeRunning(t, s, "app", "app", 1)
	exec(t, s, `INSERT INTO rollouts (id, process_guid, kind, from_definition_id, to_definition_id, state, instances, workflow_id)
VALUES (gen_random_uuid(), 'app', 'update', 'app', 'app', 'active', 3, 'rollout:app')`)

	res, err := s.RemoveDesiredLRP(ctx, "app")
	if err != nil {
		t.Fatal(err)
	}
	if res.Removed.ProcessGUID != "app" || len(res.ToStop) != 1 || res.ToStop[0].Index != 1 {
		t.Fatalf("remove result = %+v", res)
	}
	for q, want := range map[string]int{
		`SELECT count(*) FROM desired_lrps WHERE process_guid = 'app'`:                  0,
		`SELECT count(*) FROM lrp_definitions WHERE process_guid = 'app'`:               0,
		`SELECT count(*) FROM actual_lrps WHERE process_guid = 'app'`:                   1,
		`SELECT count(*) FROM rollouts WHERE process_guid = 'app' AND state = 'failed'`: 1,
		`SELECT count(*) FROM actual_lrps WHERE process_guid = 'keep'`:                  1,
	} {
		if n := count(t, s, q); n != want {
			t.Errorf("%s = %d, want %d", q, n, want)
		}
	}
	_, err = s.RemoveDesiredLRP(ctx, "app")
	wantType(t, err, model.ErrResourceNotFound)
}

func jsonValue(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDesireAfterRemoveDoesNotWaitForRetiringInstances: the instances of a removed LRP are
// retiring while their cells stop them; desiring the LRP again with another definition
// creates its instances at once, beside them (with the same definition the slots are still
// taken, and convergence fills them once the old instances are gone).
func TestDesireAfterRemoveDoesNotWaitForRetiringInstances(t *testing.T) {
	s := dbtest.NewStore(t)
	desire(t, s, newLRP("app", 2))
	makeRunning(t, s, "app", "app", 0)
	makeRunning(t, s, "app", "app", 1)
	if _, err := s.RemoveDesiredLRP(ctx, "app"); err != nil {
		t.Fatal(err)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE process_guid = 'app' AND retiring`); n != 2 {
		t.Fatalf("%d retiring instances after the remove, want 2", n)
	}
	again := newLRP("app", 2)
	again.DefinitionID = "app-v2"
	desire(t, s, again)
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE process_guid = 'app' AND definition_id = 'app-v2' AND state = 'UNCLAIMED'`); n != 2 {
		t.Fatalf("%d new instances, want 2 created at once", n)
	}
	if n := count(t, s, `SELECT count(*) FROM actual_lrps WHERE process_guid = 'app' AND definition_id = 'app' AND retiring`); n != 2 {
		t.Fatalf("%d old instances still retiring, want 2 (their cells stop them)", n)
	}
}
